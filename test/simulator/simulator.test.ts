import { once } from 'node:events';
import { inflateSync, constants as zlibConstants } from 'node:zlib';
import { DiscordAPIError, type REST } from '@discordjs/rest';
import {
  CompressionMethod,
  type WebSocketManager,
  WebSocketShardEvents,
  WebSocketShardStatus,
} from '@discordjs/ws';
import {
  type APIDMChannel,
  type APIGatewayBotInfo,
  type APIMessage,
  type APIUser,
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayGuildCreateDispatchData,
  type GatewayGuildMembersChunkDispatchData,
  GatewayIntentBits,
  GatewayOpcodes,
  type GatewayPresenceUpdateDispatchData,
  Routes,
} from 'discord-api-types/v10';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { gameActivity } from '../../src/simulator/activities.js';
import {
  DiscordSimulator,
  type DiscordSimulatorOptions,
  type MemberInput,
  shardFor,
} from '../../src/simulator/index.js';
import { gatewayFor, restFor } from './support.js';

/** GUILDS | GUILD_MEMBERS | GUILD_PRESENCES | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT */
const INTENTS = 37635;
const HEARTBEAT_MS = 200;
const CHESS = '383226320970055681';

const simulators: DiscordSimulator[] = [];
const managers: WebSocketManager[] = [];
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  await Promise.all(managers.splice(0).map((manager) => manager.destroy()));
  await Promise.all(simulators.splice(0).map((simulator) => simulator.stop()));
});

async function startSimulator(options: DiscordSimulatorOptions = {}): Promise<DiscordSimulator> {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: HEARTBEAT_MS, ...options });
  simulators.push(simulator);
  await simulator.start();
  return simulator;
}

// Snowflakes with a realistic timestamp part; (id >> 22) % 2 = n % 2, so guildId(n) lives on shard n % 2 of 2.
const BASE_MS = 1_100_000_000_000n;
const guildId = (n: number): string => ((BASE_MS + BigInt(n)) << 22n).toString();
const userId = (n: number): string => (((BASE_MS + 500_000n + BigInt(n)) << 22n) | 1n).toString();

function member(n: number, status: 'online' | 'idle' | 'dnd' | 'offline' = 'online'): MemberInput {
  return {
    user: {
      id: userId(n),
      username: `member${n}`,
      global_name: `Member ${n}`,
      avatar: null,
      discriminator: '0',
    },
    presence: {
      status,
      activities:
        status === 'offline'
          ? []
          : [gameActivity({ name: 'Chess', applicationId: CHESS, start: 1_700_000_000_000 })],
      client_status: status === 'offline' ? {} : { desktop: status },
    },
  };
}

interface Client {
  manager: WebSocketManager;
  rest: REST;
  events: Array<{ shardId: number; payload: GatewayDispatchPayload }>;
  errors: Error[];
  closes: Array<{ code: number; shardId: number }>;
  resumes: number[];
  /** Dispatches (by type), closes and resumes, in the order the client saw them. */
  timeline: string[];
  of<T>(event: GatewayDispatchEvents, shardId?: number): T[];
}

/** The real gateway and REST clients, recording what they see. */
function client(
  simulator: DiscordSimulator,
  options: { shardCount?: number; intents?: number; compression?: CompressionMethod } = {},
): Client {
  const rest = restFor(simulator);
  const manager = gatewayFor(simulator, rest, {
    intents: options.intents ?? INTENTS,
    largeThreshold: 250,
    shardCount: options.shardCount ?? null,
    compression: options.compression ?? null,
  });
  managers.push(manager);
  const result: Client = {
    manager,
    rest,
    events: [],
    errors: [],
    closes: [],
    resumes: [],
    timeline: [],
    of: <T>(event: GatewayDispatchEvents, shardId?: number) =>
      result.events
        .filter((entry) => entry.payload.t === event && (shardId === undefined || entry.shardId === shardId))
        .map((entry) => entry.payload.d as T),
  };
  manager.on(WebSocketShardEvents.Dispatch, (payload, shardId) => {
    result.events.push({ shardId, payload });
    result.timeline.push(payload.t);
  });
  manager.on(WebSocketShardEvents.Error, (error) => result.errors.push(error));
  manager.on(WebSocketShardEvents.Closed, (code, shardId) => {
    result.closes.push({ code, shardId });
    result.timeline.push(`closed ${code}`);
  });
  manager.on(WebSocketShardEvents.Resumed, (shardId) => {
    result.resumes.push(shardId);
    result.timeline.push('resumed');
  });
  return result;
}

const until = (assertion: () => void, timeout = 5000) => vi.waitFor(assertion, { timeout, interval: 10 });

/** The client's next such event (a dispatch of type `t`, if given), without polling. */
function nextEvent(
  bot: Client,
  event: WebSocketShardEvents.Resumed | WebSocketShardEvents.Dispatch,
  t?: GatewayDispatchEvents,
  timeoutMs = 5000,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      bot.manager.off(event, listener);
      reject(new Error(`no ${t ?? event} within ${timeoutMs} ms`));
    }, timeoutMs);
    const listener = (...args: unknown[]) => {
      if (t !== undefined && (args[0] as GatewayDispatchPayload).t !== t) return;
      clearTimeout(timer);
      bot.manager.off(event, listener);
      resolve();
    };
    bot.manager.on(event, listener);
  });
}

