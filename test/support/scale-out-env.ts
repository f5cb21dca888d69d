import type { DiscordSimulator } from '../../src/simulator/index.js';
import { REDIS_TEST_URL } from './redis.js';

/** The environment of a scale-out node of `role`: the simulated Discord, the test Redis under `prefix`. */
export function scaleOutEnv(
  role: string,
  simulator: DiscordSimulator,
  prefix: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ROLE: role,
    REDIS_URL: REDIS_TEST_URL,
    REDIS_PREFIX: prefix,
    DISCORD_TOKEN: simulator.token,
    DISCORD_API_URL: simulator.apiUrl,
    DISCORD_CDN_URL: simulator.cdnUrl,
    ...extra,
  };
}
