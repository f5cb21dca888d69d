import {
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayRequestGuildMembersData,
} from 'discord-api-types/v10';
import pino from 'pino';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { GatewayIngest } from '../../src/discord/ingest.js';
import { MEMBER_BATCH_DELAY_MS } from '../../src/discord/member-batches.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';

const GUILD = '200000000000000001';
const OTHER_GUILD = '200000000000000002';
const user = (id: string, username = `user${id}`) => ({
  id,
  username,
  discriminator: '0',
  global_name: null,
  avatar: null,
});
const member = (id: string) => ({
  user: user(id),
  roles: [],
  joined_at: '2024-01-01T00:00:00.000Z',
  deaf: false,
  mute: false,
  flags: 0,
});
const online = (id: string) => ({
  user: { id },
  status: 'online',
  activities: [],
  client_status: { desktop: 'online' },
});

function setup() {
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
  });
  const requests: { shardId: number; data: GatewayRequestGuildMembersData }[] = [];
  const updatedUsers: string[] = [];
  const syncedShards: number[] = [];
  /** Members unrendered, and whether a listing was under way, each time the ingest said members came. */
  const listed: [number, boolean][] = [];
  const ingest: GatewayIngest = new GatewayIngest({
    registry,
    requestMembers: (shardId, data) => requests.push({ shardId, data }),
    onUserUpdated: (id) => updatedUsers.push(id),
    onShardSynced: (shardId) => syncedShards.push(shardId),
    onMembersListed: () => listed.push([registry.pendingCount, ingest.listing]),
    logger: pino({ level: 'silent' }),
  });
  const dispatch = (t: string, d: unknown, shardId = 0) =>
    ingest.handle({ op: 0, s: 1, t, d } as unknown as GatewayDispatchPayload, shardId);
  return { registry, requests, updatedUsers, syncedShards, listed, dispatch };
}

function guildCreate(
  id: string,
  members: string[],
  presences: string[],
  extra: Record<string, unknown> = {},
) {
  return {
    id,
    name: 'Guild',
    member_count: members.length,
    large: false,
    members: members.map(member),
    presences: presences.map(online),
    ...extra,
  };
}

