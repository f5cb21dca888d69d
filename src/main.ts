import './ops/tick-shape.js';
import { type App, startApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './log.js';
import { setHeapGrowth } from './ops/heap-growth.js';
import { installProcessGuards } from './ops/process-guards.js';
import { unsupportedRuntime } from './ops/runtime.js';

/** How long shutdown may take before the process exits anyway. */
const SHUTDOWN_DEADLINE_MS = 10_000;

async function main(): Promise<void> {
  const unsupported = unsupportedRuntime(process.versions.node);
  if (unsupported !== undefined) {
    process.stderr.write(`presently: ${unsupported}\n`);
    process.exit(2);
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`presently: invalid configuration: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }

  setHeapGrowth(config.heapGrowingPercent);
  const logger = createLogger(config.logLevel);
  installProcessGuards(logger);
  let app: App | undefined;
  let stopping = false;
  const stop = async (exitCode: number, why: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown took too long; exiting anyway');
      process.exit(exitCode || 1);
    }, SHUTDOWN_DEADLINE_MS).unref();
    await app?.close();
    logger.flush();
    process.exit(exitCode);
  };

  process.once('SIGTERM', () => void stop(0, 'SIGTERM'));
  process.once('SIGINT', () => void stop(0, 'SIGINT'));

  try {
    app = await startApp(config, { logger, onFatal: (code) => void stop(1, `gateway closed with ${code}`) });
  } catch (error) {
    logger.fatal({ err: error }, 'could not start');
    logger.flush();
    process.exit(1);
  }

  const base = publicBase(app.url);
  const lines = [`Presently is listening on ${base}`];
  if (app.demo) {
    const { userId } = app.demo.account;
    lines.push(
      'Demo mode: a simulated Discord drives a few users whose presence changes every few seconds.',
      `  Open ${base}/ in a browser to watch them live, or`,
      `  try: curl ${base}/v1/users/${userId}`,
      `       curl ${base}/v1/version`,
      `       curl -X PATCH ${base}/v1/users/@me/kv -H 'Authorization: <the demo API key above>' \\`,
      `         -H 'content-type: application/json' -d '{"mood":"sleepy"}'`,
      'Set DISCORD_TOKEN to use your own bot (see docs/deployment.md).',
    );
  }
  logger.info(lines.join('\n'));
}

/** 0.0.0.0 is where we listen, not an address to paste into a browser. */
function publicBase(url: string): string {
  return url.replace('://0.0.0.0', '://localhost').replace('://[::]', '://localhost');
}

void main();