describe('DiscordSimulator gateway with @discordjs/ws', () => {
  it('sends READY, then a realistic GUILD_CREATE per guild, with increasing sequence numbers', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({
      id: guildId(0),
      name: 'Small',
      members: [member(1), member(2, 'idle'), member(3, 'offline')],
    });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    const [ready] = bot.events;
    expect(ready?.payload.t).toBe(GatewayDispatchEvents.Ready);
    if (ready?.payload.t !== GatewayDispatchEvents.Ready) throw new Error('no READY');
    expect(ready.payload.d).toMatchObject({
      v: 10,
      user: { id: simulator.botUser.id, bot: true },
      guilds: [{ id: guildId(0), unavailable: true }],
      resume_gateway_url: simulator.gatewayUrl,
      shard: [0, 1],
      application: { id: simulator.botUser.id },
    });

    const [guild] = bot.of<GatewayGuildCreateDispatchData>(GatewayDispatchEvents.GuildCreate);
    expect(guild).toMatchObject({ id: guildId(0), name: 'Small', member_count: 3, large: false });
    expect(guild?.members.map((entry) => entry.user.id)).toEqual([userId(1), userId(2), userId(3)]);
    // presences never list offline members
    expect(guild?.presences.map((presence) => [presence.user.id, presence.status])).toEqual([
      [userId(1), 'online'],
      [userId(2), 'idle'],
    ]);
    expect(bot.events.map((entry) => entry.payload.s)).toEqual([1, 2]);
    expect(simulator.identifyCount).toBe(1);
    expect(simulator.connectedShards).toEqual([0]);
  });

  it('lists only non-offline members of a large guild and chunks op 8 answers by 1,000', async () => {
    const simulator = await startSimulator();
    const members = Array.from({ length: 2500 }, (_, n) => member(n, n % 3 === 0 ? 'online' : 'offline'));
    const online = members.filter((entry) => entry.presence?.status !== 'offline').length;
    simulator.createGuild({ id: guildId(0), name: 'Large', members });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    const [guild] = bot.of<GatewayGuildCreateDispatchData>(GatewayDispatchEvents.GuildCreate);
    expect(guild).toMatchObject({ member_count: 2500, large: true });
    expect(guild?.members).toHaveLength(online);
    expect(guild?.presences).toHaveLength(online);

    await bot.manager.send(0, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: guildId(0), query: '', limit: 0, presences: true, nonce: 'all-members' },
    });
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildMembersChunk)).toHaveLength(3));
    const chunks = bot.of<GatewayGuildMembersChunkDispatchData>(GatewayDispatchEvents.GuildMembersChunk);
    expect(chunks.map((chunk) => [chunk.chunk_index, chunk.chunk_count, chunk.members.length])).toEqual([
      [0, 3, 1000],
      [1, 3, 1000],
      [2, 3, 500],
    ]);
    expect(new Set(chunks.flatMap((chunk) => chunk.members.map((entry) => entry.user.id))).size).toBe(2500);
    const presences = chunks.flatMap((chunk) => chunk.presences ?? []);
    expect(presences).toHaveLength(online);
    expect(presences.every((presence) => presence.status === 'online')).toBe(true);
    expect(chunks.every((chunk) => chunk.nonce === 'all-members' && chunk.guild_id === guildId(0))).toBe(
      true,
    );

    await bot.manager.send(0, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: guildId(0), user_ids: [userId(3), '42'], presences: true },
    });
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildMembersChunk)).toHaveLength(4));
    const byIds = bot.of<GatewayGuildMembersChunkDispatchData>(GatewayDispatchEvents.GuildMembersChunk)[3];
    expect(byIds).toMatchObject({ chunk_index: 0, chunk_count: 1, not_found: ['42'] });
    expect(byIds?.members.map((entry) => entry.user.id)).toEqual([userId(3)]);
    expect(byIds?.presences?.map((presence) => presence.user.id)).toEqual([userId(3)]);

    expect(simulator.memberRequests).toEqual([
      { shardId: 0, guild_id: guildId(0), query: '', limit: 0, presences: true, nonce: 'all-members' },
      { shardId: 0, guild_id: guildId(0), user_ids: [userId(3), '42'], presences: true },
    ]);
  });

  it('sends one PRESENCE_UPDATE per shared guild, with {id} only and jittered timestamps', async () => {
    const simulator = await startSimulator();
    for (const n of [0, 2, 4]) simulator.createGuild({ id: guildId(n), name: `G${n}`, members: [member(1)] });
    simulator.createGuild({ id: guildId(6), name: 'Elsewhere', members: [member(2)] });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(4));

    const start = 1_700_000_000_000;
    const copies = simulator.setPresence(
      userId(1),
      {
        status: 'dnd',
        activities: [gameActivity({ name: 'Chess', applicationId: CHESS, start })],
        client_status: { desktop: 'dnd', mobile: 'dnd' },
      },
      { jitterMs: 300 },
    );
    expect(copies).toBe(3);
    await until(() => expect(bot.of(GatewayDispatchEvents.PresenceUpdate)).toHaveLength(3));
    const updates = bot.of<GatewayPresenceUpdateDispatchData>(GatewayDispatchEvents.PresenceUpdate);
    expect(updates.map((update) => update.guild_id)).toEqual([guildId(0), guildId(2), guildId(4)]);
    for (const update of updates) {
      expect(update).toMatchObject({
        user: { id: userId(1) },
        status: 'dnd',
        client_status: { desktop: 'dnd' },
      });
      expect(Object.keys(update.user)).toEqual(['id']);
    }
    const starts = updates.map((update) => update.activities?.[0]?.timestamps?.start ?? 0);
    expect(new Set(starts).size).toBe(3);
    for (const value of starts) expect(Math.abs(value - start)).toBeLessThanOrEqual(300);
    const createdAt = updates.map((update) => update.activities?.[0]?.created_at ?? 0);
    expect(createdAt.map((value, index) => value - (starts[index] ?? 0))).toEqual([0, 0, 0]);
  });

  it('gives each of two shards only the guilds it owns', async () => {
    const simulator = await startSimulator({ shardCount: 2 });
    simulator.createGuild({ id: guildId(0), name: 'Even', members: [member(1), member(2)] });
    simulator.createGuild({ id: guildId(1), name: 'Odd', members: [member(1)] });
    expect([shardFor(guildId(0), 2), shardFor(guildId(1), 2)]).toEqual([0, 1]);
    const bot = client(simulator); // shard count from GET /gateway/bot
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(2));

    const guildsOf = (shardId: number) =>
      bot
        .of<GatewayGuildCreateDispatchData>(GatewayDispatchEvents.GuildCreate, shardId)
        .map((guild) => guild.id);
    expect(guildsOf(0)).toEqual([guildId(0)]);
    expect(guildsOf(1)).toEqual([guildId(1)]);
    expect(simulator.connectedShards).toEqual([0, 1]);

    simulator.setPresence(userId(1), { status: 'idle' });
    simulator.setPresence(userId(2), { status: 'idle' });
    await until(() => expect(bot.of(GatewayDispatchEvents.PresenceUpdate)).toHaveLength(3));
    const presences = (shardId: number) =>
      bot
        .of<GatewayPresenceUpdateDispatchData>(GatewayDispatchEvents.PresenceUpdate, shardId)
        .map((update) => [update.guild_id, update.user.id]);
    expect(presences(0)).toEqual([
      [guildId(0), userId(1)],
      [guildId(0), userId(2)],
    ]);
    expect(presences(1)).toEqual([[guildId(1), userId(1)]]);

    simulator.createGuild({ id: guildId(3), name: 'Joined later', members: [] });
    await until(() => expect(guildsOf(1)).toEqual([guildId(1), guildId(3)]));
    expect(guildsOf(0)).toEqual([guildId(0)]);
  });

  it('resumes after a dropped TCP connection and replays what was missed exactly once', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    simulator.faults.dropConnection();
    expect(simulator.connectedShards).toEqual([]);
    simulator.setPresence(userId(1), { status: 'idle' }); // while the socket is down
    await until(() => expect(bot.resumes).toEqual([0]));
    await simulator.waitForReady(0);

    expect(simulator.resumeCount).toBe(1);
    expect(simulator.identifyCount).toBe(1);
    expect(bot.closes.map((close) => close.code)).toEqual([1006]);
    expect(bot.of<GatewayPresenceUpdateDispatchData>(GatewayDispatchEvents.PresenceUpdate)).toMatchObject([
      { status: 'idle', user: { id: userId(1) } },
    ]);
    expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1);
    expect(bot.of(GatewayDispatchEvents.Resumed)).toHaveLength(1);
    const sequence = bot.events.map((entry) => entry.payload.s);
    expect(sequence).toEqual([...sequence].sort((a, b) => a - b));

    // and the resumed session carries on
    simulator.setPresence(userId(1), { status: 'online' });
    await until(() => expect(bot.of(GatewayDispatchEvents.PresenceUpdate)).toHaveLength(2));
  });

  it('cuts a connection halfway through a frame: the client drops the half, resumes, and gets it whole once', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    const debug: string[] = [];
    bot.manager.on(WebSocketShardEvents.Debug, (message) => debug.push(message));
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    simulator.faults.dropConnectionMidFrame();
    // Long enough that its half is more than a header: the client must see a frame it cannot finish.
    simulator.setPresence(userId(1), { status: 'idle', activities: [], client_status: { web: 'idle' } });
    simulator.setPresence(userId(1), { status: 'dnd' });
    await until(() => expect(bot.resumes).toEqual([0]));

    expect(bot.closes.map((close) => close.code)).toEqual([1006]);
    expect(simulator.identifyCount).toBe(1);
    // Resumed from GUILD_CREATE (s 2): the first update had arrived only in half, so both came in the
    // replay (the library counts RESUMED itself as a third).
    expect(debug).toContainEqual(expect.stringMatching(/Resuming session[\s\S]*sequence: 2\b/));
    expect(debug).toContainEqual(expect.stringMatching(/Resumed and replayed 3 events/));
    const statuses = bot.of<GatewayPresenceUpdateDispatchData>(GatewayDispatchEvents.PresenceUpdate);
    expect(statuses.map((presence) => presence.status)).toEqual(['idle', 'dnd']);
    const sequence = bot.events.map((entry) => entry.payload.s);
    expect(sequence).toEqual([...new Set(sequence)].sort((a, b) => a - b));
  });

  it('a zombie connection swallows everything until the client gives up on it and resumes elsewhere', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    simulator.faults.zombifyConnection();
    simulator.setPresence(userId(1), { status: 'idle' });
    // No ACK for a heartbeat: when the next is due, the client closes (4200) and resumes.
    await until(() => expect(bot.resumes).toEqual([0]), 4 * HEARTBEAT_MS + 2000);
    expect(bot.closes.map((close) => close.code)).toEqual([4200]);
    // The update came only in the replay: the zombie swallowed it for as long as the client kept it.
    const after = bot.timeline.slice(bot.timeline.lastIndexOf(GatewayDispatchEvents.GuildCreate) + 1);
    expect(after[0]).toBe('closed 4200');
    expect(after.filter((event) => event === GatewayDispatchEvents.PresenceUpdate)).toHaveLength(1);
    expect(bot.of<GatewayPresenceUpdateDispatchData>(GatewayDispatchEvents.PresenceUpdate)).toMatchObject([
      { status: 'idle' },
    ]);
    expect(simulator.identifyCount).toBe(1);
  });

  it('re-identifies with fresh GUILD_CREATEs after a non-resumable op 9', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    simulator.faults.invalidateSession(false);
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(2));
    expect(simulator.identifyCount).toBe(2);
    expect(simulator.resumeCount).toBe(0);
    expect(bot.of(GatewayDispatchEvents.Ready)).toHaveLength(2);
    const [first, second] = bot.of<{ session_id: string }>(GatewayDispatchEvents.Ready);
    expect(second?.session_id).not.toBe(first?.session_id);
  });

  it('keeps a dropped session resumable for sessionResumeWindowMs, and answers a later RESUME with op 9', async () => {
    const WINDOW_MS = 1000;
    const simulator = await startSimulator({ sessionResumeWindowMs: WINDOW_MS });
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    // Only Date is faked, so the window's clock moves when the test says while sockets and timers run. The
    // waits listen for events: vi.waitFor would advance the fake clock as it polls.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const resumed = nextEvent(bot, WebSocketShardEvents.Resumed);
      simulator.faults.dropConnection();
      vi.setSystemTime(Date.now() + WINDOW_MS); // the window's last moment
      await resumed;
      expect(simulator.resumeCount).toBe(1);
      expect(simulator.identifyCount).toBe(1);
      expect(simulator.refusedResumeCount).toBe(0);

      const identified = nextEvent(bot, WebSocketShardEvents.Dispatch, GatewayDispatchEvents.GuildCreate);
      simulator.faults.dropConnection();
      simulator.setPresence(userId(1), { status: 'idle' }); // buffered for a session that will not resume
      vi.setSystemTime(Date.now() + WINDOW_MS + 1);
      await identified;
    } finally {
      vi.useRealTimers();
    }
    expect(simulator.refusedResumeCount).toBe(1);
    expect(simulator.resumeCount).toBe(1);
    expect(simulator.identifyCount).toBe(2);
    expect(bot.resumes).toEqual([0]);
    const [first, second] = bot.of<{ session_id: string }>(GatewayDispatchEvents.Ready);
    expect(second?.session_id).not.toBe(first?.session_id);
    // The update lost with the old session shows in the new one's GUILD_CREATE.
    expect(bot.of(GatewayDispatchEvents.PresenceUpdate)).toEqual([]);
    const [, guild] = bot.of<GatewayGuildCreateDispatchData>(GatewayDispatchEvents.GuildCreate);
    expect(guild?.presences.map((presence) => presence.status)).toEqual(['idle']);
  });

  it('ends sessions without a connection on expireDetachedSessions(): the RESUME gets op 9 and the client identifies', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    const debug: string[] = [];
    bot.manager.on(WebSocketShardEvents.Debug, (message) => debug.push(message));
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    expect(simulator.faults.expireDetachedSessions()).toBe(0); // a session with a connection is kept
    simulator.faults.dropConnection();
    expect(simulator.faults.expireDetachedSessions()).toBe(1);
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(2));
    await simulator.waitForReady();

    expect(debug).toContainEqual(expect.stringMatching(/Resuming session/));
    expect(debug).toContainEqual(expect.stringMatching(/Invalid session; will attempt to resume: false/));
    expect(simulator.refusedResumeCount).toBe(1);
    expect(simulator.resumeCount).toBe(0);
    expect(simulator.identifyCount).toBe(2);
    expect(bot.resumes).toEqual([]);
    expect(bot.of(GatewayDispatchEvents.Ready)).toHaveLength(2);
  });

  it('speaks zlib-stream to @discordjs/ws: READY, a large GUILD_CREATE, chunks and dispatches, and resumes', async () => {
    const simulator = await startSimulator();
    // Large enough that GUILD_CREATE and its chunks span many deflate output buffers.
    const members = Array.from({ length: 2500 }, (_, n) => member(n));
    simulator.createGuild({ id: guildId(0), name: 'Large', members });
    const bot = client(simulator, { compression: CompressionMethod.ZlibNative });
    const debug: string[] = [];
    bot.manager.on(WebSocketShardEvents.Debug, (message) => debug.push(message));
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));

    expect(debug).toContainEqual(expect.stringMatching(/compress=zlib-stream/));
    expect(debug).toContainEqual(expect.stringMatching(/Identifying[\s\S]*compression: zlib-stream/));
    const [guild] = bot.of<GatewayGuildCreateDispatchData>(GatewayDispatchEvents.GuildCreate);
    expect(guild).toMatchObject({ id: guildId(0), member_count: 2500, large: true });
    expect(guild?.members).toHaveLength(2500);

    await bot.manager.send(0, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: guildId(0), query: '', limit: 0, presences: true },
    });
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildMembersChunk)).toHaveLength(3));
    const chunks = bot.of<GatewayGuildMembersChunkDispatchData>(GatewayDispatchEvents.GuildMembersChunk);
    expect(chunks.map((chunk) => chunk.chunk_index)).toEqual([0, 1, 2]);

    // A new connection has a new deflate context, and the replay goes through it.
    simulator.faults.dropConnection();
    simulator.setPresence(userId(1), { status: 'idle' });
    await until(() => expect(bot.resumes).toEqual([0]));
    simulator.faults.dropConnectionMidFrame();
    simulator.setPresence(userId(1), { status: 'dnd' });
    simulator.setPresence(userId(1), { status: 'online' });
    await until(() => expect(bot.resumes).toEqual([0, 0]));
    simulator.setPresence(userId(2), { status: 'idle' });

    await until(() => expect(bot.of(GatewayDispatchEvents.PresenceUpdate)).toHaveLength(4));
    const updates = bot.of<GatewayPresenceUpdateDispatchData>(GatewayDispatchEvents.PresenceUpdate);
    expect(updates.map((update) => [update.user.id, update.status])).toEqual([
      [userId(1), 'idle'],
      [userId(1), 'dnd'],
      [userId(1), 'online'],
      [userId(2), 'idle'],
    ]);
    expect(bot.closes.map((close) => close.code)).toEqual([1006, 1006]);
    expect(simulator.identifyCount).toBe(1);
    expect(simulator.resumeCount).toBe(2);
    expect(bot.errors).toEqual([]);
    const sequence = bot.events.map((entry) => entry.payload.s);
    expect(sequence).toEqual([...new Set(sequence)].sort((a, b) => a - b));
  });

  it('lists a guild in full once per bot in 30 s, across sessions: inside it, RATE_LIMITED; by user id, always', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1), member(2, 'offline')] });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1));
    const listAll = (nonce: string) =>
      bot.manager.send(0, {
        op: GatewayOpcodes.RequestGuildMembers,
        d: { guild_id: guildId(0), query: '', limit: 0, presences: true, nonce },
      });
    await listAll('first');
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildMembersChunk)).toHaveLength(1));

    // A new session does not escape the limit: Discord counts per bot.
    simulator.faults.invalidateSession(false);
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(2));
    await listAll('second');
    await bot.manager.send(0, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: guildId(0), user_ids: [userId(2)], presences: true, nonce: 'by-id' },
    });
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildMembersChunk)).toHaveLength(2));
    const limited = bot.of<{ opcode: number; retry_after: number; meta: unknown }>(
      GatewayDispatchEvents.RateLimited,
    );
    expect(limited).toEqual([
      {
        opcode: GatewayOpcodes.RequestGuildMembers,
        retry_after: expect.any(Number),
        meta: { guild_id: guildId(0), nonce: 'second' },
      },
    ]);
    expect(limited[0]?.retry_after).toBeGreaterThan(25);
    expect(limited[0]?.retry_after).toBeLessThanOrEqual(30);
    const chunks = bot.of<GatewayGuildMembersChunkDispatchData>(GatewayDispatchEvents.GuildMembersChunk);
    expect(chunks.map((chunk) => chunk.nonce)).toEqual(['first', 'by-id']);
  });

  it('resumes on the same socket after a resumable op 9, and after op 7, close 4000 and missed heartbeat ACKs', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    await bot.manager.connect();

    simulator.faults.invalidateSession(true);
    await until(() => expect(simulator.resumeCount).toBe(1));
    await simulator.waitForReady();
    expect(bot.closes).toEqual([]); // no new connection was needed

    simulator.faults.requestReconnect();
    await until(() => expect(simulator.resumeCount).toBe(2));
    await until(() => expect(bot.resumes).toHaveLength(2));

    simulator.faults.closeConnection(4000);
    await until(() => expect(simulator.resumeCount).toBe(3));
    await until(() => expect(bot.resumes).toHaveLength(3));

    const closesBefore = bot.closes.length;
    simulator.faults.stopHeartbeatAcks();
    // the zombie check: a heartbeat goes unacknowledged, the next one closes with 4200 and resumes
    await until(() => expect(bot.closes.slice(closesBefore).map((close) => close.code)).toEqual([4200]));
    simulator.faults.resumeHeartbeatAcks();
    await until(() => expect(simulator.resumeCount).toBe(4));
    await until(() => expect(bot.resumes).toHaveLength(4));

    expect(simulator.identifyCount).toBe(1);
    expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(1);
  });

  it('ends with an error and no reconnect on close 4004', async () => {
    const simulator = await startSimulator();
    const bot = client(simulator);
    const debug: string[] = [];
    bot.manager.on(WebSocketShardEvents.Debug, (message) => debug.push(message));
    await bot.manager.connect();

    simulator.faults.closeConnection(4004);
    await until(() => expect(bot.errors.map((error) => error.message)).toEqual(['Authentication failed']));
    // The library's own word that it will not come back (a reconnect or resume says "Recover: Reconnect"
    // or "Resume"), and the shard idle once it has said so: no timer of its is left to reconnect on.
    await until(() =>
      expect(debug).toContainEqual(expect.stringMatching(/Destroying shard[\s\S]*Recover: none/)),
    );
    await until(async () =>
      expect([...(await bot.manager.fetchStatus()).values()]).toEqual([WebSocketShardStatus.Idle]),
    );
    expect(debug.filter((message) => /Recover:/.test(message))).toHaveLength(1);
    expect(simulator.identifyCount).toBe(1);
    expect(simulator.resumeCount).toBe(0);
    expect(simulator.connectedShards).toEqual([]);
    expect(bot.closes.map((close) => close.code)).toEqual([4004]);
  });

  it('dispatches member, user and guild changes as Discord does', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'A', members: [member(1)] });
    simulator.createGuild({ id: guildId(2), name: 'B', members: [member(1)] });
    const bot = client(simulator);
    await bot.manager.connect();
    await until(() => expect(bot.of(GatewayDispatchEvents.GuildCreate)).toHaveLength(2));
    const types = () => bot.events.slice(3).map((entry) => entry.payload.t);

    simulator.addMember(guildId(0), member(7, 'idle'));
    simulator.addMember(guildId(0), member(8, 'offline'));
    simulator.updateMember(guildId(0), { user: { id: userId(7), global_name: 'Seven' }, nick: 'seven' });
    simulator.updateUser({ id: userId(1), avatar: '0123456789abcdef0123456789abcdef' });
    simulator.updateUser({ id: userId(1), accent_color: 0xff0000 }); // REST-only: nothing on the gateway
    simulator.removeMember(guildId(0), userId(8));
    simulator.updateUser({ id: simulator.botUser.id, username: 'Renamed bot' });
    simulator.deleteGuild(guildId(2), { unavailable: true });
    simulator.setPresence(userId(1), { status: 'idle' }); // only the available guild hears it
    simulator.restoreGuild(guildId(2));
    simulator.deleteGuild(guildId(0));

    await until(() => expect(types()).toHaveLength(12));
    expect(types()).toEqual([
      'GUILD_MEMBER_ADD',
      'PRESENCE_UPDATE',
      'GUILD_MEMBER_ADD',
      'GUILD_MEMBER_UPDATE',
      'GUILD_MEMBER_UPDATE',
      'GUILD_MEMBER_UPDATE',
      'GUILD_MEMBER_REMOVE',
      'USER_UPDATE',
      'GUILD_DELETE',
      'PRESENCE_UPDATE',
      'GUILD_CREATE',
      'GUILD_DELETE',
    ]);
    const payloads = bot.events.slice(3).map((entry) => entry.payload.d);
    expect(payloads[0]).toMatchObject({ guild_id: guildId(0), user: { id: userId(7), username: 'member7' } });
    expect(payloads[3]).toMatchObject({
      guild_id: guildId(0),
      nick: 'seven',
      user: { id: userId(7), username: 'member7', global_name: 'Seven' },
    });
    expect(payloads[4]).toMatchObject({
      guild_id: guildId(0),
      user: { avatar: '0123456789abcdef0123456789abcdef' },
    });
    expect(payloads[5]).toMatchObject({ guild_id: guildId(2) });
    expect(payloads[6]).toMatchObject({ guild_id: guildId(0), user: { id: userId(8) } });
    expect(payloads[7]).toMatchObject({ id: simulator.botUser.id, username: 'Renamed bot' });
    expect(payloads[8]).toEqual({ id: guildId(2), unavailable: true });
    expect(payloads[9]).toMatchObject({ guild_id: guildId(0), status: 'idle' });
    expect(payloads[10]).toMatchObject({ id: guildId(2), member_count: 1 });
    expect(payloads[11]).toEqual({ id: guildId(0) });
    expect(() => simulator.addMember(guildId(0), member(9))).toThrow(/unknown guild/);
  });

  it('delivers DMs, and guild message content only with MESSAGE_CONTENT or a mention', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const full = client(simulator);
    const partial = client(simulator, {
      intents: INTENTS & ~GatewayIntentBits.MessageContent & ~GatewayIntentBits.GuildPresences,
    });
    await Promise.all([full.manager.connect(), partial.manager.connect()]);

    const dm = simulator.sendMessage({ author: userId(1), content: '?apikey' });
    expect(dm.channel_id).toBe(simulator.dmChannelFor(userId(1)));
    simulator.sendMessage({ guildId: guildId(0), author: userId(1), content: 'hello all' });
    simulator.sendMessage({
      guildId: guildId(0),
      author: userId(1),
      content: `<@${simulator.botUser.id}> hi`,
    });

    for (const bot of [full, partial]) {
      await until(() => expect(bot.of(GatewayDispatchEvents.MessageCreate)).toHaveLength(3));
    }
    const contents = (bot: Client) =>
      bot.of<APIMessage>(GatewayDispatchEvents.MessageCreate).map((m) => m.content);
    expect(contents(full)).toEqual(['?apikey', 'hello all', `<@${simulator.botUser.id}> hi`]);
    expect(contents(partial)).toEqual(['?apikey', '', `<@${simulator.botUser.id}> hi`]);
    const [, inGuild] = full.of<APIMessage & { guild_id?: string; member?: unknown }>(
      GatewayDispatchEvents.MessageCreate,
    );
    expect(inGuild).toMatchObject({ guild_id: guildId(0), author: { id: userId(1) }, type: 0, mentions: [] });
    expect(inGuild?.member).toBeDefined();
    // without GUILD_PRESENCES, GUILD_CREATE lists neither members nor presences
    const [guild] = partial.of<GatewayGuildCreateDispatchData>(GatewayDispatchEvents.GuildCreate);
    expect(guild).toMatchObject({ member_count: 1, members: [], presences: [] });
  });
});

