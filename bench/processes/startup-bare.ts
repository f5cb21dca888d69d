import '../../src/ops/tick-shape.js';
import { REST } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import { GatewayDispatchEvents, GatewayOpcodes } from 'discord-api-types/v10';
import { INTENTS, LARGE_THRESHOLD } from '../../src/discord/intents.js';
import { report, serveBenchProcess } from '../lib/child.js';

/**
 * The transport floor of the startup scenario: the same client library the service uses (@discordjs/ws,
 * same intents, same large_threshold), connecting to the same simulated Discord and asking for the same
 * member listing, but doing nothing with what arrives beyond the library's JSON.parse of each frame and
 * counting the members. Times from creating the client until all MEMBERS members have arrived.
 */
const members = Number(process.env.MEMBERS);
const started = process.hrtime.bigint();
const cpuAtStart = process.cpuUsage();
const cpuSeconds = () => {
  const { user, system } = process.cpuUsage(cpuAtStart);
  return (user + system) / 1e6;
};
const since = () => Number(process.hrtime.bigint() - started) / 1e9;

const rest = new REST({ api: process.env.API_URL as string, version: '10' }).setToken(
  process.env.TOKEN as string,
);
const manager = new WebSocketManager({
  token: process.env.TOKEN as string,
  intents: INTENTS,
  largeThreshold: LARGE_THRESHOLD,
  rest,
});
serveBenchProcess(async () => {
  await manager.destroy({ reason: 'bench over' });
});

let received = 0;
let presences = 0;
let guildCreateSeconds = 0;
let firstChunkSeconds = 0;
manager.on(WebSocketShardEvents.Dispatch, (payload, shardId) => {
  if (payload.t === GatewayDispatchEvents.GuildCreate) {
    guildCreateSeconds = since();
    void manager.send(shardId, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: payload.d.id, query: '', limit: 0, presences: true, nonce: 'bench' },
    });
  } else if (payload.t === GatewayDispatchEvents.GuildMembersChunk) {
    if (received === 0) firstChunkSeconds = since();
    received += payload.d.members.length;
    presences += payload.d.presences?.length ?? 0;
    if (received >= members) {
      report({
        type: 'served',
        seconds: since(),
        cpuSeconds: cpuSeconds(),
        processSeconds: process.uptime(),
        guildCreateSeconds,
        firstChunkSeconds,
        size: received,
        presences,
      });
    }
  }
});
await manager.connect();
