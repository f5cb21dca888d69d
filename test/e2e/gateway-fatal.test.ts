import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { GatewayIntentBits } from 'discord-api-types/v10';
import { describe, expect, it, type TestContext } from 'vitest';
import { DiscordSimulator, type DiscordSimulatorOptions } from '../../src/simulator/index.js';
import { eventually, within } from '../support/eventually.js';
import { freePort, outputOf } from '../support/node-process.js';

/**
 * Closes that reconnecting cannot fix (docs/deployment.md, "Your own bot"): the service as `npm start` runs it, its own
 * process, against a simulated Discord in this one. It must log one plain fatal line saying what is
 * wrong and exit with a non-zero code, never retry in a loop (Discord bans tokens that do).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUILD = '600000000000000001';
const USER = '80351110224678912';
/** Start-up (tsx compiling) plus the fatal close plus shutdown, on a busy 2-core machine. */
const EXIT_MS = 25_000;
/** pino's number for fatal; error is 50. */
const FATAL = 60;
const ERROR = 50;

interface Service {
  child: ChildProcess;
  port: number;
  output(): string;
  /** pino's JSON lines (the logger writes JSON when stdout is not a terminal). */
  logLines(): { level: number; msg: string; [key: string]: unknown }[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * A simulated Discord with one guild, and the service process connected to it, both ended when the test
 * ends. Concurrent tests register that through their own context (a file-wide afterEach would end the
 * others' too).
 */
async function setUp(
  { onTestFinished }: TestContext,
  options: DiscordSimulatorOptions,
  token?: string,
): Promise<{ sim: DiscordSimulator; service: Service }> {
  const sim = new DiscordSimulator({ heartbeatIntervalMs: 1_000, ...options });
  await sim.start();
  onTestFinished(() => sim.stop());
  sim.createGuild({
    id: GUILD,
    name: 'G',
    members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
  });
  const service = await startService(sim, token ?? sim.token);
  onTestFinished(() => {
    if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
  });
  return { sim, service };
}

/** `node --import tsx src/main.ts` connected to the simulator, with this token. */
async function startService(sim: DiscordSimulator, token: string): Promise<Service> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DISCORD_TOKEN: token,
      DISCORD_API_URL: sim.apiUrl,
      DISCORD_CDN_URL: sim.cdnUrl,
      DATABASE_URL: 'sqlite::memory:',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = outputOf(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const logLines = () =>
    output()
      .split('\n')
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as { level: number; msg: string }];
        } catch {
          return [];
        }
      });
  return { child, port, output, logLines, exited };
}

async function exitOf(service: Service): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return within(service.exited, EXIT_MS, () => `the process exiting; its output:\n${service.output()}`);
}

/** Exactly one line at fatal level, none at error: the reason is plain, not buried in noise. */
function expectOneFatalLine(service: Service, reason: RegExp): void {
  const lines = service.logLines();
  const severe = lines.filter((line) => line.level >= ERROR);
  expect(
    severe.map((line) => line.level),
    service.output(),
  ).toEqual([FATAL]);
  expect(severe[0]?.msg).toMatch(reason);
}

describe.concurrent('a gateway close that must not be retried ends the process', () => {
  it('4014 disallowed intents: one fatal line naming the intents, exit 1, one identify', async (context) => {
    const { sim, service } = await setUp(context, {
      // The app has not enabled the Presence intent in the Developer Portal.
      allowedIntents: GatewayIntentBits.GuildMembers | GatewayIntentBits.MessageContent,
    });
    expect(await exitOf(service)).toEqual({ code: 1, signal: null });
    expectOneFatalLine(service, /intents.*Developer Portal/i);
    expect(sim.identifyCount).toBe(1);
    expect(sim.requestCount('GET /gateway/bot')).toBe(1);
  });

  it('a token Discord refuses (401): one fatal line naming DISCORD_TOKEN, exit 1, no identify', async (context) => {
    const { sim, service } = await setUp(context, {}, 'not-the-bot-token');
    expect(await exitOf(service)).toEqual({ code: 1, signal: null });
    expectOneFatalLine(service, /DISCORD_TOKEN/);
    expect(sim.requestCount('GET /gateway/bot')).toBe(1);
    expect(sim.identifyCount).toBe(0);
  });

  it('4004 on a live session (token revoked): reads answered until then; one fatal line, exit 1, no retry', async (context) => {
    const { sim, service } = await setUp(context, {});
    // Up and serving first.
    await eventually(async () => {
      const response = await fetch(`http://127.0.0.1:${service.port}/v1/users/${USER}`);
      expect(response.status).toBe(200);
    }, EXIT_MS);
    await sim.waitForReady(0, EXIT_MS);

    sim.faults.closeConnection(4004);
    expect(await exitOf(service)).toEqual({ code: 1, signal: null });
    expectOneFatalLine(service, /DISCORD_TOKEN/);
    expect(sim.identifyCount).toBe(1);
    expect(sim.resumeCount).toBe(0);
  });
});
