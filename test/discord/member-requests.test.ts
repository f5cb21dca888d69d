import { readFileSync } from 'node:fs';
import { GatewayOpcodes, type GatewayRequestGuildMembersData } from 'discord-api-types/v10';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_USER_IDS_PER_REQUEST, MEMBER_BATCH_DELAY_MS } from '../../src/discord/member-batches.js';
import {
  MAX_TRACKED_USER_REQUESTS,
  MEMBER_LISTING_WINDOW_MS,
  MEMBER_REQUESTS_PER_MINUTE,
  MemberRequests,
} from '../../src/discord/member-requests.js';

const GUILD = '200000000000000001';
const OTHER_GUILD = '200000000000000002';
const MINUTE = 60_000;
const guildId = (n: number) => String(300000000000000000n + BigInt(n));
const userId = (n: number) => String(80351110224678912n + BigInt(n));

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

function setup() {
  const sent: { shardId: number; data: GatewayRequestGuildMembersData }[] = [];
  const resent: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const requests = new MemberRequests({
    send: (shardId, data) => sent.push({ shardId, data }),
    onResent: (nonce) => resent.push(nonce),
    logger: pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) }),
  });
  /** RATE_LIMITED as Discord sends it for op 8. */
  const limited = (retryAfter: unknown, meta: { guild_id: string; nonce?: string }, opcode = 8) =>
    requests.rateLimited({ opcode, retry_after: retryAfter, meta } as Parameters<
      MemberRequests['rateLimited']
    >[0]);
  return { requests, sent, resent, lines, limited };
}

