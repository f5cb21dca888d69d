import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export interface NodeProcess {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything the process wrote, for the failure message of a test. */
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL if it is still there after `graceMs`. */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * Runs the service (src/main.ts) as its own process, the way `npm start` does, with only the environment
 * given (plus PATH); resolves once it answers HTTP.
 */
export async function startNodeProcess(
  name: string,
  env: Record<string, string>,
  options: { port?: number; readyTimeoutMs?: number } = {},
): Promise<NodeProcess> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      // Tests poll; the limits have tests of their own.
      RATE_LIMIT_READ: '0',
      RATE_LIMIT_WRITE: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = outputOf(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const node: NodeProcess = {
    name,
    port,
    url,
    child,
    output,
    exited,
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 15_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output()}`);
    try {
      const response = await fetch(`${url}/v1/version`);
      if (response.ok) return node;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await node.stop(0);
      throw new Error(`${name} did not answer within the time:\n${output()}`);
    }
    // A poll, not a sleep: the child says nothing when it listens (LOG_LEVEL warn), so it is asked again.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs node with `args` (after `--import tsx`) from the repository's root until it exits on its own. */
export async function runToExit(
  args: string[],
  timeoutMs = 15_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = outputOf(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return { code, signal, output: output() };
}

/** Everything `child` writes to stdout and stderr, as it is so far. */
export function outputOf(child: ChildProcess): () => string {
  let output = '';
  const add = (chunk: Buffer): void => {
    output += chunk.toString();
  };
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => output;
}
