import { REST } from '@discordjs/rest';
import { type CreateWebSocketManagerOptions, type SessionInfo, WebSocketManager } from '@discordjs/ws';
import type { DiscordSimulator } from '../../src/simulator/index.js';

/** The real REST client, pointed at the simulator. */
export function restFor(simulator: DiscordSimulator): REST {
  return new REST({ api: simulator.apiUrl, cdn: simulator.cdnUrl, version: '10' }).setToken(simulator.token);
}

/**
 * The real gateway client, as Presently builds it: its own session store (the library's default one is
 * shared by every manager in the process) and no identify throttle (the default waits 5 s between two
 * identifies with max_concurrency 1, which only slows the tests down).
 */
export function gatewayFor(
  simulator: DiscordSimulator,
  rest: REST,
  options: Pick<CreateWebSocketManagerOptions, 'intents' | 'largeThreshold' | 'shardCount' | 'compression'>,
): WebSocketManager {
  const sessions = new Map<number, SessionInfo>();
  return new WebSocketManager({
    token: simulator.token,
    rest,
    retrieveSessionInfo: (shardId) => sessions.get(shardId) ?? null,
    updateSessionInfo: (shardId, info) => {
      if (info) sessions.set(shardId, info);
      else sessions.delete(shardId);
    },
    buildIdentifyThrottler: () => ({ waitForIdentify: async () => {} }),
    ...options,
  });
}