describe('DiscordSimulator REST with @discordjs/rest', () => {
  it('answers GET /users/:id with the profile, and Discord errors otherwise', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    simulator.setProfile(userId(1), { banner: 'a_0123456789abcdef0123456789abcdef', accent_color: 0x5865f2 });
    const bot = client(simulator);

    const user = (await bot.rest.get(Routes.user(userId(1)))) as APIUser;
    expect(user).toMatchObject({
      id: userId(1),
      username: 'member1',
      banner: 'a_0123456789abcdef0123456789abcdef',
      accent_color: 0x5865f2,
    });
    expect(await bot.rest.get(Routes.user())).toMatchObject({ id: simulator.botUser.id, bot: true });
    expect(simulator.requestCount('GET /users/:id')).toBe(1);
    expect(simulator.requestCount(`GET /users/${userId(1)}`)).toBe(1);

    const unknown = await bot.rest.get(Routes.user('42')).catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(DiscordAPIError);
    expect(unknown).toMatchObject({ status: 404, code: 10013, message: 'Unknown User' });

    simulator.updateUser({ id: userId(1), username: 'renamed' });
    expect(await bot.rest.get(Routes.user(userId(1)))).toMatchObject({ username: 'renamed' });

    const noAuth = await fetch(`${simulator.apiUrl}/v10/users/${userId(1)}`);
    expect(noAuth.status).toBe(401);
    expect(await noAuth.json()).toEqual({ message: '401: Unauthorized', code: 0 });
    const nowhere = await fetch(`${simulator.apiUrl}/v10/nowhere`, {
      headers: { authorization: `Bot ${simulator.token}` },
    });
    expect(nowhere.status).toBe(404);
    expect(await nowhere.json()).toEqual({ message: '404: Not Found', code: 0 });

    const gateway = await fetch(`${simulator.apiUrl}/v10/gateway/bot`, {
      headers: { authorization: `Bot ${simulator.token}` },
    });
    const info = (await gateway.json()) as APIGatewayBotInfo;
    expect(info).toEqual({
      url: simulator.gatewayUrl,
      shards: 1,
      session_start_limit: {
        total: 1000,
        remaining: 1000,
        reset_after: expect.any(Number),
        max_concurrency: 1,
      },
    });
    // A day's window, counted from when the simulator was made.
    expect(info.session_start_limit.reset_after).toBeLessThanOrEqual(24 * 60 * 60 * 1000);
    expect(info.session_start_limit.reset_after).toBeGreaterThan(24 * 60 * 60 * 1000 - 60_000);
    expect(gateway.headers.get('x-ratelimit-limit')).toBe('50');
    expect(gateway.headers.get('x-ratelimit-bucket')).toMatch(/^[0-9a-f]{32}$/);
  });

  it('opens a DM, posts the bot message, echoes it on the gateway and lets tests wait for it', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const bot = client(simulator);
    await bot.manager.connect();

    const waiting = simulator.waitForMessage((message) => message.content.startsWith('Your key'));
    const channel = (await bot.rest.post(Routes.userChannels(), {
      body: { recipient_id: userId(1) },
    })) as APIDMChannel;
    expect(channel).toMatchObject({
      id: simulator.dmChannelFor(userId(1)),
      type: 1,
      recipients: [{ id: userId(1) }],
    });
    const posted = (await bot.rest.post(Routes.channelMessages(channel.id), {
      body: { content: 'Your key: abc' },
    })) as APIMessage;
    expect(posted).toMatchObject({
      channel_id: channel.id,
      content: 'Your key: abc',
      author: { id: simulator.botUser.id, bot: true },
      type: 0,
      mentions: [],
      attachments: [],
      embeds: [],
    });
    expect(await waiting).toEqual(posted);
    expect(simulator.sentMessages(channel.id)).toEqual([posted]);
    expect(simulator.sentMessages('1')).toEqual([]);
    await until(() =>
      expect(bot.of<APIMessage>(GatewayDispatchEvents.MessageCreate)).toMatchObject([{ id: posted.id }]),
    );

    const empty = await bot.rest
      .post(Routes.channelMessages(channel.id), { body: {} })
      .catch((error: unknown) => error);
    expect(empty).toMatchObject({ status: 400, code: 50006 });
    const unknownChannel = await bot.rest
      .post(Routes.channelMessages('42'), { body: { content: 'x' } })
      .catch((error: unknown) => error);
    expect(unknownChannel).toMatchObject({ status: 404, code: 10003 });

    await expect(simulator.waitForMessage(() => true, 50)).rejects.toThrow(
      /no message from the bot matched within 50 ms/,
    );
  });

  it('paces @discordjs/rest with rate-limit headers and answers 429 to a client that ignores them', async () => {
    const simulator = await startSimulator({ rateLimit: { limit: 2, windowMs: 300 } });
    simulator.createGuild({ id: guildId(0), name: 'G', members: [member(1)] });
    const headers = { authorization: `Bot ${simulator.token}` };
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await fetch(`${simulator.apiUrl}/v10/users/@me`, { headers })).status);
    expect(statuses).toEqual([200, 200, 429]);
    const limited = await fetch(`${simulator.apiUrl}/v10/users/@me`, { headers });
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(await limited.json()).toMatchObject({ message: 'You are being rate limited.', global: false });

    const bot = client(simulator);
    const users = await Promise.all([1, 1, 1, 1, 1].map((n) => bot.rest.get(Routes.user(userId(n)))));
    expect(users).toHaveLength(5);
    expect(
      simulator.requests.filter((request) => request.status === 429 && request.route === '/users/:id'),
    ).toEqual([]);
  });

  it('serves small PNGs on the CDN paths and 404s malformed ones', async () => {
    const simulator = await startSimulator();
    const png = async (path: string) => {
      const response = await fetch(`${simulator.cdnUrl}${path}`);
      return {
        status: response.status,
        type: response.headers.get('content-type'),
        body: Buffer.from(await response.arrayBuffer()),
      };
    };
    const avatar = await png(`/avatars/${userId(1)}/0123456789abcdef0123456789abcdef.png?size=128`);
    expect(avatar.status).toBe(200);
    expect(avatar.type).toBe('image/png');
    expect(avatar.body.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(avatar.body.readUInt32BE(16)).toBe(128); // IHDR width

    for (const path of [
      `/avatars/${userId(1)}/a_0123456789abcdef0123456789abcdef.gif`,
      `/banners/${userId(1)}/a_0123456789abcdef0123456789abcdef.gif?size=1024`,
      '/embed/avatars/3.png',
      '/app-assets/383226320970055681/565945350290210816.png',
      '/emojis/123456789012345678.webp',
    ]) {
      expect((await png(path)).type, path).toBe('image/png');
    }
    const other = await png(`/avatars/${userId(1)}/fedcba9876543210fedcba9876543210.png?size=128`);
    expect(other.body.equals(avatar.body)).toBe(false); // the colour comes from the hash

    for (const path of [
      `/avatars/${userId(1)}/hash.bmp`,
      '/avatars/not-an-id/hash.png',
      '/embed/avatars/6.png',
      '/emojis/abc.png',
      '/avatars/1',
    ]) {
      expect((await png(path)).status, path).toBe(404);
    }
    expect((await png(`/avatars/${userId(1)}/hash.png?size=100`)).status).toBe(400);
    // every request counts, answered or refused
    expect(simulator.requestCount('GET /avatars/:id/:file')).toBe(6);
    expect(simulator.requestCount(`GET /avatars/${userId(1)}/hash.png`)).toBe(1);
  });
});

