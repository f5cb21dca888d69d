import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, within } from '../support/eventually.js';

/**
 * The service as `npm start` runs it: its own process, configured only through the environment. No
 * DISCORD_TOKEN means demo mode, driven by the built-in simulated Discord.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Demo user Nova, who listens to Spotify. */
const NOVA = '94490510688792576';
/** The contract: answers within 10 s of starting; exits within 10 s of SIGTERM (docs/operations.md). */
const START_MS = 10_000;
const STOP_MS = 10_000;

interface Service {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let running: ChildProcess | undefined;

afterEach(() => {
  if (running && running.exitCode === null && running.signalCode === null) running.kill('SIGKILL');
  running = undefined;
});

/** A port nothing listens on: the kernel picks it, we let it go and hand it to the service. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** `node --import tsx src/main.ts` with this environment only (and PATH, to find nothing else). */
function startService(env: Record<string, string>): Service {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running = child;
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Resolves with the exit; fails if the process is still running after `ms`. */
function exitWithin(service: Service, ms: number) {
  return within(service.exited, ms, () => `the process exiting:\n${service.stdout()}${service.stderr()}`);
}

describe('npm start', () => {
  it('without DISCORD_TOKEN runs the demo, serves its users, prints a working API key, and exits 0 on SIGTERM', {
    timeout: 30_000,
  }, async () => {
    const port = await freePort();
    const service = startService({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: String(port) });
    const log = () => `\nstdout:\n${service.stdout()}\nstderr:\n${service.stderr()}`;

    // A process of its own tells nothing when it listens: asked until it answers (or exits).
    let presence: { status: number; body: unknown } | undefined;
    await eventually(
      async () => {
        expect(service.child.exitCode, log()).toBeNull();
        const response = await fetch(`http://127.0.0.1:${port}/v1/users/${NOVA}`);
        presence = { status: response.status, body: await response.json() };
        expect(presence.status).toBe(200);
      },
      START_MS,
      100,
    );
    expect(presence?.status, log()).toBe(200);
    expect(presence?.body).toMatchObject({
      success: true,
      data: {
        discord_user: { id: NOVA, username: 'nova', global_name: 'Nova' },
        discord_status: 'online',
        listening_to_spotify: true,
        now_playing: { source: 'spotify' },
      },
    });
    expect(`${service.stdout()}${service.stderr()}`).toMatch(/demo mode/i);
    // One line hands over an API key of Nova's, and it writes Nova's KV.
    const keyLines = service
      .stdout()
      .split('\n')
      .filter((line) => line.includes('API key of Nova'));
    expect(keyLines, log()).toHaveLength(1);
    const key = /prs_[\w-]{43}/.exec(keyLines[0] ?? '')?.[0] ?? '';
    const written = await fetch(`http://127.0.0.1:${port}/v1/users/@me/kv`, {
      method: 'PATCH',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ mood: 'sleepy' }),
    });
    expect(written.status, log()).toBe(204);
    // One line says the start-up is over, with what was loaded.
    await eventually(() => expect(service.stdout()).toMatch(/every guild loaded/));
    const summary = service
      .stdout()
      .split('\n')
      .find((line) => line.includes('every guild loaded'));
    expect(summary).toMatch(/"monitoredUsers":[1-9]/);

    service.child.kill('SIGTERM');
    const exit = await exitWithin(service, STOP_MS);
    expect(exit, log()).toEqual({ code: 0, signal: null });
  });

  it('with PORT=abc exits 2 with one line on stderr naming PORT', async () => {
    const service = startService({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: 'abc' });
    const exit = await exitWithin(service, START_MS);
    expect(exit).toEqual({ code: 2, signal: null });
    const lines = service.stderr().split('\n');
    expect(lines.at(-1)).toBe(''); // the line is ended
    expect(lines.slice(0, -1)).toEqual([expect.stringMatching(/^presently: invalid configuration: PORT\b/)]);
    expect(service.stdout()).toBe('');
  });
});