describe('MemberRequests', () => {
  it('sends a deferred listing again, the same request, once retry_after has passed', () => {
    const { requests, sent, resent, lines, limited } = setup();
    const nonce = requests.listGuild(2, GUILD);
    expect(sent).toEqual([
      { shardId: 2, data: { guild_id: GUILD, query: '', limit: 0, presences: true, nonce } },
    ]);

    limited(1.5, { guild_id: GUILD, nonce });
    expect(requests.waiting()).toEqual([{ guildId: GUILD, retryInMs: 1_500 }]);
    expect(lines.at(-1)).toMatchObject({
      level: 40,
      guildId: GUILD,
      shardId: 2,
      retryInSeconds: 1.5,
      msg: "member listing deferred by Discord's rate limit; sent again when it allows",
    });
    vi.advanceTimersByTime(1_499);
    expect(sent).toHaveLength(1);
    expect(requests.waiting()).toEqual([{ guildId: GUILD, retryInMs: 1 }]);

    vi.advanceTimersByTime(1);
    expect(sent).toEqual([sent[0], sent[0]]);
    expect(resent).toEqual([nonce]);
    expect(requests.waiting()).toEqual([]);
    expect(lines.at(-1)).toMatchObject({
      level: 30,
      guildId: GUILD,
      shardId: 2,
      waitedSeconds: 1.5,
      msg: "member listing resumed after Discord's rate limit",
    });
  });

  it('finds the request by guild when Discord names no nonce, and waits again if deferred again', () => {
    const { requests, sent, limited } = setup();
    requests.listGuild(0, OTHER_GUILD);
    requests.listGuild(0, GUILD);
    limited(2, { guild_id: GUILD });
    limited(3, { guild_id: GUILD });
    expect(requests.waiting()).toEqual([{ guildId: GUILD, retryInMs: 3_000 }]);
    vi.advanceTimersByTime(2_000);
    expect(sent).toHaveLength(2);
    vi.advanceTimersByTime(1_000);
    expect(sent.at(-1)?.data).toMatchObject({ guild_id: GUILD, query: '' });
    expect(sent).toHaveLength(3);
  });

  it('waits Discord’s whole window when retry_after is missing or nonsensical', () => {
    const { requests, sent, limited } = setup();
    const nonce = requests.listGuild(0, GUILD);
    limited(Number.NaN, { guild_id: GUILD, nonce });
    expect(requests.waiting()).toEqual([{ guildId: GUILD, retryInMs: MEMBER_LISTING_WINDOW_MS }]);
    vi.advanceTimersByTime(MEMBER_LISTING_WINDOW_MS);
    expect(sent).toHaveLength(2);
  });

  it('sends nothing again after a new session on the shard, the guild gone or listed afresh, or shutdown', () => {
    const { requests, sent, limited } = setup();
    const onShard1 = requests.listGuild(1, GUILD);
    const onShard0 = requests.listGuild(0, OTHER_GUILD);
    limited(1, { guild_id: GUILD, nonce: onShard1 });
    limited(1, { guild_id: OTHER_GUILD, nonce: onShard0 });
    requests.forgetShard(1);
    expect(requests.waiting().map((wait) => wait.guildId)).toEqual([OTHER_GUILD]);
    requests.forgetGuild(OTHER_GUILD);
    expect(requests.waiting()).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);

    const again = requests.listGuild(0, GUILD);
    limited(1, { guild_id: GUILD, nonce: again });
    const fresh = requests.listGuild(0, GUILD);
    expect(vi.getTimerCount()).toBe(0);
    limited(1, { guild_id: GUILD, nonce: fresh });
    requests.close();
    expect(vi.getTimerCount()).toBe(0);
    // Deferred after shutdown: not taken up.
    limited(1, { guild_id: GUILD, nonce: fresh });
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(MEMBER_LISTING_WINDOW_MS);
    expect(sent.map((entry) => entry.data.nonce)).toEqual([onShard1, onShard0, again, fresh]);
  });

  it('forgets a listing once answered: a later RATE_LIMITED for it sends nothing', () => {
    const { requests, limited } = setup();
    const listing = requests.listGuild(0, GUILD);
    requests.answered(listing, false);
    limited(1, { guild_id: GUILD, nonce: listing });
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_000);
    requests.answered(listing, true);
    limited(1, { guild_id: GUILD, nonce: listing });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps at most MAX_TRACKED_USER_REQUESTS batches by user id; a deferred batch goes again as it was', () => {
    const { requests, sent, limited } = setup();
    // One user in each of that many guilds and one more: as many batches, paced over eleven minutes.
    const guilds = Array.from({ length: MAX_TRACKED_USER_REQUESTS + 1 }, (_, n) => guildId(n));
    for (const [n, guild] of guilds.entries()) requests.requestUsers(0, guild, [String(n)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS + 11 * MINUTE);
    expect(sent).toHaveLength(guilds.length);
    const byUser = sent.map((entry) => entry.data.nonce as string);
    expect(sent[0]?.data).toEqual({
      guild_id: guilds[0],
      user_ids: ['0'],
      presences: true,
      nonce: byUser[0],
    });
    // The oldest was forgotten; the newest is sent again; an answered one is not.
    limited(1, { guild_id: guilds[0] as string, nonce: byUser[0] as string });
    expect(vi.getTimerCount()).toBe(0);
    requests.answered(byUser[1] as string, true);
    limited(1, { guild_id: guilds[1] as string, nonce: byUser[1] as string });
    expect(vi.getTimerCount()).toBe(0);
    const newest = byUser.at(-1) as string;
    limited(1, { guild_id: guilds.at(-1) as string, nonce: newest });
    vi.advanceTimersByTime(1_000);
    expect(sent.at(-1)?.data).toEqual({
      guild_id: guilds.at(-1),
      user_ids: [String(MAX_TRACKED_USER_REQUESTS)],
      presences: true,
      nonce: newest,
    });
    // Requests by user id are not a guild's listing: readiness does not wait on them.
    limited(1, { guild_id: guilds.at(-1) as string, nonce: newest });
    expect(requests.waiting()).toEqual([]);
    // The forgotten batch's user may be asked for again; the unanswered newest one's is not asked anew
    // (only that batch goes again, deferred the second time).
    requests.requestUsers(0, guilds[0] as string, ['0']);
    requests.requestUsers(0, guilds.at(-1) as string, [String(MAX_TRACKED_USER_REQUESTS)]);
    vi.advanceTimersByTime(MINUTE);
    const later = sent.slice(guilds.length + 1);
    expect(later.map(({ data }) => ['user_ids' in data && data.user_ids, data.nonce === newest])).toEqual([
      [['0'], false],
      [[String(MAX_TRACKED_USER_REQUESTS)], true],
    ]);
  });

  it('logs any other rate-limited opcode once, with its retry_after, and sends nothing', () => {
    const { requests, sent, lines, limited } = setup();
    requests.listGuild(0, GUILD);
    limited(4.25, { guild_id: GUILD }, GatewayOpcodes.PresenceUpdate);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        opcode: GatewayOpcodes.PresenceUpdate,
        retryAfterSeconds: 4.25,
        msg: 'Discord rate limited a gateway request',
      }),
    ]);
    expect(vi.getTimerCount()).toBe(0);
    expect(requests.waiting()).toEqual([]);
    expect(sent).toHaveLength(1);
  });
});

