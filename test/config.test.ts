import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { defaultMaxSockets, HEAP_BYTES_PER_SOCKET, heapSizeLimit } from '../src/limits/heap-share.js';
import { DEFAULT_MUSIC_APP_IDS } from '../src/presence/normalize/music-apps.js';
import { SUBSCRIPTION_BYTES } from '../src/socket/id-subscribers.js';

describe('loadConfig', () => {
  it('gives the documented defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 4001,
      host: '0.0.0.0',
      discordToken: null,
      discordApiUrl: 'https://discord.com/api',
      discordCdnUrl: 'https://cdn.discordapp.com',
      discordInviteUrl: null,
      database: { kind: 'sqlite', path: './data/demo.db' },
      redisUrl: null,
      role: 'all',
      commandPrefix: '?',
      logLevel: 'info',
      rateLimitRead: 1200,
      rateLimitWrite: 120,
      socketsPerIp: 100,
    });
    expect(config.youtubeMusicApplicationIds).toContain('1177081335727267940');
  });

  it('keeps the demo in a store of its own: without DISCORD_TOKEN the default file is demo.db', () => {
    expect(loadConfig({}).database).toEqual({ kind: 'sqlite', path: './data/demo.db' });
    expect(loadConfig({ DISCORD_TOKEN: 'abc.def.ghi' }).database).toEqual({
      kind: 'sqlite',
      path: './data/presently.db',
    });
  });

  it('takes a postgres:// or postgresql:// DATABASE_URL as the PostgreSQL store, as it is', () => {
    for (const url of [
      'postgres://app:s3cret@db.internal:5432/presently',
      'postgresql://db.internal/presently?sslmode=require',
    ]) {
      expect(loadConfig({ DATABASE_URL: url }).database).toEqual({ kind: 'postgres', url });
    }
  });

  it('keeps an https URL percent-encoded, so it can go into a Location header as it is', () => {
    const config = loadConfig({ DISCORD_INVITE_URL: 'https://discord.gg/café😀' });
    expect(config.discordInviteUrl).toBe('https://discord.gg/caf%C3%A9%F0%9F%98%80');
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      DISCORD_TOKEN: 'abc.def.ghi',
      DISCORD_API_URL: 'http://127.0.0.1:9999/api/',
      DISCORD_CDN_URL: 'http://127.0.0.1:9999/cdn',
      DISCORD_INVITE_URL: 'https://discord.gg/presently',
      DATABASE_URL: 'sqlite::memory:',
      REDIS_URL: 'redis://127.0.0.1:6379',
      ROLE: 'api',
      COMMAND_PREFIX: '!',
      LOG_LEVEL: 'debug',
      RATE_LIMIT_READ: '0',
      RATE_LIMIT_WRITE: '10',
      SOCKETS_PER_IP: '5',
      YOUTUBE_MUSIC_APP_IDS: '1, 2',
      YOUTUBE_MUSIC_NAMES: 'YT Music,YouTube Music',
      APPLE_MUSIC_APP_IDS: '3,4',
      TIDAL_APP_IDS: ' 5 ',
    });
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      discordToken: 'abc.def.ghi',
      discordApiUrl: 'http://127.0.0.1:9999/api',
      discordInviteUrl: 'https://discord.gg/presently',
      database: { kind: 'sqlite-memory' },
      redisUrl: 'redis://127.0.0.1:6379',
      role: 'api',
      commandPrefix: '!',
      logLevel: 'debug',
      rateLimitRead: 0,
      rateLimitWrite: 10,
      socketsPerIp: 5,
      youtubeMusicApplicationIds: ['1', '2'],
      youtubeMusicNames: ['YT Music', 'YouTube Music'],
      musicAppIds: {
        apple_music: ['3', '4'],
        tidal: ['5'],
        deezer: DEFAULT_MUSIC_APP_IDS.deezer,
        soundcloud: DEFAULT_MUSIC_APP_IDS.soundcloud,
        amazon_music: DEFAULT_MUSIC_APP_IDS.amazon_music,
      },
    });
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['DISCORD_API_URL', 'not a url'],
    ['DISCORD_CDN_URL', 'ftp://cdn.example'],
    ['DISCORD_INVITE_URL', 'http://discord.gg/presently'],
    ['DISCORD_INVITE_URL', 'discord.gg/presently'],
    ['DATABASE_URL', 'postgres:localhost/db'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['REDIS_URL', 'http://localhost'],
    ['ROLE', 'worker'],
    ['COMMAND_PREFIX', 'has space'],
    ['LOG_LEVEL', 'verbose'],
    ['RATE_LIMIT_READ', '1.5'],
    ['RATE_LIMIT_WRITE', 'lots'],
    ['SOCKETS_PER_IP', '-3'],
    ['YOUTUBE_MUSIC_APP_IDS', 'pear'],
    ['APPLE_MUSIC_APP_IDS', '1,cider'],
    ['AMAZON_MUSIC_APP_IDS', '-5'],
    ['REDIS_PREFIX', 'has space'],
    ['SHARD_COUNT', '0'],
    ['SHARD_IDS', '0,1'],
    ['HTTP_HEADERS_TIMEOUT_MS', '0'],
    ['HTTP_REQUEST_TIMEOUT_MS', '30s'],
    ['HTTP_KEEP_ALIVE_TIMEOUT_MS', '-1'],
    ['BOT_COMMAND_BURST', '0'],
    ['BOT_COMMANDS_PER_MINUTE', 'many'],
    ['KV_MAX_BYTES', '1023'],
    ['KV_MAX_BYTES', '67108865'],
    ['KV_MAX_BYTES', '1MiB'],
  ])('rejects %s=%s with a one-line error naming the variable', (name, value) => {
    let caught: unknown;
    try {
      loadConfig({
        [name]: value,
        REDIS_URL: name === 'REDIS_URL' ? value : 'redis://localhost',
        DISCORD_TOKEN: 'token',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as ConfigError).message;
    expect(message.startsWith(`${name}: `)).toBe(true);
    expect(message).not.toContain('\n');
  });

  it('reads TRUST_PROXY: unset, a hop count, or addresses, CIDRs and named ranges', () => {
    expect(loadConfig({}).trustProxy).toBeNull();
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toEqual({ hops: 1 });
    expect(loadConfig({ TRUST_PROXY: ' 10.0.0.1, 192.168.0.0/16,fd00::/8 , loopback' }).trustProxy).toEqual({
      addresses: ['10.0.0.1', '192.168.0.0/16', 'fd00::/8', 'loopback'],
    });
  });

  it.each([
    ['0', /a hop count must be from 1 to 16/],
    ['17', /a hop count must be from 1 to 16/],
    ['true', /invalid IP address: true/],
    ['10.0.0.0/33', /invalid range on address: 10\.0\.0\.0\/33/],
    ['10.0.0.1,,10.0.0.2', /must be a hop count or a comma-separated list/],
    ['1,10.0.0.1', /invalid IP address: 1/],
  ])('refuses TRUST_PROXY=%s, saying why', (value, why) => {
    expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(ConfigError);
    expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(why);
    expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(/^TRUST_PROXY: /);
  });

  it('reads CONNECTIONS_PER_IP: 256 unless told, 0 switches the cap off', () => {
    expect(loadConfig({}).connectionsPerIp).toBe(256);
    expect(loadConfig({ CONNECTIONS_PER_IP: '0' }).connectionsPerIp).toBe(0);
    expect(loadConfig({ CONNECTIONS_PER_IP: '32' }).connectionsPerIp).toBe(32);
    expect(() => loadConfig({ CONNECTIONS_PER_IP: '-1' })).toThrow(/^CONNECTIONS_PER_IP: /);
    expect(() => loadConfig({ CONNECTIONS_PER_IP: 'many' })).toThrow(ConfigError);
  });

  it('reads the slow-client timeouts and the bot cooldown, with their defaults', () => {
    expect(loadConfig({})).toMatchObject({
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 30_000,
      httpKeepAliveTimeoutMs: 72_000,
      botCommandBurst: 10,
      botCommandsPerMinute: 20,
    });
    const config = loadConfig({
      HTTP_HEADERS_TIMEOUT_MS: '5000',
      HTTP_REQUEST_TIMEOUT_MS: '120000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '650000',
      BOT_COMMAND_BURST: '3',
      BOT_COMMANDS_PER_MINUTE: '0',
    });
    expect(config).toMatchObject({
      httpHeadersTimeoutMs: 5_000,
      httpRequestTimeoutMs: 120_000,
      httpKeepAliveTimeoutMs: 650_000,
      botCommandBurst: 3,
      botCommandsPerMinute: 0,
    });
  });

  it('reads KV_MAX_BYTES: 1 MiB unless set, from 1 KiB to 64 MiB', () => {
    expect(loadConfig({}).kvMaxBytes).toBe(1_048_576);
    expect(loadConfig({ KV_MAX_BYTES: '1024' }).kvMaxBytes).toBe(1_024);
    expect(loadConfig({ KV_MAX_BYTES: '67108864' }).kvMaxBytes).toBe(67_108_864);
    expect(() => loadConfig({ KV_MAX_BYTES: '0' })).toThrow(
      /^KV_MAX_BYTES: must be a whole number from 1024 to 67108864/,
    );
  });

  it('refuses a headers timeout longer than the request timeout it is part of', () => {
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '40000' })).toThrow(
      /^HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS \(30000\)/,
    );
    expect(() =>
      loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '40000', HTTP_REQUEST_TIMEOUT_MS: '40000' }),
    ).not.toThrow();
  });

  it('refuses a split role without Redis', () => {
    expect(() => loadConfig({ ROLE: 'ingest' })).toThrow(/^ROLE: ingest .* needs REDIS_URL/);
  });

  it('reads the scale-out variables: shards sorted, prefix', () => {
    const config = loadConfig({
      REDIS_URL: 'redis://localhost',
      REDIS_PREFIX: 'eu-1:',
      ROLE: 'ingest',
      DISCORD_TOKEN: 'abc',
      SHARD_COUNT: '4',
      SHARD_IDS: '3, 1',
    });
    expect(config).toMatchObject({ redisPrefix: 'eu-1:', role: 'ingest', shardCount: 4, shardIds: [1, 3] });
    expect(loadConfig({})).toMatchObject({ redisPrefix: 'presently:', shardCount: null, shardIds: null });
  });

  it.each([
    [{ SHARD_IDS: '0' }, /^SHARD_IDS: needs SHARD_COUNT/],
    [
      { SHARD_COUNT: '2', SHARD_IDS: '2' },
      /^SHARD_IDS: must be distinct whole numbers below SHARD_COUNT \(2\)/,
    ],
    [{ SHARD_COUNT: '2', SHARD_IDS: '1,1' }, /^SHARD_IDS: must be distinct/],
    [{ SHARD_COUNT: '2', SHARD_IDS: '' }, null],
    [{ REDIS_URL: 'redis://x', ROLE: 'ingest' }, /^ROLE: ingest connects to Discord and needs DISCORD_TOKEN/],
    [
      { REDIS_URL: 'redis://x' },
      /^DISCORD_TOKEN: is needed with REDIS_URL: demo mode runs on one machine only/,
    ],
    [{ REDIS_URL: 'redis://x', ROLE: 'api', SHARD_COUNT: '2' }, /^ROLE: api runs no Discord gateway/],
  ])('checks how the shard variables fit together: %j', (env, error) => {
    if (error === null) expect(() => loadConfig(env)).not.toThrow();
    else expect(() => loadConfig(env)).toThrow(error);
  });

  it('never prints the token it rejects', () => {
    expect(() => loadConfig({ DISCORD_TOKEN: 'secret token' })).toThrow(/DISCORD_TOKEN/);
    expect(() => loadConfig({ DISCORD_TOKEN: 'secret token' })).not.toThrow(/secret/);
  });

  it.each([
    [
      'REDIS_URL',
      'http://presently:hunter2@redis.internal:6379/0',
      'http://presently:***@redis.internal:6379/0',
    ],
    ['REDIS_URL', 'redis//:hunter2@redis.internal:6379', 'redis//:***@redis.internal:6379'],
    ['REDIS_URL', 'redis://:hunter2/x@redis.internal:6379', 'redis://:***@redis.internal:6379'],
    ['DISCORD_API_URL', 'ftp://bot:hunter2@proxy.internal/api', 'ftp://bot:***@proxy.internal/api'],
    ['DISCORD_CDN_URL', 'hunter2@cdn.internal', '***@cdn.internal'],
    ['DISCORD_INVITE_URL', 'http://me:hunter2@discord.gg/presently', 'http://me:***@discord.gg/presently'],
    ['DATABASE_URL', 'mysql://app:hunter2@db.internal/presently', 'mysql://app:***@db.internal/presently'],
    [
      'DATABASE_URL',
      'postgresql://app:hunter2@db.internal:port/presently',
      'postgresql://app:***@db.internal:port/presently',
    ],
  ])('rejects %s=%s without printing the password in it', (name, value, shown) => {
    const load = () =>
      loadConfig({
        [name]: value,
        REDIS_URL: name === 'REDIS_URL' ? value : 'redis://:hunter2@redis.internal',
        DISCORD_TOKEN: 'token',
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(`^${name}: `));
    expect(load).toThrow(`(got "${shown}")`);
    expect(load).not.toThrow(/hunter2/);
  });

  it('reads METRICS_TOKEN, refusing a short or spaced one without printing it', () => {
    expect(loadConfig({}).metricsToken).toBeNull();
    expect(loadConfig({ METRICS_TOKEN: 'a-long-enough-token' }).metricsToken).toBe('a-long-enough-token');
    for (const token of ['shortsecret', 'secret with spaces in it']) {
      expect(() => loadConfig({ METRICS_TOKEN: token })).toThrow(/^METRICS_TOKEN: must be at least 16/);
      expect(() => loadConfig({ METRICS_TOKEN: token })).not.toThrow(/secret/);
    }
  });

  it('derives MAX_SOCKETS and MAX_SUBSCRIPTIONS from the heap’s limit unless set: twice the heap, twice as many', () => {
    const gib = 2 ** 30;
    const small = loadConfig({}, gib);
    expect(small.maxSockets).toBe(gib / HEAP_BYTES_PER_SOCKET);
    expect(small.maxSubscriptions).toBe(Math.floor(gib / SUBSCRIPTION_BYTES));
    const large = loadConfig({}, 2 * gib);
    expect(large.maxSockets).toBe(2 * small.maxSockets);
    expect(large.maxSubscriptions).toBe(Math.floor((2 * gib) / SUBSCRIPTION_BYTES));
    expect(loadConfig({ MAX_SOCKETS: '7', MAX_SUBSCRIPTIONS: '0' }, gib)).toMatchObject({
      maxSockets: 7,
      maxSubscriptions: 0,
    });
    expect(() => loadConfig({ MAX_SUBSCRIPTIONS: 'lots' })).toThrow(
      /^MAX_SUBSCRIPTIONS: must be a whole number/,
    );
  });

  it('reads the socket limits: MAX_SOCKETS and SOCKET_COMMANDS_PER_MINUTE (0: off), SUBSCRIBE_TO_ALL', () => {
    expect(loadConfig({})).toMatchObject({
      maxSockets: defaultMaxSockets(heapSizeLimit()),
      socketCommandsPerMinute: 60,
      subscribeToAll: true,
    });
    expect(
      loadConfig({ MAX_SOCKETS: '0', SOCKET_COMMANDS_PER_MINUTE: '0', SUBSCRIBE_TO_ALL: 'false' }),
    ).toMatchObject({ maxSockets: 0, socketCommandsPerMinute: 0, subscribeToAll: false });
    expect(
      loadConfig({ MAX_SOCKETS: '2', SOCKET_COMMANDS_PER_MINUTE: '600', SUBSCRIBE_TO_ALL: 'true' }),
    ).toMatchObject({ maxSockets: 2, socketCommandsPerMinute: 600, subscribeToAll: true });
    expect(() => loadConfig({ MAX_SOCKETS: '-1' })).toThrow(/^MAX_SOCKETS: must be a whole number/);
    expect(() => loadConfig({ SOCKET_COMMANDS_PER_MINUTE: '1.5' })).toThrow(
      /^SOCKET_COMMANDS_PER_MINUTE: must be a whole number/,
    );
    for (const value of ['no', '0', 'TRUE']) {
      expect(() => loadConfig({ SUBSCRIBE_TO_ALL: value })).toThrow(
        /^SUBSCRIBE_TO_ALL: must be true or false/,
      );
    }
  });

  it('reads WEBHOOKS_PER_USER (1–100) and WEBHOOKS_ALLOW_PRIVATE (off unless said)', () => {
    expect(loadConfig({})).toMatchObject({ webhooksPerUser: 5, webhooksAllowPrivate: false });
    expect(loadConfig({ WEBHOOKS_PER_USER: '1', WEBHOOKS_ALLOW_PRIVATE: 'true' })).toMatchObject({
      webhooksPerUser: 1,
      webhooksAllowPrivate: true,
    });
    for (const value of ['0', '101', 'five']) {
      expect(() => loadConfig({ WEBHOOKS_PER_USER: value })).toThrow(
        /^WEBHOOKS_PER_USER: must be a whole number/,
      );
    }
    expect(() => loadConfig({ WEBHOOKS_ALLOW_PRIVATE: 'yes' })).toThrow(
      /^WEBHOOKS_ALLOW_PRIVATE: must be true or false/,
    );
  });

  it('reads who is monitored, for how long what is kept stays, and whom to ask', () => {
    expect(loadConfig({})).toMatchObject({
      monitor: 'all',
      monitorRoleId: null,
      guildIds: null,
      allowedUserIds: null,
      retentionDays: 30,
      operatorContact: null,
    });
    expect(
      loadConfig({
        MONITOR: 'opt-in',
        MONITOR_ROLE_ID: '123456789012345678',
        GUILD_IDS: '111111111111111111, 222222222222222222',
        ALLOWED_USER_IDS: '333333333333333333',
        RETENTION_DAYS: '0',
        OPERATOR_CONTACT: 'privacy@example.com',
      }),
    ).toMatchObject({
      monitor: 'opt-in',
      monitorRoleId: '123456789012345678',
      guildIds: ['111111111111111111', '222222222222222222'],
      allowedUserIds: ['333333333333333333'],
      retentionDays: 0,
      operatorContact: 'privacy@example.com',
    });
    expect(() => loadConfig({ MONITOR: 'some' })).toThrow(/^MONITOR: must be one of all, opt-in/);
    expect(() => loadConfig({ MONITOR_ROLE_ID: 'mods' })).toThrow(/^MONITOR_ROLE_ID: must be a role id/);
    expect(() => loadConfig({ GUILD_IDS: '1,x' })).toThrow(/^GUILD_IDS: must be a comma-separated list/);
    expect(() => loadConfig({ ALLOWED_USER_IDS: 'me' })).toThrow(/^ALLOWED_USER_IDS: must be/);
    expect(() => loadConfig({ RETENTION_DAYS: '-1' })).toThrow(/^RETENTION_DAYS: must be a whole number/);
    expect(() => loadConfig({ OPERATOR_CONTACT: 'a\nb' })).toThrow(/^OPERATOR_CONTACT: must be/);
  });
});

describe('GATEWAY_COMPRESSION', () => {
  it('is off unless zlib-stream is asked for, as docs/configuration.md says, and refuses anything else', () => {
    const docs = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    expect(docs).toMatch(/^\| `GATEWAY_COMPRESSION` \| `off` \|/m);
    expect(loadConfig({}).gatewayCompression).toBe(false);
    expect(loadConfig({ GATEWAY_COMPRESSION: 'zlib-stream' }).gatewayCompression).toBe(true);
    expect(() => loadConfig({ GATEWAY_COMPRESSION: 'zstd-stream' })).toThrow(ConfigError);
  });
});
