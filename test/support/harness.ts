import { GatewayIntentBits } from 'discord-api-types/v10';
import pino, { type Logger } from 'pino';
import { type App, type AppOptions, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { PresenceChange } from '../../src/presence/registry/registry.js';
import { ALL_INTENTS } from '../../src/simulator/gateway.js';
import { DiscordSimulator, type DiscordSimulatorOptions } from '../../src/simulator/index.js';

/** An app of ROLE all: every part present. */
export type WholeApp = App & {
  [K in 'registry' | 'gateway' | 'history' | 'sockets' | 'sse']: NonNullable<App[K]>;
};

/** Narrows an app started with ROLE all, which has every part. */
export function wholeApp(app: App): WholeApp {
  const { registry, gateway, history, sockets, sse } = app;
  if (!registry || !gateway || !history || !sockets || !sse) throw new Error('expected an app of ROLE all');
  return { ...app, registry, gateway, history, sockets, sse, close: () => app.close() };
}

export interface Harness {
  simulator: DiscordSimulator;
  app: WholeApp;
  base: string;
  /** Every change the registry emitted, in order. */
  changes: PresenceChange[];
  fatal: { code: number; reason: string }[];
  close(): Promise<void>;
}

/**
 * The service as it runs in production, connected through its real gateway and REST clients to a
 * simulated Discord on loopback, with an in-memory store and an HTTP server on an ephemeral port.
 */
export async function startHarness(
  options: {
    simulator?: Partial<DiscordSimulatorOptions>;
    /** A simulated Discord already started, which outlives this harness (a restart of the service). */
    discord?: DiscordSimulator;
    env?: Record<string, string>;
    setup?: (sim: DiscordSimulator) => void;
    /** Socket gateway overrides (shorter heartbeat, smaller send buffer cap); default: production values. */
    socket?: AppOptions['socket'];
    /** Event stream overrides (shorter keep-alive, smaller caps and replay ring); default: production values. */
    sse?: AppOptions['sse'];
    /** Webhook overrides (a resolver, a shorter timeout, the worker's clock and backoff). */
    webhooks?: AppOptions['webhooks'];
    /** Retention's clock and timing. */
    retention?: AppOptions['retention'];
    /** The app's logger; default: silent (TEST_LOG_LEVEL to see it). */
    logger?: Logger;
    /** How long abusive clients wait for their refusals; default 0 (a test of the delay sets it). */
    abuseRefusalDelayMs?: number;
    /** Bot overrides (a shorter wait before a slow command's answer is deferred). */
    bot?: AppOptions['bot'];
    /** Gateway overrides (a shorter wait before a disconnected shard's users are stale). */
    gateway?: AppOptions['gateway'];
  } = {},
): Promise<Harness> {
  // As an app is made by default: Message Content is granted only to a run that asks for it, so a run with
  // the default intents that asked for it anyway would be closed with 4014.
  const messageContent = options.env?.MESSAGE_CONTENT === 'on';
  const simulator =
    options.discord ??
    new DiscordSimulator({
      heartbeatIntervalMs: 1_000,
      allowedIntents: messageContent ? ALL_INTENTS : ALL_INTENTS & ~GatewayIntentBits.MessageContent,
      ...options.simulator,
    });
  if (!options.discord) await simulator.start();
  options.setup?.(simulator);
  const config = loadConfig({
    DISCORD_TOKEN: simulator.token,
    DISCORD_API_URL: simulator.apiUrl,
    DISCORD_CDN_URL: simulator.cdnUrl,
    DATABASE_URL: 'sqlite::memory:',
    HOST: '127.0.0.1',
    PORT: '0',
    // Tests poll; limits are tested on their own, with low values.
    RATE_LIMIT_READ: '0',
    RATE_LIMIT_WRITE: '0',
    ...options.env,
  });
  const fatal: Harness['fatal'] = [];
  const started = await startApp(config, {
    logger: options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    onFatal: (code, reason) => fatal.push({ code, reason }),
    abuseRefusalDelayMs: options.abuseRefusalDelayMs ?? 0,
    ...(options.socket ? { socket: options.socket } : {}),
    ...(options.webhooks ? { webhooks: options.webhooks } : {}),
    ...(options.retention ? { retention: options.retention } : {}),
    ...(options.sse ? { sse: options.sse } : {}),
    ...(options.bot ? { bot: options.bot } : {}),
    // Discord's pace of IDENTIFYs is the identify-budget tests' subject; elsewhere it only slows tests down.
    gateway: { identifyIntervalMs: 0, ...options.gateway },
  });
  const app = wholeApp(started);
  const changes: PresenceChange[] = [];
  app.registry.onChange((change) => changes.push(change));
  return {
    simulator,
    app,
    base: app.url,
    changes,
    fatal,
    close: async () => {
      await app.close();
      if (!options.discord) await simulator.stop();
    },
  };
}
