import { describe, expect, it, type TestContext } from 'vitest';
import { LARGE_THRESHOLD } from '../../src/discord/intents.js';
import { DiscordSimulator, type MemberInput } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Discord lists a guild's members in full once per bot in a window (30 s); a listing asked for inside it
 * gets RATE_LIMITED instead of chunks. A large guild's offline members are known only from that listing,
 * so the service asks again once the limit allows, and is not ready meanwhile. The simulated Discord
 * applies the limit with a short window here.
 */

const LARGE = '500000000000000007';
/** Above the threshold: GUILD_CREATE lists only the online members. */
const MEMBERS = LARGE_THRESHOLD + 50;
/** Every tenth member is online. */
const isOnline = (n: number) => n % 10 === 0;
const memberId = (n: number) => String(80351110224678912n + BigInt(n));
/** Offline, known only from the listing. */
const OFFLINE = memberId(7);
/** Offline; leaves while the service is not looking. */
const LEAVER = memberId(9);
/** Offline; joins while the service is not looking. */
const NEWCOMER = memberId(MEMBERS + 1);
/** The window after a restart: the new process lists the guild within it. */
const RESTART_WINDOW_MS = 5_000;
/** @discordjs/ws identifies again at most 5 s (plus up to 1.5 s of jitter) after the last identify. */
const REIDENTIFY_MS = 6_500;
/** The window after an INVALID_SESSION: the new session lists the guild within it. */
const REIDENTIFY_WINDOW_MS = REIDENTIFY_MS + 2_500;

function seed(sim: DiscordSimulator): void {
  sim.createGuild({
    id: LARGE,
    name: 'Large',
    members: Array.from(
      { length: MEMBERS },
      (_, n): MemberInput => ({
        user: { id: memberId(n), username: `member${n}` },
        ...(isOnline(n) ? { presence: { status: 'online' } } : {}),
      }),
    ),
  });
}

async function statusOf(h: Harness, id: string): Promise<number> {
  const response = await fetch(`${h.base}/v1/users/${id}`);
  await response.body?.cancel();
  return response.status;
}

async function readiness(h: Harness): Promise<{ status: number; message?: string }> {
  const response = await fetch(`${h.base}/v1/ready`);
  const body = (await response.json()) as { error?: { message: string } };
  return { status: response.status, ...(body.error ? { message: body.error.message } : {}) };
}

/** What /v1/ready says while the guild's listing waits on Discord's limit. */
const WAITING = {
  status: 503,
  message: expect.stringMatching(
    new RegExp(
      `^not ready: gateway: .*the member listing of guild ${LARGE} waits on Discord's rate limit, sent again in \\d+\\.\\d s$`,
    ),
  ),
};

/** The whole-guild listings the simulated Discord received. */
const listings = (sim: DiscordSimulator) => sim.memberRequests.filter((request) => 'query' in request);

describe('a large guild listed again inside Discord’s window', () => {
  it('after a restart: listed once the limit allows, offline members then served; not ready meanwhile, saying why', async ({
    onTestFinished,
  }: TestContext) => {
    const discord = new DiscordSimulator({
      heartbeatIntervalMs: 1_000,
      memberRequestCooldownMs: RESTART_WINDOW_MS,
    });
    await discord.start();
    onTestFinished(() => discord.stop());
    seed(discord);
    const first = await startHarness({ discord });
    onTestFinished(() => first.close());
    await eventually(() => expect(first.app.registry.size).toBe(MEMBERS));
    expect(await statusOf(first, OFFLINE)).toBe(200);
    await first.close();

    discord.removeMember(LARGE, LEAVER);
    const second = await startHarness({ discord });
    onTestFinished(() => second.close());
    await eventually(async () => expect(await readiness(second)).toEqual(WAITING));

    await eventually(
      async () => expect(await statusOf(second, OFFLINE)).toBe(200),
      RESTART_WINDOW_MS + 5_000,
    );
    expect(second.app.registry.size).toBe(MEMBERS - 1);
    expect(await statusOf(second, LEAVER)).toBe(404);
    await eventually(async () => expect(await readiness(second)).toEqual({ status: 200 }));
    // The first process's listing, the second's refused one, and the same sent again.
    expect(listings(discord)).toHaveLength(3);
    expect(listings(discord)[2]).toEqual(listings(discord)[1]);
  }, 30_000);

  it('after an INVALID_SESSION: who left stops being monitored, who joined offline is served; not ready meanwhile', async ({
    onTestFinished,
  }: TestContext) => {
    const h = await startHarness({
      simulator: { memberRequestCooldownMs: REIDENTIFY_WINDOW_MS },
      setup: seed,
    });
    onTestFinished(() => h.close());
    await eventually(() => expect(h.app.registry.size).toBe(MEMBERS));
    await eventually(async () => expect(await readiness(h)).toEqual({ status: 200 }));

    h.simulator.faults.invalidateSession(false);
    // The session is gone: only the fresh session's listing can tell of these.
    h.simulator.removeMember(LARGE, LEAVER);
    h.simulator.addMember(LARGE, { user: { id: NEWCOMER, username: 'newcomer' } });

    await eventually(async () => expect(await readiness(h)).toEqual(WAITING), REIDENTIFY_MS + 5_000);
    await eventually(
      () => expect(h.app.registry.isMonitored(LEAVER)).toBe(false),
      REIDENTIFY_WINDOW_MS + 5_000,
    );
    expect(await statusOf(h, LEAVER)).toBe(404);
    expect(await statusOf(h, NEWCOMER)).toBe(200);
    expect(await statusOf(h, OFFLINE)).toBe(200);
    expect(h.app.registry.size).toBe(MEMBERS);
    await eventually(async () => expect(await readiness(h)).toEqual({ status: 200 }));
    expect(listings(h.simulator)).toHaveLength(3);
    expect(h.simulator.identifyCount).toBe(2);
  }, 40_000);
});
