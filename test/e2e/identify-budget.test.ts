import pino from 'pino';
import { describe, expect, it, type TestContext } from 'vitest';
import type { DiscordSimulatorOptions } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { type Family, scrape } from '../support/prometheus.js';

/**
 * Discord's daily IDENTIFY budget (`session_start_limit`) through the real service against the simulated
 * Discord, whose budget is small here (20) and resets soon: under 10% left, the service says it waits,
 * sends no IDENTIFY until the reset, then connects; `/metrics` shows what is left, `/v1/ready` why it is
 * not ready. A RESUME spends nothing.
 */

const GUILD = '600000000000000001';
const USER = '80351110224678912';
const TOTAL = 20;
/** The simulated budget's window: long enough to look at the service while it waits. */
const RESET_MS = 3_000;
/** The wait, the margin after the reset, the library's identify pace (5 s + 1.5 s) and the session's start. */
const CONNECTED_MS = RESET_MS + 12_000;
const WARN = 40;
const INFO = 30;

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

async function start(
  context: TestContext,
  sessionStartLimit: DiscordSimulatorOptions['sessionStartLimit'],
): Promise<{ h: Harness; lines: LogLine[] }> {
  const lines: LogLine[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const h = await startHarness({
    simulator: { sessionStartLimit },
    logger,
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
      }),
  });
  context.onTestFinished(() => h.close());
  return { h, lines };
}

const budgetWarnings = (lines: LogLine[]) =>
  lines.filter(
    (line) => line.level === WARN && line.msg.startsWith("Discord's IDENTIFY budget is nearly spent"),
  );

/** The IDENTIFY budget gauges, as /metrics shows them (undefined: no sample). */
function gauges(families: Map<string, Family>): { remaining?: number; limit?: number } {
  const value = (name: string) => families.get(name)?.samples[0]?.value;
  return {
    remaining: value('presently_gateway_identify_remaining'),
    limit: value('presently_gateway_identify_limit'),
  };
}

async function readiness(h: Harness): Promise<{ status: number; message?: string }> {
  const response = await fetch(`${h.base}/v1/ready`);
  const body = (await response.json()) as { error?: { message: string } };
  return { status: response.status, ...(body.error ? { message: body.error.message } : {}) };
}

describe.concurrent("Discord's IDENTIFY budget", () => {
  it('nearly spent at start: says it waits, sends no IDENTIFY until the reset, then connects', async (context) => {
    // 1 of 20 left: under 10%.
    const { h, lines } = await start(context, { total: TOTAL, remaining: 1, resetAfterMs: RESET_MS });

    // The limit is logged as read, then the wait.
    const [warning] = await eventually(() => {
      const found = budgetWarnings(lines);
      expect(found).toHaveLength(1);
      return found;
    });
    expect(warning?.msg).toMatch(
      /^Discord's IDENTIFY budget is nearly spent: 1 of 20 left; waiting \d+s for it to reset rather than risk the bot's token$/,
    );
    expect(warning).toMatchObject({ remaining: 1, total: TOTAL });
    expect(lines.find((line) => line.level === INFO && /session_start_limit/.test(line.msg))).toMatchObject({
      total: TOTAL,
      remaining: 1,
      msg: expect.stringMatching(/: 1 of 20 left, resets in \d+ s$/),
    });

    // While it waits: no IDENTIFY, the gauge shows what is left, readiness says why.
    expect(gauges(await scrape(h.base))).toEqual({ remaining: 1, limit: TOTAL });
    expect(await readiness(h)).toEqual({
      status: 503,
      message: expect.stringMatching(/gateway: .*waits for Discord's IDENTIFY budget to reset, in \d+\.\d s/),
    });
    expect(h.simulator.identifyCount).toBe(0);

    // After the reset it connects, with one IDENTIFY, spent from the new window: none from the old one.
    await eventually(() => expect(h.app.gateway.ready).toBe(true), CONNECTED_MS);
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.simulator.sessionStarts).toMatchObject({ total: TOTAL, remaining: TOTAL - 1, refused: 0 });
    await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(true));
    expect(gauges(await scrape(h.base))).toEqual({ remaining: TOTAL - 1, limit: TOTAL });
    expect(budgetWarnings(lines)).toHaveLength(1);

    // A dropped connection is resumed: no IDENTIFY, nothing spent.
    h.simulator.faults.dropConnection();
    await eventually(() => expect(h.simulator.resumeCount).toBe(1));
    await eventually(() => expect(h.app.gateway.ready).toBe(true));
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.simulator.sessionStarts.remaining).toBe(TOTAL - 1);
    expect(gauges(await scrape(h.base))).toEqual({ remaining: TOTAL - 1, limit: TOTAL });
  });

  it('spent to the reserve by its own IDENTIFYs: a session Discord will not resume waits for the reset', async (context) => {
    // 2 of 20: the first IDENTIFY leaves 1, under 10%.
    const { h, lines } = await start(context, { total: TOTAL, remaining: 2, resetAfterMs: RESET_MS });
    await eventually(() => expect(h.app.gateway.ready).toBe(true));
    expect(h.simulator.identifyCount).toBe(1);
    expect(gauges(await scrape(h.base))).toEqual({ remaining: 1, limit: TOTAL });
    expect(budgetWarnings(lines)).toEqual([]);

    h.simulator.faults.invalidateSession(false);
    await eventually(() => expect(budgetWarnings(lines)).toHaveLength(1));
    expect(budgetWarnings(lines)[0]?.msg).toMatch(/: 1 of 20 left; waiting \d+s/);
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.app.gateway.ready).toBe(false);

    await eventually(() => expect(h.app.gateway.ready).toBe(true), CONNECTED_MS);
    expect(h.simulator.identifyCount).toBe(2);
    expect(h.simulator.sessionStarts).toMatchObject({ remaining: TOTAL - 1, refused: 0 });
    expect(budgetWarnings(lines)).toHaveLength(1);
  });
});