describe('DiscordSimulator gateway protocol', () => {
  interface Raw {
    ws: WebSocket;
    received: Array<{ op: number; t: string | null; s: number | null; d: unknown }>;
    closed: Promise<{ code: number; reason: string }>;
  }

  async function raw(simulator: DiscordSimulator, query = '?v=10&encoding=json'): Promise<Raw> {
    const ws = new WebSocket(`${simulator.gatewayUrl}${query}`);
    sockets.push(ws);
    const received: Raw['received'] = [];
    ws.on('message', (data) => received.push(JSON.parse(String(data))));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return { ws, received, closed };
  }

  const identify = (token: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      op: GatewayOpcodes.Identify,
      d: { token, intents: INTENTS, properties: { os: 'linux', browser: 'test', device: 'test' }, ...extra },
    });

  it('says HELLO and answers heartbeats', async () => {
    const simulator = await startSimulator();
    const socket = await raw(simulator);
    socket.ws.send(JSON.stringify({ op: GatewayOpcodes.Heartbeat, d: null }));
    await until(() => expect(socket.received.map((payload) => payload.op)).toEqual([10, 11]));
    expect(socket.received[0]).toEqual({ t: null, s: null, op: 10, d: { heartbeat_interval: HEARTBEAT_MS } });
  });

  it.each([
    ['a wrong token', identify('nope'), 4004],
    ['a wrong shard', identify('simulator-token', { shard: [2, 2] }), 4010],
    ['invalid JSON', '{op: 2', 4002],
    ['an unknown opcode', JSON.stringify({ op: 99, d: null }), 4001],
    ['op 8 before identifying', JSON.stringify({ op: 8, d: { guild_id: '1', query: '', limit: 0 } }), 4003],
  ])('closes on %s', async (_what, payload, code) => {
    const simulator = await startSimulator();
    const socket = await raw(simulator);
    socket.ws.send(payload);
    expect((await socket.closed).code).toBe(code);
  });

  it('spends a session start per IDENTIFY accepted, none per RESUME; past the last, 4004; a new window resets it', async () => {
    const DAY_MS = 24 * 60 * 60 * 1000;
    const simulator = await startSimulator({
      sessionStartLimit: { total: 3, remaining: 1, resetAfterMs: DAY_MS },
    });
    const limit = async () => {
      const response = await fetch(`${simulator.apiUrl}/v10/gateway/bot`, {
        headers: { authorization: `Bot ${simulator.token}` },
      });
      return ((await response.json()) as APIGatewayBotInfo).session_start_limit;
    };
    expect(await limit()).toMatchObject({ total: 3, remaining: 1 });

    // Refused for a wrong token: nothing spent.
    const stranger = await raw(simulator);
    stranger.ws.send(identify('nope'));
    expect((await stranger.closed).code).toBe(4004);
    expect(simulator.sessionStarts).toMatchObject({ remaining: 1, refused: 0 });

    const first = await raw(simulator);
    first.ws.send(identify(simulator.token));
    await until(() => expect(first.received.at(-1)).toMatchObject({ op: 0, t: 'READY' }));
    const ready = first.received.at(-1) as { s: number; d: { session_id: string } };
    expect(await limit()).toMatchObject({ total: 3, remaining: 0 });

    // A RESUME spends nothing, even with none left.
    first.ws.terminate();
    const resumed = await raw(simulator);
    resumed.ws.send(
      JSON.stringify({
        op: GatewayOpcodes.Resume,
        d: { token: simulator.token, session_id: ready.d.session_id, seq: ready.s },
      }),
    );
    await until(() => expect(resumed.received.at(-1)).toMatchObject({ op: 0, t: 'RESUMED' }));
    expect(simulator.sessionStarts).toMatchObject({ remaining: 0, refused: 0 });

    // One IDENTIFY past the last: refused as Discord refuses a token it has reset.
    const past = await raw(simulator);
    past.ws.send(identify(simulator.token));
    expect(await past.closed).toEqual({ code: 4004, reason: 'Authentication failed.' });
    expect(simulator.sessionStarts).toMatchObject({ remaining: 0, refused: 1 });
    expect(simulator.identifyCount).toBe(3);

    // The next window has the whole budget again.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + DAY_MS });
    try {
      expect(await limit()).toMatchObject({ total: 3, remaining: 3 });
      expect(simulator.sessionStarts.resetAfterMs).toBeLessThanOrEqual(DAY_MS);
    } finally {
      vi.useRealTimers();
    }
  });

  it('closes 4014 when a privileged intent is not enabled for the app', async () => {
    const simulator = await startSimulator({ allowedIntents: GatewayIntentBits.GuildMembers });
    const socket = await raw(simulator);
    socket.ws.send(identify(simulator.token));
    expect(await socket.closed).toEqual({ code: 4014, reason: 'Disallowed intent(s).' });
  });

  it('refuses other versions, encodings and compression methods with a clear close', async () => {
    const simulator = await startSimulator();
    expect((await (await raw(simulator, '?v=9&encoding=json')).closed).code).toBe(4012);
    expect(await (await raw(simulator, '?v=10&encoding=etf')).closed).toEqual({
      code: 1003,
      reason: 'the simulated gateway speaks encoding=json only (asked: etf)',
    });
    expect(await (await raw(simulator, '?v=10&encoding=json&compress=zstd-stream')).closed).toEqual({
      code: 1003,
      reason: 'the simulated gateway compresses with compress=zlib-stream only (asked: zstd-stream)',
    });
  });

  it('sends a zlib-stream client binary frames from one deflate context, each cut at a sync flush', async () => {
    const simulator = await startSimulator();
    simulator.createGuild({
      id: guildId(0),
      name: 'G',
      members: Array.from({ length: 300 }, (_, n) => member(n)),
    });
    const ws = new WebSocket(`${simulator.gatewayUrl}?v=10&encoding=json&compress=zlib-stream`);
    sockets.push(ws);
    const frames: Array<{ data: Buffer; binary: boolean }> = [];
    ws.on('message', (data, binary) => frames.push({ data: data as Buffer, binary }));
    await once(ws, 'open');
    // What the client sends stays JSON text.
    ws.send(JSON.stringify({ op: GatewayOpcodes.Heartbeat, d: null }));
    ws.send(identify(simulator.token));
    await until(() => expect(frames).toHaveLength(4)); // HELLO, ACK, READY, GUILD_CREATE
    for (let n = 0; n < 40; n++) simulator.setPresence(userId(n), { status: n % 2 ? 'idle' : 'dnd' });
    await until(() => expect(frames).toHaveLength(44));

    expect(frames.every((entry) => entry.binary)).toBe(true);
    const syncFlush = Buffer.from([0x00, 0x00, 0xff, 0xff]);
    expect(frames.every((entry) => entry.data.subarray(-4).equals(syncFlush))).toBe(true);
    expect(frames[0]?.data[0]).toBe(0x78); // the zlib header opens the stream once
    // A later frame means nothing without the ones before it.
    expect(() => inflateSync(frames[1]?.data ?? Buffer.alloc(0))).toThrow();

    // Each frame inflates, after those before it, to exactly one payload.
    const payloads: Array<{ op: number; t: string | null; s: number | null; d: unknown }> = [];
    let inflated = 0;
    for (let index = 1; index <= frames.length; index++) {
      const stream = Buffer.concat(frames.slice(0, index).map((entry) => entry.data));
      const text = inflateSync(stream, { finishFlush: zlibConstants.Z_SYNC_FLUSH });
      payloads.push(JSON.parse(text.subarray(inflated).toString('utf8')));
      inflated = text.length;
    }
    expect(payloads[0]).toEqual({ t: null, s: null, op: 10, d: { heartbeat_interval: HEARTBEAT_MS } });
    expect(payloads.slice(1, 4).map((payload) => payload.op)).toEqual([11, 0, 0]);
    expect(payloads.slice(2).map((payload) => payload.t)).toEqual([
      'READY',
      'GUILD_CREATE',
      ...Array(40).fill('PRESENCE_UPDATE'),
    ]);
    expect(payloads.slice(2).map((payload) => payload.s)).toEqual(
      Array.from({ length: 42 }, (_, n) => n + 1),
    );
    const presences = payloads.slice(4).map((payload) => payload.d as GatewayPresenceUpdateDispatchData);
    expect(presences.map((presence) => presence.user.id)).toEqual(
      Array.from({ length: 40 }, (_, n) => userId(n)),
    );

    // The session's replay is JSON text: it resumes on an uncompressed connection as well.
    const ready = payloads[2] as { s: number; d: { session_id: string } };
    ws.terminate();
    simulator.setPresence(userId(0), { status: 'online' });
    const plain = await raw(simulator);
    plain.ws.send(
      JSON.stringify({
        op: GatewayOpcodes.Resume,
        d: { token: simulator.token, session_id: ready.d.session_id, seq: 42 },
      }),
    );
    await until(() => expect(plain.received.at(-1)).toMatchObject({ op: 0, t: 'RESUMED' }));
    expect(plain.received.map((payload) => [payload.t, payload.s])).toEqual([
      [null, null],
      ['PRESENCE_UPDATE', 43],
      ['RESUMED', 44],
    ]);
  });

  it('answers RESUME of an unknown session with op 9 false, and 4005 to a second IDENTIFY', async () => {
    const simulator = await startSimulator();
    const socket = await raw(simulator);
    socket.ws.send(
      JSON.stringify({ op: GatewayOpcodes.Resume, d: { token: simulator.token, session_id: 'x', seq: 3 } }),
    );
    await until(() => expect(socket.received.at(-1)).toEqual({ t: null, s: null, op: 9, d: false }));
    expect(simulator.refusedResumeCount).toBe(1);
    socket.ws.send(identify(simulator.token));
    await until(() => expect(socket.received.at(-1)).toMatchObject({ op: 0, t: 'READY', s: 1 }));
    socket.ws.send(identify(simulator.token));
    expect((await socket.closed).code).toBe(4005);
  });
});
