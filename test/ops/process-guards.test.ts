import { describe, expect, it } from 'vitest';
import { UNHANDLED_EXIT_CODE } from '../../src/ops/process-guards.js';
import { runToExit } from '../support/node-process.js';

/** Runs `failure` in a process guarded as main.ts guards the service; its exit code and log lines. */
async function guarded(failure: string): Promise<{ code: number | null; lines: Record<string, unknown>[] }> {
  const script = `
    import { createLogger } from './src/log.ts';
    import { installProcessGuards } from './src/ops/process-guards.ts';
    installProcessGuards(createLogger('info', false));
    setImmediate(() => { ${failure} });
    setTimeout(() => console.log('still running'), 5_000);
  `;
  const { code, output } = await runToExit(['--input-type=module', '-e', script]);
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
