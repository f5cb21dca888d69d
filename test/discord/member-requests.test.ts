import { GatewayOpcodes, type GatewayRequestGuildMembersData } from 'discord-api-types/v10';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  MAX_TRACKED_USER_REQUESTS,
  MEMBER_LISTING_WINDOW_MS,
  MemberRequests,
} from '../../src/discord/member-requests.js';

const GUILD = '200000000000000001';
const OTHER_GUILD = '200000000000000002';

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

  it('forgets a request once answered, and keeps at most MAX_TRACKED_USER_REQUESTS by user id', () => {
    const { requests, sent, limited } = setup();
    const listing = requests.listGuild(0, GUILD);
    requests.answered(listing, false);
    limited(1, { guild_id: GUILD, nonce: listing });
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_000);
    requests.answered(listing, true);
    limited(1, { guild_id: GUILD, nonce: listing });
    expect(vi.getTimerCount()).toBe(0);

    for (let n = 0; n <= MAX_TRACKED_USER_REQUESTS; n++) requests.requestUsers(0, GUILD, [String(n)]);
    const byUser = sent.slice(2).map((entry) => entry.data.nonce as string);
    expect(sent[2]?.data).toEqual({ guild_id: GUILD, user_ids: ['0'], presences: true, nonce: byUser[0] });
    // The oldest was forgotten; the newest is sent again; an answered one is not.
    limited(1, { guild_id: GUILD, nonce: byUser[0] as string });
    expect(vi.getTimerCount()).toBe(0);
    requests.answered(byUser[1] as string, true);
    limited(1, { guild_id: GUILD, nonce: byUser[1] as string });
    expect(vi.getTimerCount()).toBe(0);
    const newest = byUser.at(-1) as string;
    limited(1, { guild_id: GUILD, nonce: newest });
    vi.advanceTimersByTime(1_000);
    expect(sent.at(-1)?.data).toEqual({
      guild_id: GUILD,
      user_ids: [String(MAX_TRACKED_USER_REQUESTS)],
      presences: true,
      nonce: newest,
    });
    // Requests by user id are not a guild's listing: readiness does not wait on them.
    limited(1, { guild_id: GUILD, nonce: newest });
    expect(requests.waiting()).toEqual([]);
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