describe('MemberRequests: members asked for by id', () => {
  /** The users asked for, per request by id, in the order sent. */
  const byId = (sent: { data: GatewayRequestGuildMembersData }[]) =>
    sent.flatMap((entry) => ('user_ids' in entry.data ? [entry.data.user_ids as string[]] : []));

  it('gathers a burst of 5,000 joins, one a millisecond, into 50 requests of 100, each user asked for once', () => {
    const { requests, sent } = setup();
    for (let n = 0; n < 5_000; n++) {
      requests.requestUsers(0, GUILD, [userId(n)]);
      vi.advanceTimersByTime(1);
    }
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    const batches = byId(sent);
    expect(batches.length).toBeLessThanOrEqual(55);
    expect(batches).toHaveLength(50);
    for (const ids of batches) expect(ids.length).toBeLessThanOrEqual(MAX_USER_IDS_PER_REQUEST);
    const asked = batches.flat();
    expect(asked).toHaveLength(5_000);
    expect(new Set(asked)).toEqual(new Set(Array.from({ length: 5_000 }, (_, n) => userId(n))));
    expect(sent.every((entry) => entry.shardId === 0 && entry.data.guild_id === GUILD)).toBe(true);
    expect(sent.every((entry) => entry.data.presences === true)).toBe(true);
    expect(new Set(sent.map((entry) => entry.data.nonce)).size).toBe(50);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sends a full batch at once, without waiting for the delay', () => {
    const { requests, sent } = setup();
    requests.requestUsers(
      0,
      GUILD,
      Array.from({ length: 250 }, (_, n) => userId(n)),
    );
    expect(byId(sent).map((ids) => ids.length)).toEqual([100, 100]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(byId(sent).map((ids) => ids.length)).toEqual([100, 100, 50]);
  });

  it('sends a lone join once the coalescing delay has passed', () => {
    const { requests, sent } = setup();
    requests.requestUsers(2, GUILD, [userId(1)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS - 1);
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([
      {
        shardId: 2,
        data: { guild_id: GUILD, user_ids: [userId(1)], presences: true, nonce: expect.any(String) },
      },
    ]);
  });

  it('asks for a user once while pending or unanswered, and again once answered', () => {
    const { requests, sent } = setup();
    requests.requestUsers(0, GUILD, [userId(1), userId(2)]);
    // The same user joining twice, and a join of a user already pending.
    requests.requestUsers(0, GUILD, [userId(1)]);
    requests.requestUsers(0, GUILD, [userId(2), userId(3)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(byId(sent)).toEqual([[userId(1), userId(2), userId(3)]]);

    // Sent and not answered yet: not asked for again.
    requests.requestUsers(0, GUILD, [userId(1)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(sent).toHaveLength(1);

    // Answered (its last chunk): a later join asks again.
    requests.answered(sent[0]?.data.nonce as string, false);
    requests.requestUsers(0, GUILD, [userId(1)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(sent).toHaveLength(1);
    requests.answered(sent[0]?.data.nonce as string, true);
    requests.requestUsers(0, GUILD, [userId(1)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(byId(sent)).toEqual([[userId(1), userId(2), userId(3)], [userId(1)]]);
  });

  it('batches each guild apart, on its own shard', () => {
    const { requests, sent } = setup();
    for (let n = 0; n < 6; n++) requests.requestUsers(n % 2, n % 2 === 0 ? GUILD : OTHER_GUILD, [userId(n)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(sent.map(({ shardId, data }) => ({ shardId, data }))).toEqual([
      {
        shardId: 0,
        data: expect.objectContaining({ guild_id: GUILD, user_ids: [userId(0), userId(2), userId(4)] }),
      },
      {
        shardId: 1,
        data: expect.objectContaining({ guild_id: OTHER_GUILD, user_ids: [userId(1), userId(3), userId(5)] }),
      },
    ]);
  });

  it('sends at most MEMBER_REQUESTS_PER_MINUTE a shard, listings included; the rest waits, in order, carrying later joins', () => {
    const { requests, sent } = setup();
    expect(MEMBER_REQUESTS_PER_MINUTE).toBe(100);
    // Half the budget in whole-guild listings, the other half and one more in batches of other guilds.
    for (let n = 0; n < 50; n++) requests.listGuild(0, guildId(n));
    vi.advanceTimersByTime(1_000);
    for (let n = 50; n < 101; n++) requests.requestUsers(0, guildId(n), [userId(n)]);
    // Another shard has a budget of its own.
    requests.requestUsers(1, OTHER_GUILD, [userId(1)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(sent.filter((entry) => entry.shardId === 0)).toHaveLength(100);
    expect(sent.filter((entry) => entry.shardId === 1)).toHaveLength(1);

    // The 101st waits for the first listing to leave the minute, and takes in the joins of its guild meanwhile.
    requests.requestUsers(0, guildId(100), [userId(1_000), userId(1_001)]);
    vi.advanceTimersByTime(MINUTE - 1_000 - MEMBER_BATCH_DELAY_MS - 1);
    expect(sent).toHaveLength(101);
    vi.advanceTimersByTime(1);
    expect(sent).toHaveLength(102);
    expect(sent.at(-1)).toMatchObject({
      shardId: 0,
      data: { guild_id: guildId(100), user_ids: [userId(100), userId(1_000), userId(1_001)] },
    });
    // In the order asked for: listings, then batches by guild.
    expect(sent.filter((entry) => entry.shardId === 0).map((entry) => entry.data.guild_id)).toEqual(
      Array.from({ length: 101 }, (_, n) => guildId(n)),
    );
    expect(vi.getTimerCount()).toBe(0);
  });

  it('drops what is pending or waiting for a guild deleted or listed afresh, a shard lost, or at shutdown', () => {
    const { requests, sent } = setup();
    requests.requestUsers(0, GUILD, [userId(1)]);
    requests.forgetGuild(GUILD);
    expect(vi.getTimerCount()).toBe(0);

    // A listing of the guild answers for its pending joins.
    requests.requestUsers(0, GUILD, [userId(2)]);
    const listing = requests.listGuild(0, GUILD);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(sent.map((entry) => entry.data.nonce)).toEqual([listing]);

    requests.requestUsers(1, OTHER_GUILD, [userId(3)]);
    requests.forgetShard(1);
    expect(vi.getTimerCount()).toBe(0);

    // Waiting on the budget: dropped with its guild.
    for (let n = 0; n < MEMBER_REQUESTS_PER_MINUTE; n++) requests.listGuild(2, guildId(n));
    requests.requestUsers(2, OTHER_GUILD, [userId(4)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(vi.getTimerCount()).toBe(1);
    requests.forgetGuild(OTHER_GUILD);
    expect(vi.getTimerCount()).toBe(0);
    // Forgotten, so asked for afresh; then the shard is lost while it waits.
    requests.requestUsers(2, OTHER_GUILD, [userId(4)]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    requests.forgetShard(2);
    expect(vi.getTimerCount()).toBe(0);

    requests.requestUsers(0, GUILD, [userId(5)]);
    requests.close();
    expect(vi.getTimerCount()).toBe(0);
    requests.requestUsers(0, GUILD, [userId(6)]);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(2 * MINUTE);
    expect(byId(sent)).toEqual([]);
    expect(sent).toHaveLength(1 + MEMBER_REQUESTS_PER_MINUTE);
  });
});

describe('docs/limits.md', () => {
  /** The row of the member requests' table that names `constant`. */
  const row = (constant: string) => {
    const found = readFileSync(new URL('../../docs/limits.md', import.meta.url), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('| ') && line.includes(`(\`${constant}\``));
    if (found === undefined) throw new Error(`docs/limits.md has no row naming ${constant}`);
    return found.split(' | ')[1];
  };

  it('gives the batch size, delay, send budget and tracking bound the code has', () => {
    expect(row('MAX_USER_IDS_PER_REQUEST')).toBe(String(MAX_USER_IDS_PER_REQUEST));
    expect(row('MEMBER_BATCH_DELAY_MS')).toBe(`${MEMBER_BATCH_DELAY_MS} ms after its first id`);
    expect(row('MEMBER_REQUESTS_PER_MINUTE')).toBe(`${MEMBER_REQUESTS_PER_MINUTE} in any 60 s`);
    expect(row('MAX_TRACKED_USER_REQUESTS')).toBe(MAX_TRACKED_USER_REQUESTS.toLocaleString('en'));
  });
});
