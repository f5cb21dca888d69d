import { GatewayIntentBits } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { ApiKeyService } from '../keys/service.js';
import type { KvService } from '../kv/service.js';
import type { PrivacyService } from '../privacy/service.js';
import { ALL_INTENTS } from '../simulator/gateway.js';
import { DiscordSimulator } from '../simulator/index.js';
import { type DemoAccount, prepareDemoAccount } from './account.js';
import { DEMO_FEATURED_USER, DEMO_GUILDS, DEMO_PRIVACY, DEMO_PROFILES, DEMO_USERS } from './cast.js';
import { demoPresences } from './script.js';
import { DemoBot } from './try-bot.js';

/** How often the demo users' presences are re-sent. */
export const DEMO_TICK_MS = 2_000;

export interface Demo {
  readonly simulator: DiscordSimulator;
  /** `featured`: the user the landing page opens on. */
  readonly users: readonly { id: string; name: string; featured: boolean }[];
  /** The featured user's API key and KV, made at start so the KV routes can be tried at once. */
  readonly account: DemoAccount;
  /** `/presently …` as the featured user runs it: the landing page's "try the bot". */
  readonly bot: DemoBot;
  stop(): Promise<void>;
}

/**
 * Demo mode: a simulated Discord on loopback with a server of demo users whose presences change on a
 * timer. The service connects to it exactly as it connects to Discord.
 */
export async function startDemo(
  logger: Logger,
  services: { keys: ApiKeyService; kv: KvService; privacy: Pick<PrivacyService, 'change'> },
): Promise<Demo> {
  const account = await prepareDemoAccount(DEMO_FEATURED_USER.id, services);
  // Before the gateway starts: the first presence of each is already rendered under them.
  for (const [userId, settings] of DEMO_PRIVACY) await services.privacy.change(userId, settings);
  // As a new app is made: Message Content is not granted, so the demo runs on the default intents.
  const simulator = new DiscordSimulator({ allowedIntents: ALL_INTENTS & ~GatewayIntentBits.MessageContent });
  await simulator.start();
  const startedAt = Date.now();
  const initial = demoPresences(startedAt, startedAt);
  const users = Object.values(DEMO_USERS);
  for (const guild of DEMO_GUILDS) {
    simulator.createGuild({
      id: guild.id,
      name: guild.name,
      members: guild.members.map((user) => ({
        user: { ...user, discriminator: '0' },
        presence: initial.get(user.id),
      })),
    });
  }
  for (const [userId, profile] of DEMO_PROFILES) simulator.setProfile(userId, profile);

  const timer = setInterval(() => {
    for (const [userId, presence] of demoPresences(startedAt, Date.now())) {
      simulator.setPresence(userId, presence, { jitterMs: 400 });
    }
  }, DEMO_TICK_MS);
  logger.debug({ users: users.length }, 'demo users created');

  logger.info(
    { userId: account.userId },
    `demo mode: API key of ${DEMO_FEATURED_USER.global_name} (${account.userId}), for the KV and privacy routes: ${account.apiKey}`,
  );

  return {
    simulator,
    users: users.map((user) => ({
      id: user.id,
      name: user.global_name,
      featured: user.id === DEMO_FEATURED_USER.id,
    })),
    account,
    bot: new DemoBot(simulator, DEMO_FEATURED_USER.id),
    stop: async () => {
      clearInterval(timer);
      await simulator.stop();
    },
  };
}
