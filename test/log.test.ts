import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';

/**
 * The logger as `npm start` makes it (createLogger with the level only): JSON lines when the output is
 * collected, readable lines when a person watches a terminal. The terminal is a real pseudo-terminal,
 * from util-linux's `script`.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const PROBE = [
  "import { createLogger } from './src/log.ts';",
  "createLogger('info').info({ guildId: '600000000000000001', members: 5000 }, 'guild members loaded');",
].join(' ');
/** An ANSI colour escape: ESC [ n m. */
const COLOUR = new RegExp(`${String.fromCharCode(27)}\\[\\d+m`, 'g');
const NODE_ARGS = ['--import', 'tsx', '--input-type=module', '-e', PROBE];

describe('createLogger', () => {
  it('writes one JSON object per line when stdout is not a terminal', async () => {
    const { stdout } = await run(process.execPath, NODE_ARGS, { cwd: ROOT });
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      level: 30,
      msg: 'guild members loaded',
      guildId: '600000000000000001',
      members: 5000,
      time: expect.any(Number),
    });
  });

  it.skipIf(!existsSync('/usr/bin/script'))('writes readable, coloured lines in a terminal', async () => {
    const command = [process.execPath, ...NODE_ARGS]
      .map((arg) => `'${arg.replaceAll("'", "'\\''")}'`)
      .join(' ');
    const { stdout } = await run('/usr/bin/script', ['-qec', command, '/dev/null'], { cwd: ROOT });
    const text = stdout.replaceAll('\r', '');
    expect(text).not.toMatch(/^\{/m);
    // pino-pretty: "[HH:MM:ss] INFO (pid): message", then the fields indented, colours on.
    expect(text.replace(COLOUR, '')).toMatch(
      /^\[\d\d:\d\d:\d\d\] INFO \(\d+\): guild members loaded\n {4}guildId: "600000000000000001"\n {4}members: 5000$/m,
    );
    expect(text).toMatch(COLOUR);
  });

  it('never shows the password of a URL an error carries', () => {
    const lines: string[] = [];
    const logger = createLogger('info', false, { write: (line: string) => void lines.push(line) });
    // What Discord's REST client throws: the URL it failed on, from DISCORD_API_URL.
    const refused = Object.assign(new Error('Internal Server Error'), {
      url: 'https://bot:hunter2@proxy.internal/api/v10/users/1',
    });
    // What ioredis reports when Redis refuses the password in REDIS_URL: the AUTH command, arguments too.
    const wrongPass = Object.assign(new Error('WRONGPASS invalid username-password pair'), {
      command: { name: 'auth', args: ['presently', 'hunter2'] },
    });
    logger.warn({ err: refused }, 'request failed');
    logger.warn({ err: wrongPass }, 'Redis connection error; retrying');
    const [first, second] = lines.map((line) => JSON.parse(line));
    expect(first.err.url).toBe('https://bot:***@proxy.internal/api/v10/users/1');
    expect(second.err.command).toEqual({ name: 'auth', args: '[redacted]' });
    expect(lines.join('')).not.toContain('hunter2');
  });

  it("never shows a read token a request's URL carries", () => {
    const lines: string[] = [];
    const logger = createLogger('info', false, { write: (line: string) => void lines.push(line) });
    const token = `prt_${'x'.repeat(43)}`;
    // What Fastify hands its logger when it logs a request, and an error about a URL with one.
    logger.info(
      { req: { method: 'GET', url: `/v1/users/1/card.svg?token=${token}`, headers: {}, ip: '203.0.113.9' } },
      'incoming request',
    );
    logger.warn(
      { err: Object.assign(new Error('failed'), { url: `https://h.example/?token=${token}` }) },
      'x',
    );
    const [request, failure] = lines.map((line) => JSON.parse(line));
    expect(request.req).toEqual({
      method: 'GET',
      url: '/v1/users/1/card.svg?token=***',
      remoteAddress: '203.0.113.9',
    });
    expect(failure.err.url).toBe('https://h.example/?token=***');
    expect(lines.join('')).not.toContain(token);
  });
});
