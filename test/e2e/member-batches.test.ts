import { describe, expect, it, type TestContext } from 'vitest';
import { MAX_USER_IDS_PER_REQUEST } from '../../src/discord/member-batches.js';
import type { DiscordSimulator } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * A burst of joins costs a handful of member requests: the service asks Discord for joining members by id
 * (op 8 `user_ids`) in batches of at most 100 per guild, each user once. The simulated Discord closes the
 * connection (4002) on a request of more than 100 ids, so a batch too large would show as a lost session.
 */

const GUILD = '500000000000000011';
const JOINS = 500;
const memberId = (n: number) => String(80351110224678912n + BigInt(n));
/** Already members when the service starts. */
const FOUNDERS = [0, 1, 2].map(memberId);
const joinerId = (n: number) => memberId(1_000 + n);
/** Every tenth joiner comes online. */
const isOnline = (n: number) => n % 10 === 0;

/** The op 8 requests by user id the simulated Discord received. */
const byId = (sim: DiscordSimulator) =>
  sim.memberRequests.flatMap((request) => ('user_ids' in request ? [request] : []));
const listings = (sim: DiscordSimulator) => sim.memberRequests.filter((request) => 'query' in request);

async function statusOf(h: Harness, id: string): Promise<string | number> {
  const response = await fetch(`${h.base}/v1/users/${id}`);
  if (response.status !== 200) {
    await response.body?.cancel();
    return response.status;
  }
  const body = (await response.json()) as { data: { discord_status: string } };
  return body.data.discord_status;
}

describe('a burst of joins', () => {
  it('is asked for in at most five requests of at most 100 ids, each member once, and every member is served', async ({
    onTestFinished,
  }: TestContext) => {
    const h = await startHarness({
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Busy',
          members: FOUNDERS.map((id, n) => ({ user: { id, username: `founder${n}` } })),
        }),
    });
    onTestFinished(() => h.close());
    await eventually(() => expect(h.app.registry.size).toBe(FOUNDERS.length));
    await eventually(() => expect(listings(h.simulator)).toHaveLength(1));
    expect(byId(h.simulator)).toEqual([]);

    for (let n = 0; n < JOINS; n++) {
      h.simulator.addMember(GUILD, {
        user: { id: joinerId(n), username: `joiner${n}` },
        ...(isOnline(n) ? { presence: { status: 'online' } } : {}),
      });
    }
    // Some leave and come back at once: Discord sends their join again, and they are asked for once.
    for (let n = 0; n < 10; n++) {
      h.simulator.removeMember(GUILD, joinerId(n));
      h.simulator.addMember(GUILD, { user: { id: joinerId(n), username: `joiner${n}` } });
    }

    const joiners = Array.from({ length: JOINS }, (_, n) => joinerId(n));
    await eventually(() =>
      expect(new Set(byId(h.simulator).flatMap((request) => request.user_ids))).toEqual(new Set(joiners)),
    );
    const requests = byId(h.simulator);
    expect(requests.length).toBeLessThanOrEqual(5);
    for (const request of requests) {
      expect(request).toMatchObject({ guild_id: GUILD, presences: true, nonce: expect.any(String) });
      expect((request.user_ids as string[]).length).toBeLessThanOrEqual(MAX_USER_IDS_PER_REQUEST);
    }
    expect(requests.flatMap((request) => request.user_ids)).toHaveLength(JOINS);
    expect(listings(h.simulator)).toHaveLength(1);

    await eventually(() => expect(h.app.registry.size).toBe(FOUNDERS.length + JOINS));
    for (let from = 0; from < JOINS; from += 50) {
      const statuses = await Promise.all(joiners.slice(from, from + 50).map((id) => statusOf(h, id)));
      expect(statuses).toEqual(statuses.map((_, k) => (isOnline(from + k) ? 'online' : 'offline')));
    }
    // One session throughout: no request was refused.
    expect(h.simulator.identifyCount).toBe(1);
    expect(h.simulator.resumeCount).toBe(0);
    expect(h.fatal).toEqual([]);
  }, 30_000);
});
