import { VARIABLES } from './config-variables.js';
import { KV_MAX_BYTES_MAX, KV_MAX_BYTES_MIN } from './kv/rules.js';
import { defaultMaxSockets, defaultMaxSubscriptions, heapSizeLimit } from './limits/heap-share.js';
import { parseTrustProxy, type TrustProxy } from './net/trust-proxy.js';
import { HEAP_GROWING_PERCENT_MAX, HEAP_GROWING_PERCENT_MIN } from './ops/heap-growth.js';
import {
  APP_SOURCES,
  type AppSource,
  appIdsVariable,
  DEFAULT_MUSIC_APP_IDS,
} from './presence/normalize/music-apps.js';
import { redactUrl } from './redact-url.js';
import { SUBSCRIPTION_BYTES } from './socket/id-subscribers.js';
import type { SqliteLocation } from './store/sqlite/index.js';
import { WEBHOOKS_PER_USER_MAX } from './webhooks/rules.js';

/** Where the durable store lives: the embedded store, or a PostgreSQL server. */
export type DatabaseLocation = SqliteLocation | { kind: 'postgres'; url: string };

export type Role = 'all' | 'ingest' | 'api';

/** `all`: everyone the bot can see is monitored; `opt-in`: only those who asked to be. */
export type MonitorMode = 'all' | 'opt-in';

export const RETENTION_DAYS_MAX = 36_500;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  port: number;
  host: string;
  /** Unset: demo mode, driven by the built-in simulated Discord. */
  discordToken: string | null;
  discordApiUrl: string;
  discordCdnUrl: string;
  /** Where `GET /discord` sends people (an https URL); null: that route answers 404. */
  discordInviteUrl: string | null;
  database: DatabaseLocation;
  redisUrl: string | null;
  /** Namespaces every Redis key and channel, so several deployments (or tests) can share one Redis. */
  redisPrefix: string;
  role: Role;
  /** null: Discord's recommended shard count. */
  shardCount: number | null;
  /** The shards this node runs; null: all of them. */
  shardIds: number[] | null;
  commandPrefix: string;
  logLevel: LogLevel;
  rateLimitRead: number;
  rateLimitWrite: number;
  socketsPerIp: number;
  /** Sockets one process holds at most; 0: no cap. */
  maxSockets: number;
  /** Subscriptions to ids one process holds at most, over its sockets and event streams; 0: no cap. */
  maxSubscriptions: number;
  /** Whose `X-Forwarded-For` is believed; null: the client is the TCP peer. */
  trustProxy: TrustProxy;
  /** Concurrent HTTP connections per client (trusted proxies aside); 0 switches the cap off. */
  connectionsPerIp: number;
  /** Ids one socket may subscribe to (subscribe_to_all counts none). */
  subscriptionsPerSocket: number;
  /** Op 2 / op 4 frames per socket per minute, after a burst; 0: no limit. */
  socketCommandsPerMinute: number;
  /** Whether a socket may `subscribe_to_all`. */
  subscribeToAll: boolean;
  /** UTF-8 bytes of all of one user's KV keys and values together. */
  kvMaxBytes: number;
  /** Slow clients: how long a request's headers, and the whole request, may take to arrive. */
  httpHeadersTimeoutMs: number;
  httpRequestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open; longer than the load balancer's. */
  httpKeepAliveTimeoutMs: number;
  /** Bot commands a user may send in a row, then the pace they may go on at; 0 per minute: no cooldown. */
  botCommandBurst: number;
  botCommandsPerMinute: number;
  youtubeMusicApplicationIds: string[];
  youtubeMusicNames: string[];
  /** `<SERVICE>_APP_IDS`: a service's player applications, replacing its defaults. */
  musicAppIds: Record<AppSource, string[]>;
  /** Set: `/metrics` asks for it as a Bearer token; null: `/metrics` is open. */
  metricsToken: string | null;
  /** Webhooks one user may have. */
  webhooksPerUser: number;
  /** Webhooks may reach private and loopback addresses, and over `http://` (self-hosting, tests). */
  webhooksAllowPrivate: boolean;
  /** Who is monitored: everyone the bot sees, or only those who opted in. */
  monitor: MonitorMode;
  /** With `opt-in`: holding this role in a monitored guild opts a member in; null: no role does. */
  monitorRoleId: string | null;
  /** Only these guilds count for monitoring; null: every guild the bot is in. */
  guildIds: string[] | null;
  /** Only these users are served; null: everyone monitored. */
  allowedUserIds: string[] | null;
  /** Days what is kept of a user who left every monitored guild stays; 0: erased at once. */
  retentionDays: number;
  /** How far V8's old generation grows past what a full collection kept, in percent; 0: as V8 decides. */
  heapGrowingPercent: number;
  /** How to reach whoever runs this instance, for the privacy and terms pages; null: not given. */
  operatorContact: string | null;
  /** `?` commands in server channels, and leaked keys seen there: asks Discord for MESSAGE_CONTENT. */
  messageContent: boolean;
  /** Slash commands are registered in these guilds only (at once, for testing); null: globally. */
  commandGuildIds: string[] | null;
  /** Discord's gateway sends every frame through one zlib stream (`compress=zlib-stream`). */
  gatewayCompression: boolean;
  /** The app's Ed25519 public key (64 hex): `POST /interactions` is served; null: it is not. */
  interactionsPublicKey: string | null;
  /** Where people reach this instance, for links the bot gives (the card); null: unknown. */
  publicUrl: string | null;
}

