import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UNHANDLED_EXIT_CODE } from '../../src/ops/process-guards.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `failure` in a process guarded as main.ts guards the service; its exit code and log lines. */
async function guarded(failure: string): Promise<{ code: number | null; lines: Record<string, unknown>[] }> {
  const script = `
    import { createLogger } from './src/log.ts';
    import { installProcessGuards } from './src/ops/process-guards.ts';
    installProcessGuards(createLogger('info', false));
    setImmediate(() => { ${failure} });
    setTimeout(() => console.log('still running'), 5_000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const lines = output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { code, lines };
}

describe('an error that reaches the process', () => {
  it('an uncaught exception is logged once, fatal, with its error and origin, and the process exits non-zero', async () => {
    const { code, lines } = await guarded("throw new Error('boom in a timer')");
    expect(code).toBe(UNHANDLED_EXIT_CODE);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        msg: 'an error reached the process; exiting for a restart',
        origin: 'uncaughtException',
        err: expect.objectContaining({ message: 'boom in a timer' }),
      }),
    ]);
  });

  it('an unhandled rejection likewise', async () => {
    const { code, lines } = await guarded("void Promise.reject(new Error('nobody caught me'))");
    expect(code).toBe(UNHANDLED_EXIT_CODE);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        origin: 'unhandledRejection',
        err: expect.objectContaining({ message: 'nobody caught me' }),
      }),
    ]);
  });
});
