import { DEFAULT_KV_MAX_BYTES } from './kv/rules.js';
import { HEAP_BYTES_PER_SOCKET } from './limits/heap-share.js';
import { DEFAULT_HEAP_GROWING_PERCENT } from './ops/heap-growth.js';
import { DEFAULT_MUSIC_APP_IDS } from './presence/normalize/music-apps.js';
import {
  DEFAULT_YOUTUBE_MUSIC_APPLICATION_IDS,
  DEFAULT_YOUTUBE_MUSIC_NAMES,
} from './presence/normalize/youtube-music.js';
import { SUBSCRIPTION_BYTES } from './socket/id-subscribers.js';
import { DEFAULT_WEBHOOKS_PER_USER } from './webhooks/rules.js';

const MUSIC_PLAYERS = 'the players listed in [docs/music.md](music.md)';

/** A variable's default: a value, a list (comma-separated in the environment), or none (unset). */
export type DefaultValue = string | number | boolean | readonly string[] | null;

export interface Variable {
  /** The value an unset variable takes; null: none (the feature is off, or the value is worked out). */
  readonly default: DefaultValue;
  /** The default in words, where it is worked out rather than a value (docs/configuration.md says this). */
  readonly stated?: string;
  /** The default in demo mode, where it differs. */
  readonly demoDefault?: string;
}

/**
 * Every environment variable the service reads, with its default: the one home of these defaults.
 * docs/configuration.md lists the same variables with the same defaults, and test/docs/configuration.test.ts
 * keeps them equal (and finds a variable read but not listed here).
 */
export const VARIABLES = {
  PORT: { default: 4001 },
  HOST: { default: '0.0.0.0' },
  DISCORD_TOKEN: { default: null, stated: 'unset' },
  DISCORD_API_URL: { default: 'https://discord.com/api' },
  DISCORD_CDN_URL: { default: 'https://cdn.discordapp.com' },
  DISCORD_INVITE_URL: { default: null },
  // Demo mode keeps a file of its own: a start without the token must never hand a demo API key to a real
  // user of the instance's store.
  DATABASE_URL: { default: 'sqlite:./data/presently.db', demoDefault: 'sqlite:./data/demo.db' },
  REDIS_URL: { default: null },
  REDIS_PREFIX: { default: 'presently:' },
  ROLE: { default: 'all' },
  SHARD_COUNT: { default: null, stated: "Discord's recommendation" },
  SHARD_IDS: { default: null, stated: 'all shards' },
  COMMAND_PREFIX: { default: '?' },
  BOT_COMMAND_BURST: { default: 10 },
  BOT_COMMANDS_PER_MINUTE: { default: 20 },
  METRICS_TOKEN: { default: null },
  LOG_LEVEL: { default: 'info' },
  TRUST_PROXY: { default: null },
  RATE_LIMIT_READ: { default: 1200 },
  RATE_LIMIT_WRITE: { default: 120 },
  CONNECTIONS_PER_IP: { default: 256 },
  KV_MAX_BYTES: { default: DEFAULT_KV_MAX_BYTES },
  SOCKETS_PER_IP: { default: 100 },
  MAX_SOCKETS: { default: null, stated: `the heap's limit / ${HEAP_BYTES_PER_SOCKET / 1024} KiB` },
  MAX_SUBSCRIPTIONS: { default: null, stated: `the heap's limit / ${SUBSCRIPTION_BYTES} B` },
  SUBSCRIPTIONS_PER_SOCKET: { default: 1000 },
  SOCKET_COMMANDS_PER_MINUTE: { default: 60 },
  SUBSCRIBE_TO_ALL: { default: true },
  WEBHOOKS_PER_USER: { default: DEFAULT_WEBHOOKS_PER_USER },
  WEBHOOKS_ALLOW_PRIVATE: { default: false },
  HTTP_HEADERS_TIMEOUT_MS: { default: 10_000 },
  HTTP_REQUEST_TIMEOUT_MS: { default: 30_000 },
  // Fastify's own default for a server it makes: longer than common proxies' idle timeouts (60 s).
  HTTP_KEEP_ALIVE_TIMEOUT_MS: { default: 72_000 },
  HEAP_GROWING_PERCENT: { default: DEFAULT_HEAP_GROWING_PERCENT },
  MONITOR: { default: 'all' },
  MONITOR_ROLE_ID: { default: null },
  GUILD_IDS: { default: null },
  ALLOWED_USER_IDS: { default: null },
  RETENTION_DAYS: { default: 30 },
  OPERATOR_CONTACT: { default: null },
  MESSAGE_CONTENT: { default: 'off' },
  GATEWAY_COMPRESSION: { default: 'off' },
  COMMAND_GUILD_IDS: { default: null },
  INTERACTIONS_PUBLIC_KEY: { default: null },
  PUBLIC_URL: { default: null },
  YOUTUBE_MUSIC_APP_IDS: { default: DEFAULT_YOUTUBE_MUSIC_APPLICATION_IDS },
  APPLE_MUSIC_APP_IDS: { default: DEFAULT_MUSIC_APP_IDS.apple_music, stated: MUSIC_PLAYERS },
  TIDAL_APP_IDS: { default: DEFAULT_MUSIC_APP_IDS.tidal, stated: MUSIC_PLAYERS },
  DEEZER_APP_IDS: { default: DEFAULT_MUSIC_APP_IDS.deezer, stated: MUSIC_PLAYERS },
  SOUNDCLOUD_APP_IDS: { default: DEFAULT_MUSIC_APP_IDS.soundcloud, stated: MUSIC_PLAYERS },
  AMAZON_MUSIC_APP_IDS: { default: DEFAULT_MUSIC_APP_IDS.amazon_music, stated: MUSIC_PLAYERS },
  YOUTUBE_MUSIC_NAMES: { default: DEFAULT_YOUTUBE_MUSIC_NAMES },
} as const satisfies Record<string, Variable>;
