import '../../src/ops/tick-shape.js';
import type { GatewayGuildCreateDispatchData } from 'discord-api-types/v10';
import type { OutgoingDispatch, SimulatedGateway } from '../../src/simulator/gateway.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import type { SimGuild } from '../../src/simulator/state.js';
import { type Message, onMessage, report, serveBenchProcess } from '../lib/child.js';
import { markerText, nowMicros } from '../lib/fanout-marker.js';
import { populationPresence, populationUser } from '../lib/population.js';
import { BENCH_GUILD, benchUser, benchUserId, realisticPresence } from '../lib/workload.js';

/**
 * A simulated Discord in a process of its own, so that what it spends (making a member listing,
 * answering REST and the CDN, its gateway's sockets) is not counted in the process measured, and the
 * service's process holds what it holds in production: no Discord. Its one guild is either
 *
 * - MEMBERS members of the population (bench/lib/population.ts), the first MEMBERS users, listed on
 *   REQUEST_GUILD_MEMBERS in GUILD_MEMBERS_CHUNKs of 1,000 members, with the presences of those not
 *   offline. The startup scenario lists a large guild from it; the memory scenario's services each have one
 *   with a single member, and fetch their users' profiles from it (GET /users/:id, at its rate limit), as
 *   from Discord.
 * - or, with `WORKLOAD=realistic`, USERS bench users (1 unless told) with the realistic presence of
 *   bench/lib/workload.ts (tracks started at START, epoch ms), the users the service process serves
 *   (bench/processes/service.ts); with `MARKER`, user 0's custom status is that text.
 *
 * One change to what the simulator sends, made here: Discord's GUILD_CREATE of a guild over 75,000 members
 * lists no members and no presences (besides the bot and users in voice: none here), where the simulator
 * lists every online member, which for this guild would be one frame of over 100 MB.
 *
 * Answers `stats`: the time the simulator spent making and queueing the listing (its event loop is busy
 * with that, all chunks at once, when the request arrives), the listing's size in bytes, the bytes its
 * gateway sent on the wire (compressed or not), and the IDENTIFYs, RESUMEs and whole-guild listings it got. On
 * `{type: 'updates', perSecond, users}` the first `users` bench users' custom statuses change in turn,
 * `perSecond` changes a second in all, as PRESENCE_UPDATEs through the gateway; each status is a fan-out
 * marker with its send time, so a subscriber can time it from the Discord frame on (0 stops them). On
 * `{type: 'update', seq}` user 0's custom status changes once, to the marker of `seq` (fanout).
 */
const MEMBERS = Number(process.env.MEMBERS ?? 250_000);
/**
 * Discord's documentation of GUILD_CREATE: "if the guild has over 75k members, members and presences
 * returned in this event will only contain your bot and users in voice channels".
 */
const GUILD_CREATE_MEMBER_LIMIT = 75_000;

const built = process.hrtime.bigint();
const simulator = new DiscordSimulator();
await simulator.start();
const start = Number(process.env.START ?? Date.now() - 30_000);
const marker = process.env.MARKER;
simulator.createGuild({
  id: BENCH_GUILD,
  name: 'Bench',
  members:
    process.env.WORKLOAD === 'realistic'
      ? Array.from({ length: Number(process.env.USERS ?? 1) }, (_, n) => ({
          user: benchUser(n),
          presence: realisticPresence(
            n,
            n === 0 && marker !== undefined ? { start, customText: marker } : { start },
          ),
        }))
      : Array.from({ length: MEMBERS }, (_, n) => ({
          user: populationUser(n),
          presence: populationPresence(n, start),
        })),
});
const buildSeconds = Number(process.hrtime.bigint() - built) / 1e9;

const gateway = (simulator as unknown as { gateway: SimulatedGateway }).gateway;
const listed = gateway.guildCreate.bind(gateway);
gateway.guildCreate = (guild: SimGuild, session): OutgoingDispatch => {
  if (guild.members.size <= GUILD_CREATE_MEMBER_LIMIT) return listed(guild, session);
  const payload = listed({ ...guild, members: new Map() }, session);
  const d = payload.d as GatewayGuildCreateDispatchData;
  return { ...payload, d: { ...d, large: true, member_count: guild.members.size } } as OutgoingDispatch;
};

interface SessionLike {
  replay: Array<{ frame: string }>;
}
const inner = gateway as unknown as { requestMembers(session: SessionLike, data: unknown): void };
const requestMembers = inner.requestMembers.bind(gateway);
let listingSeconds = 0;
let listingBytes = 0;
let listingFrames = 0;
inner.requestMembers = (session, data) => {
  const before = session.replay.length;
  const started = process.hrtime.bigint();
  requestMembers(session, data);
  listingSeconds += Number(process.hrtime.bigint() - started) / 1e9;
  // The frames it made wait in the session's replay buffer (10,000 frames: this listing fits).
  for (const { frame } of session.replay.slice(before)) {
    listingBytes += Buffer.byteLength(frame);
    listingFrames++;
  }
};

let updates: NodeJS.Timeout | undefined;
let updateSeq = 0;
onMessage<Message & { perSecond: number; users: number }>('updates', ({ perSecond, users }) => {
  clearInterval(updates);
  if (perSecond <= 0) return;
  let next = 0;
  updates = setInterval(() => {
    const n = next++ % users;
    const customText = markerText(++updateSeq, nowMicros());
    simulator.setPresence(benchUserId(n), realisticPresence(n, { start, customText }));
  }, 1000 / perSecond);
});

onMessage<Message & { seq: number }>('update', ({ seq }) => {
  simulator.setPresence(
    benchUserId(0),
    realisticPresence(0, { start, customText: markerText(seq, nowMicros()) }),
  );
});

serveBenchProcess(() => {
  clearInterval(updates);
  return simulator.stop();
});
onMessage('stats', () =>
  report({
    type: 'stats',
    listingSeconds,
    listingBytes,
    listingFrames,
    gatewayBytes: simulator.gatewayBytesSent,
    identifies: simulator.identifyCount,
    resumes: simulator.resumeCount,
    listings: simulator.memberRequests.filter((request) => 'query' in request).length,
  }),
);
report({
  type: 'ready',
  token: simulator.token,
  apiUrl: simulator.apiUrl,
  cdnUrl: simulator.cdnUrl,
  buildSeconds,
});