/**
 * A bad variable: the message is one line that names it, fit to print at start-up. The value is shown
 * with any URL password masked: a mistyped REDIS_URL must not print the password in it.
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
    value: string,
  ) {
    super(`${variable}: ${problem} (got ${JSON.stringify(redactUrl(value))})`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * Reads and validates the environment. The only reader of process.env is main.ts, which passes it here.
 * `heapBytes`: the heap's limit, which the caps on sockets and subscriptions follow unless set.
 */
export function loadConfig(env: Env, heapBytes = heapSizeLimit()): Config {
  const read = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const value = read(name);
    if (value === undefined) return fallback;
    const parsed = /^\d+$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
      throw new ConfigError(name, `must be a whole number from ${min} to ${max}`, value);
    }
    return parsed;
  };

  /** 0 (V8 decides) or a factor of at least HEAP_GROWING_PERCENT_MIN. */
  const heapGrowingPercent = (): number => {
    const name = 'HEAP_GROWING_PERCENT';
    const percent = integer(name, VARIABLES.HEAP_GROWING_PERCENT.default, 0, HEAP_GROWING_PERCENT_MAX);
    if (percent > 0 && percent < HEAP_GROWING_PERCENT_MIN) {
      throw new ConfigError(
        name,
        `must be 0 or a whole number from ${HEAP_GROWING_PERCENT_MIN} to ${HEAP_GROWING_PERCENT_MAX}`,
        String(percent),
      );
    }
    return percent;
  };

  const httpUrl = (name: string, fallback: string): string => {
    const value = read(name) ?? fallback;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ConfigError(name, 'must be an http(s) URL', value);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError(name, 'must be an http(s) URL', value);
    }
    return value.replace(/\/+$/, '');
  };

  const httpsUrl = (name: string): string | null => {
    const value = read(name);
    if (value === undefined) return null;
    let protocol = '';
    try {
      protocol = new URL(value).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'https:') throw new ConfigError(name, 'must be an https URL', value);
    // Normalized (non-ASCII percent-encoded), so it can go into a Location header as it is.
    return new URL(value).href;
  };

  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const value = read(name);
    if (value === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      throw new ConfigError(name, `must be one of ${allowed.join(', ')}`, value);
    }
    return value as T;
  };

  const flag = (name: string, fallback: boolean): boolean => {
    const value = read(name);
    if (value === undefined) return fallback;
    if (value === 'true') return true;
    if (value === 'false') return false;
    throw new ConfigError(name, 'must be true or false', value);
  };

  const list = (name: string, fallback: readonly string[]): string[] => {
    const value = read(name);
    if (value === undefined) return [...fallback];
    return value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
  };

  const host = read('HOST') ?? VARIABLES.HOST.default;
  const token = read('DISCORD_TOKEN') ?? null;
  if (token !== null && /\s/.test(token)) {
    throw new ConfigError('DISCORD_TOKEN', 'must not contain white space', '<redacted>');
  }

  const redisUrl = read('REDIS_URL') ?? null;
  if (redisUrl !== null) {
    let protocol = '';
    try {
      protocol = new URL(redisUrl).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'redis:' && protocol !== 'rediss:') {
      throw new ConfigError('REDIS_URL', 'must be a redis:// or rediss:// URL', redisUrl);
    }
  }
  const role = oneOf<Role>('ROLE', ['all', 'ingest', 'api'], VARIABLES.ROLE.default);
  if (role !== 'all' && redisUrl === null) {
    throw new ConfigError('ROLE', `${role} runs beside other nodes and needs REDIS_URL`, role);
  }

  const redisPrefix = read('REDIS_PREFIX') ?? VARIABLES.REDIS_PREFIX.default;
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(redisPrefix)) {
    throw new ConfigError('REDIS_PREFIX', 'must be 1 to 64 of A-Z a-z 0-9 _ . : -', redisPrefix);
  }

  const shardCountValue = read('SHARD_COUNT');
  const shardCount = shardCountValue === undefined ? null : integer('SHARD_COUNT', 1, 1, 65_535);
  const shardIdsValue = read('SHARD_IDS');
  let shardIds: number[] | null = null;
  if (shardIdsValue !== undefined) {
    if (shardCount === null) {
      throw new ConfigError('SHARD_IDS', 'needs SHARD_COUNT, the total the ids are out of', shardIdsValue);
    }
    const ids = list('SHARD_IDS', []).map((item) => (/^\d+$/.test(item) ? Number(item) : Number.NaN));
    if (ids.length === 0 || ids.some((id) => !(id < shardCount)) || new Set(ids).size !== ids.length) {
      throw new ConfigError(
        'SHARD_IDS',
        `must be distinct whole numbers below SHARD_COUNT (${shardCount}), comma-separated`,
        shardIdsValue,
      );
    }
    shardIds = ids.sort((a, b) => a - b);
  }
  if (redisUrl !== null && role === 'all' && token === null) {
    // Demo users published into a shared Redis would mix with real ones.
    throw new ConfigError(
      'DISCORD_TOKEN',
      'is needed with REDIS_URL: demo mode runs on one machine only',
      '',
    );
  }
  if (role === 'ingest' && token === null) {
    throw new ConfigError(
      'ROLE',
      'ingest connects to Discord and needs DISCORD_TOKEN (demo mode is ROLE=all)',
      role,
    );
  }
  if (role === 'api' && (shardIds !== null || shardCount !== null)) {
    throw new ConfigError(
      'ROLE',
      'api runs no Discord gateway, so SHARD_IDS and SHARD_COUNT do not apply',
      role,
    );
  }

  const trustProxyValue = read('TRUST_PROXY');
  let trustProxy: TrustProxy = null;
  if (trustProxyValue !== undefined) {
    try {
      trustProxy = parseTrustProxy(trustProxyValue);
    } catch (error) {
      throw new ConfigError('TRUST_PROXY', (error as Error).message, trustProxyValue);
    }
  }

  const metricsToken = read('METRICS_TOKEN') ?? null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) {
    throw new ConfigError(
      'METRICS_TOKEN',
      'must be at least 16 printable ASCII characters without white space',
      '<redacted>',
    );
  }

  const prefix = read('COMMAND_PREFIX') ?? VARIABLES.COMMAND_PREFIX.default;
  if (prefix.length > 8 || /\s/.test(prefix)) {
    throw new ConfigError('COMMAND_PREFIX', 'must be 1 to 8 characters without white space', prefix);
  }

  const snowflakes = (name: string, fallback: readonly string[]): string[] => {
    const ids = list(name, fallback);
    for (const id of ids) {
      if (!/^\d{1,20}$/.test(id))
        throw new ConfigError(name, 'must be a comma-separated list of snowflakes', id);
    }
    return ids;
  };
  const youtubeMusicApplicationIds = snowflakes(
    'YOUTUBE_MUSIC_APP_IDS',
    VARIABLES.YOUTUBE_MUSIC_APP_IDS.default,
  );
  const musicAppIds = Object.fromEntries(
    APP_SOURCES.map((source) => [source, snowflakes(appIdsVariable(source), DEFAULT_MUSIC_APP_IDS[source])]),
  ) as Record<AppSource, string[]>;

  const optionalSnowflakes = (name: string): string[] | null =>
    read(name) === undefined ? null : snowflakes(name, []);
  const monitorRoleId = read('MONITOR_ROLE_ID') ?? null;
  if (monitorRoleId !== null && !/^\d{1,20}$/.test(monitorRoleId)) {
    throw new ConfigError('MONITOR_ROLE_ID', 'must be a role id (a snowflake)', monitorRoleId);
  }
  const interactionsPublicKey = read('INTERACTIONS_PUBLIC_KEY')?.toLowerCase() ?? null;
  if (interactionsPublicKey !== null && !/^[0-9a-f]{64}$/.test(interactionsPublicKey)) {
    throw new ConfigError(
      'INTERACTIONS_PUBLIC_KEY',
      "must be the app's public key: 64 hexadecimal characters",
      interactionsPublicKey,
    );
  }
  const operatorContact = read('OPERATOR_CONTACT') ?? null;
  if (operatorContact !== null && (operatorContact.length > 200 || hasControlCharacters(operatorContact))) {
    throw new ConfigError('OPERATOR_CONTACT', 'must be at most 200 characters on one line', operatorContact);
  }

  // Node refuses a headers timeout longer than the request timeout: the headers are part of the request.
  const httpHeadersTimeoutMs = integer(
    'HTTP_HEADERS_TIMEOUT_MS',
    VARIABLES.HTTP_HEADERS_TIMEOUT_MS.default,
    100,
    3_600_000,
  );
  const httpRequestTimeoutMs = integer(
    'HTTP_REQUEST_TIMEOUT_MS',
    VARIABLES.HTTP_REQUEST_TIMEOUT_MS.default,
    100,
    3_600_000,
  );
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    throw new ConfigError(
      'HTTP_HEADERS_TIMEOUT_MS',
      `must not exceed HTTP_REQUEST_TIMEOUT_MS (${httpRequestTimeoutMs})`,
      String(httpHeadersTimeoutMs),
    );
  }

  return {
    port: integer('PORT', VARIABLES.PORT.default, 0, 65535),
    host,
    discordToken: token,
    discordApiUrl: httpUrl('DISCORD_API_URL', VARIABLES.DISCORD_API_URL.default),
    discordCdnUrl: httpUrl('DISCORD_CDN_URL', VARIABLES.DISCORD_CDN_URL.default),
    discordInviteUrl: httpsUrl('DISCORD_INVITE_URL'),
    database: parseDatabaseUrl(
      read('DATABASE_URL') ??
        (token === null ? VARIABLES.DATABASE_URL.demoDefault : VARIABLES.DATABASE_URL.default),
    ),
    redisUrl,
    redisPrefix,
    role,
    shardCount,
    shardIds,
    commandPrefix: prefix,
    logLevel: oneOf('LOG_LEVEL', LOG_LEVELS, VARIABLES.LOG_LEVEL.default),
    rateLimitRead: integer('RATE_LIMIT_READ', VARIABLES.RATE_LIMIT_READ.default, 0, 1_000_000),
    rateLimitWrite: integer('RATE_LIMIT_WRITE', VARIABLES.RATE_LIMIT_WRITE.default, 0, 1_000_000),
    socketsPerIp: integer('SOCKETS_PER_IP', VARIABLES.SOCKETS_PER_IP.default, 0, 1_000_000),
    maxSockets: integer('MAX_SOCKETS', defaultMaxSockets(heapBytes), 0, 10_000_000),
    maxSubscriptions: integer(
      'MAX_SUBSCRIPTIONS',
      defaultMaxSubscriptions(heapBytes, SUBSCRIPTION_BYTES),
      0,
      1_000_000_000,
    ),
    trustProxy,
    connectionsPerIp: integer('CONNECTIONS_PER_IP', VARIABLES.CONNECTIONS_PER_IP.default, 0, 1_000_000),
    subscriptionsPerSocket: integer(
      'SUBSCRIPTIONS_PER_SOCKET',
      VARIABLES.SUBSCRIPTIONS_PER_SOCKET.default,
      1,
      1_000_000,
    ),
    socketCommandsPerMinute: integer(
      'SOCKET_COMMANDS_PER_MINUTE',
      VARIABLES.SOCKET_COMMANDS_PER_MINUTE.default,
      0,
      1_000_000,
    ),
    subscribeToAll: flag('SUBSCRIBE_TO_ALL', VARIABLES.SUBSCRIBE_TO_ALL.default),
    kvMaxBytes: integer('KV_MAX_BYTES', VARIABLES.KV_MAX_BYTES.default, KV_MAX_BYTES_MIN, KV_MAX_BYTES_MAX),
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    httpKeepAliveTimeoutMs: integer(
      'HTTP_KEEP_ALIVE_TIMEOUT_MS',
      VARIABLES.HTTP_KEEP_ALIVE_TIMEOUT_MS.default,
      100,
      3_600_000,
    ),
    botCommandBurst: integer('BOT_COMMAND_BURST', VARIABLES.BOT_COMMAND_BURST.default, 1, 1_000),
    botCommandsPerMinute: integer(
      'BOT_COMMANDS_PER_MINUTE',
      VARIABLES.BOT_COMMANDS_PER_MINUTE.default,
      0,
      60_000,
    ),
    youtubeMusicApplicationIds,
    youtubeMusicNames: list('YOUTUBE_MUSIC_NAMES', VARIABLES.YOUTUBE_MUSIC_NAMES.default),
    musicAppIds,
    metricsToken,
    webhooksPerUser: integer(
      'WEBHOOKS_PER_USER',
      VARIABLES.WEBHOOKS_PER_USER.default,
      1,
      WEBHOOKS_PER_USER_MAX,
    ),
    webhooksAllowPrivate: flag('WEBHOOKS_ALLOW_PRIVATE', VARIABLES.WEBHOOKS_ALLOW_PRIVATE.default),
    monitor: oneOf<MonitorMode>('MONITOR', ['all', 'opt-in'], VARIABLES.MONITOR.default),
    monitorRoleId,
    guildIds: optionalSnowflakes('GUILD_IDS'),
    allowedUserIds: optionalSnowflakes('ALLOWED_USER_IDS'),
    retentionDays: integer('RETENTION_DAYS', VARIABLES.RETENTION_DAYS.default, 0, RETENTION_DAYS_MAX),
    heapGrowingPercent: heapGrowingPercent(),
    operatorContact,
    messageContent: oneOf('MESSAGE_CONTENT', ['on', 'off'], VARIABLES.MESSAGE_CONTENT.default) === 'on',
    commandGuildIds: optionalSnowflakes('COMMAND_GUILD_IDS'),
    gatewayCompression:
      oneOf('GATEWAY_COMPRESSION', ['zlib-stream', 'off'], VARIABLES.GATEWAY_COMPRESSION.default) ===
      'zlib-stream',
    interactionsPublicKey,
    publicUrl: read('PUBLIC_URL') === undefined ? null : httpUrl('PUBLIC_URL', ''),
  };
}

function parseDatabaseUrl(value: string): DatabaseLocation {
  if (value === 'sqlite::memory:') return { kind: 'sqlite-memory' };
  if (value.startsWith('sqlite:') && value.length > 'sqlite:'.length) {
    return { kind: 'sqlite', path: value.slice('sqlite:'.length) };
  }
  if (/^postgres(ql)?:\/\//.test(value) && URL.canParse(value)) return { kind: 'postgres', url: value };
  throw new ConfigError(
    'DATABASE_URL',
    'must be sqlite:<path>, sqlite::memory: or a postgres:// or postgresql:// URL',
    value,
  );
}

/** Line breaks, tabs and the other control characters, which have no place in one line of a page. */
function hasControlCharacters(text: string): boolean {
  for (const character of text) {
    const code = character.charCodeAt(0);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