describe('GatewayIngest', () => {
  it('reads members and presences from GUILD_CREATE, then asks for every member with presences', () => {
    const { registry, requests, dispatch } = setup();
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, ['1', '2'], ['1']), 3);
    expect(registry.get('1')?.presence.discord_status).toBe('online');
    expect(registry.get('2')?.presence.discord_status).toBe('offline');
    expect(requests).toEqual([
      {
        shardId: 3,
        data: { guild_id: GUILD, query: '', limit: 0, presences: true, nonce: expect.any(String) },
      },
    ]);
    expect((requests[0]?.data.nonce ?? '').length).toBeLessThanOrEqual(32);
  });

  it('adds offline members of a large guild from the member chunks, rendered when asked for', () => {
    const { registry, requests, listed, dispatch } = setup();
    dispatch(
      GatewayDispatchEvents.GuildCreate,
      guildCreate(GUILD, ['1'], ['1'], { large: true, member_count: 3 }),
    );
    const nonce = requests[0]?.data.nonce;
    dispatch(GatewayDispatchEvents.GuildMembersChunk, {
      guild_id: GUILD,
      members: [member('1'), member('2')],
      presences: [online('1')],
      chunk_index: 0,
      chunk_count: 2,
      nonce,
    });
    dispatch(GatewayDispatchEvents.GuildMembersChunk, {
      guild_id: GUILD,
      members: [member('3')],
      presences: [],
      chunk_index: 1,
      chunk_count: 2,
      nonce,
    });
    expect(registry.size).toBe(3);
    // Said after each listing's members. Held unrendered: the GUILD_CREATE's; of the first chunk, the
    // member new to it (the other, heard of again, is rendered for it); of the second, its new member,
    // which ends the listing.
    expect(listed).toEqual([
      [1, true],
      [1, true],
      [2, false],
    ]);
    expect(registry.get('1')?.presence.discord_status).toBe('online');
    expect(registry.get('3')?.presence.discord_status).toBe('offline');
    expect(registry.pendingCount).toBe(1);
  });

  it('on a fresh session, forgets guilds Discord no longer lists and members who left meanwhile', () => {
    const { registry, requests, dispatch } = setup();
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, ['1', '2'], []));
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(OTHER_GUILD, ['3'], []));
    expect(registry.size).toBe(3);

    dispatch(GatewayDispatchEvents.Ready, {
      v: 10,
      user: user('999'),
      guilds: [{ id: GUILD, unavailable: true }],
      session_id: 'x',
    });
    expect(registry.isMonitored('3')).toBe(false);

    requests.length = 0;
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, ['1'], ['1']));
    const nonce = requests[0]?.data.nonce;
    expect(registry.isMonitored('2')).toBe(true);
    dispatch(GatewayDispatchEvents.GuildMembersChunk, {
      guild_id: GUILD,
      members: [member('1')],
      presences: [online('1')],
      chunk_index: 0,
      chunk_count: 1,
      nonce,
    });
    expect(registry.isMonitored('2')).toBe(false);
    expect(registry.get('1')?.presence.discord_status).toBe('online');
  });

  it('tells when every guild READY listed on a shard has its members loaded', () => {
    const { requests, syncedShards, dispatch } = setup();
    const ready = (guilds: string[], shardId: number) =>
      dispatch(
        GatewayDispatchEvents.Ready,
        {
          v: 10,
          user: user('999'),
          guilds: guilds.map((id) => ({ id, unavailable: true })),
          session_id: 'x',
        },
        shardId,
      );
    const loaded = (guildId: string, shardId: number) => {
      requests.length = 0;
      dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(guildId, ['1'], []), shardId);
      dispatch(
        GatewayDispatchEvents.GuildMembersChunk,
        {
          guild_id: guildId,
          members: [member('1')],
          chunk_index: 0,
          chunk_count: 1,
          nonce: requests[0]?.data.nonce,
        },
        shardId,
      );
    };

    ready([GUILD, OTHER_GUILD], 1);
    loaded(GUILD, 1);
    expect(syncedShards).toEqual([]);
    // Only unavailable for now: still awaited.
    dispatch(GatewayDispatchEvents.GuildDelete, { id: OTHER_GUILD, unavailable: true }, 1);
    expect(syncedShards).toEqual([]);
    loaded(OTHER_GUILD, 1);
    expect(syncedShards).toEqual([1]);

    ready([], 0);
    expect(syncedShards).toEqual([1, 0]);
    ready([GUILD], 0);
    // Removed from the guild before it loaded: nothing left to wait for.
    dispatch(GatewayDispatchEvents.GuildDelete, { id: GUILD }, 0);
    expect(syncedShards).toEqual([1, 0, 0]);
  });

  it('does not end a re-listing on chunks that answer another request', () => {
    vi.useFakeTimers();
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const { registry, requests, dispatch } = setup();
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, ['1', '2'], []));
    dispatch(GatewayDispatchEvents.GuildMemberAdd, { ...member('4'), guild_id: GUILD });
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    const memberNonce = requests[1]?.data.nonce;
    expect(requests[1]?.data).toMatchObject({ guild_id: GUILD, user_ids: ['4'], presences: true });
    dispatch(GatewayDispatchEvents.GuildMembersChunk, {
      guild_id: GUILD,
      members: [member('4')],
      presences: [online('4')],
      chunk_index: 0,
      chunk_count: 1,
      nonce: memberNonce,
    });
    expect(registry.isMonitored('1')).toBe(true);
    expect(registry.isMonitored('2')).toBe(true);
    expect(registry.get('4')?.presence.discord_status).toBe('online');
  });

  it('asks for joining members in batches per guild, each once, and drops those pending when the guild goes', () => {
    vi.useFakeTimers();
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const { registry, requests, dispatch } = setup();
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, ['1'], []));
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(OTHER_GUILD, ['1'], []), 1);
    const join = (id: string, guildId = GUILD, shardId = 0) =>
      dispatch(GatewayDispatchEvents.GuildMemberAdd, { ...member(id), guild_id: guildId }, shardId);
    const byId = () =>
      requests.flatMap(({ shardId, data }) =>
        'user_ids' in data ? [{ shardId, guildId: data.guild_id, ids: data.user_ids }] : [],
      );

    // 250 joins, one of them twice, and a join (as Discord now sends) of a member already there.
    const ids = Array.from({ length: 250 }, (_, n) => String(1_000 + n));
    for (const id of ids) join(id);
    join(ids[7] as string);
    join('1');
    join('9', OTHER_GUILD, 1);
    expect(registry.isMonitored(ids[249] as string)).toBe(true);
    expect(byId().map(({ ids }) => ids.length)).toEqual([100, 100]);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(byId()).toEqual([
      { shardId: 0, guildId: GUILD, ids: ids.slice(0, 100) },
      { shardId: 0, guildId: GUILD, ids: ids.slice(100, 200) },
      { shardId: 0, guildId: GUILD, ids: [...ids.slice(200), '1'] },
      { shardId: 1, guildId: OTHER_GUILD, ids: ['9'] },
    ]);

    // Left for good before its batch went: nothing is asked of it.
    join('20');
    dispatch(GatewayDispatchEvents.GuildDelete, { id: GUILD });
    // A fresh session on shard 1: its pending joins are the old session's.
    join('21', OTHER_GUILD, 1);
    dispatch(
      GatewayDispatchEvents.Ready,
      { v: 10, user: user('999'), guilds: [{ id: OTHER_GUILD, unavailable: true }], session_id: 'y' },
      1,
    );
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(MEMBER_BATCH_DELAY_MS);
    expect(byId()).toHaveLength(4);
  });

  it('follows member updates, removals, guild deletion, presence and user updates', () => {
    const { registry, updatedUsers, dispatch } = setup();
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, ['1', '2'], []));
    dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(OTHER_GUILD, ['1'], []));

    dispatch(GatewayDispatchEvents.PresenceUpdate, { ...online('1'), guild_id: GUILD, status: 'dnd' });
    expect(registry.get('1')?.presence.discord_status).toBe('dnd');

    dispatch(GatewayDispatchEvents.GuildMemberUpdate, {
      guild_id: GUILD,
      user: user('1', 'renamed'),
      roles: [],
    });
    expect(registry.get('1')?.presence.discord_user.username).toBe('renamed');

    dispatch(GatewayDispatchEvents.UserUpdate, user('1', 'again'));
    expect(registry.get('1')?.presence.discord_user.username).toBe('again');
    expect(updatedUsers).toEqual(['1']);

    dispatch(GatewayDispatchEvents.GuildMemberRemove, { guild_id: GUILD, user: user('2') });
    expect(registry.isMonitored('2')).toBe(false);

    dispatch(GatewayDispatchEvents.GuildDelete, { id: OTHER_GUILD, unavailable: true });
    expect(registry.isMonitored('1')).toBe(true);
    dispatch(GatewayDispatchEvents.GuildDelete, { id: GUILD });
    expect(registry.isMonitored('1')).toBe(false);
    expect(registry.size).toBe(0);
  });

  it('logs the loading of a large guild as it goes, at most every 5 s, and a summary at the end', () => {
    const registry = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    });
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const clock = { now: 0 };
    const nonces: string[] = [];
    const ingest = new GatewayIngest({
      registry,
      requestMembers: (_shard, data) => nonces.push(data.nonce as string),
      logger,
      now: () => clock.now,
    });
    const dispatch = (t: string, d: unknown) =>
      ingest.handle({ op: 0, s: 1, t, d } as unknown as GatewayDispatchPayload, 0);
    dispatch(
      GatewayDispatchEvents.GuildCreate,
      guildCreate(GUILD, [], [], { large: true, member_count: 5000 }),
    );
    // Five chunks of 1,000, one every 3 s.
    for (let chunk = 0; chunk < 5; chunk++) {
      clock.now += 3_000;
      const ids = Array.from({ length: 1000 }, (_, n) => String(1_000_000 + chunk * 1000 + n));
      dispatch(GatewayDispatchEvents.GuildMembersChunk, {
        guild_id: GUILD,
        members: ids.map(member),
        presences: [],
        chunk_index: chunk,
        chunk_count: 5,
        nonce: nonces[0],
      });
    }
    const progress = lines.filter((line) => line.msg === 'loading guild members');
    expect(progress.map(({ loaded, of, chunk, perSecond }) => ({ loaded, of, chunk, perSecond }))).toEqual([
      { loaded: 2000, of: 5000, chunk: '2/5', perSecond: 333 },
      { loaded: 4000, of: 5000, chunk: '4/5', perSecond: 333 },
    ]);
    const loaded = lines.find((line) => line.msg === 'guild members loaded');
    expect(loaded).toMatchObject({ guildId: GUILD, members: 5000, seconds: 15, perSecond: 333 });
  });

  it('keeps a shard unsynced while Discord defers a listing (RATE_LIMITED), and syncs once it is sent again and answered', () => {
    vi.useFakeTimers();
    try {
      const { registry, requests, syncedShards, dispatch } = setup();
      const readyWith = (guilds: string[]) =>
        dispatch(GatewayDispatchEvents.Ready, {
          v: 10,
          user: user('999'),
          guilds: guilds.map((id) => ({ id, unavailable: true })),
          session_id: 'x',
        });
      const chunk = (members: string[], nonce: string | undefined) =>
        dispatch(GatewayDispatchEvents.GuildMembersChunk, {
          guild_id: GUILD,
          members: members.map(member),
          presences: [],
          chunk_index: 0,
          chunk_count: 1,
          nonce,
        });
      readyWith([GUILD]);
      dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, [], [], { large: true }));
      chunk(['1', '2'], requests[0]?.data.nonce);
      expect(syncedShards).toEqual([0]);

      // A fresh session: the listing asked for again is refused for now. Member 2 has left meanwhile.
      readyWith([GUILD]);
      dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, [], [], { large: true }));
      const nonce = requests[1]?.data.nonce;
      dispatch(GatewayDispatchEvents.RateLimited, {
        opcode: 8,
        retry_after: 2.5,
        meta: { guild_id: GUILD, nonce },
      });
      vi.advanceTimersByTime(2_499);
      expect(requests).toHaveLength(2);
      expect(syncedShards).toEqual([0]);
      expect(registry.isMonitored('2')).toBe(true);

      vi.advanceTimersByTime(1);
      expect(requests[2]).toEqual(requests[1]);
      chunk(['1'], nonce);
      expect(syncedShards).toEqual([0, 0]);
      expect(registry.isMonitored('2')).toBe(false);

      // Deferred, then a new session before the re-send: the old request is not sent again.
      readyWith([GUILD]);
      dispatch(GatewayDispatchEvents.GuildCreate, guildCreate(GUILD, [], [], { large: true }));
      dispatch(GatewayDispatchEvents.RateLimited, {
        opcode: 8,
        retry_after: 1,
        meta: { guild_id: GUILD, nonce: requests[3]?.data.nonce },
      });
      readyWith([GUILD]);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('ignores an unavailable GUILD_CREATE', () => {
    const { registry, requests, dispatch } = setup();
    dispatch(GatewayDispatchEvents.GuildCreate, { id: GUILD, unavailable: true });
    expect(registry.size).toBe(0);
    expect(requests).toHaveLength(0);
  });
});
