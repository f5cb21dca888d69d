import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  MemoryWindowCounter,
  RedisWindowCounter,
  UNCOUNTED,
  type WindowCounter,
} from '../../src/limits/window-counter.js';
import { eventually } from '../support/eventually.js';
import {
  dropPrefix,
  limiterConnection,
  REDIS_TEST_URL,
  redisAvailable,
  startPrivateRedis,
  uniquePrefix,
} from '../support/redis.js';

const hasRedis = await redisAvailable('window counters in Redis');
const MINUTE = 60_000;

afterEach(() => {
  vi.useRealTimers();
});

describe('a window counter in memory', () => {
  it('counts a key within a window that starts with its first charge, then starts a new one from nothing', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const counter = new MemoryWindowCounter(MINUTE);
    expect(await counter.charge('a')).toEqual({ count: 1, msLeft: MINUTE });
    vi.advanceTimersByTime(15_000);
    expect(await counter.charge('a')).toEqual({ count: 2, msLeft: 45_000 });
    // Another key's window starts with its own first charge.
    expect(await counter.charge('b')).toEqual({ count: 1, msLeft: MINUTE });
    vi.advanceTimersByTime(44_999);
    expect(await counter.charge('a')).toEqual({ count: 3, msLeft: 1 });
    vi.advanceTimersByTime(1);
    expect(await counter.charge('a')).toEqual({ count: 1, msLeft: MINUTE });
    expect(await counter.charge('b')).toEqual({ count: 2, msLeft: 15_000 });
  });

  it('charges several at once', async () => {
    const counter = new MemoryWindowCounter(MINUTE);
    expect((await counter.charge('a', 3)).count).toBe(3);
    expect((await counter.charge('a', 2)).count).toBe(5);
  });

  it('past the keys it may count, forgets the one charged least recently: its next charge starts afresh', async () => {
    const counter = new MemoryWindowCounter(MINUTE, 2);
    await counter.charge('a');
    await counter.charge('a');
    await counter.charge('b');
    // a, charged again, is more recent than b: c takes b's place.
    expect((await counter.charge('a')).count).toBe(3);
    await counter.charge('c');
    expect((await counter.charge('a')).count).toBe(4);
    expect((await counter.charge('b')).count).toBe(1);
  });
});

describe.skipIf(!hasRedis)('a window counter in Redis', () => {
  const connections: Redis[] = [];
  const prefixes: string[] = [];
  afterEach(async () => {
    const redis = new Redis(REDIS_TEST_URL);
    for (const prefix of prefixes.splice(0)) await dropPrefix(redis, prefix);
    redis.disconnect();
    for (const connection of connections.splice(0)) connection.disconnect();
  });

  async function prefix(): Promise<string> {
    const made = uniquePrefix();
    prefixes.push(made);
    return made;
  }

  it('counts each key under the prefix, kept a window from its first charge, one count for every node', async () => {
    const keys = await prefix();
    const redis = await limiterConnection(connections);
    // Two nodes, each with a connection of its own.
    const a: WindowCounter = new RedisWindowCounter(redis, keys, MINUTE);
    const b: WindowCounter = new RedisWindowCounter(await limiterConnection(connections), keys, MINUTE);
    expect(await a.charge('user:1')).toEqual({ count: 1, msLeft: MINUTE });
    const second = await b.charge('user:1');
    expect(second.count).toBe(2);
    expect(second.msLeft).toBeGreaterThan(MINUTE - 5_000);
    expect(second.msLeft).toBeLessThanOrEqual(MINUTE);
    expect((await a.charge('user:1', 3)).count).toBe(5);
    expect((await b.charge('ip:192.0.2.1')).count).toBe(1);
    expect((await redis.keys(`${keys}*`)).sort()).toEqual([`${keys}ip:192.0.2.1`, `${keys}user:1`]);
    expect(await redis.get(`${keys}user:1`)).toBe('5');
    expect(await redis.pttl(`${keys}user:1`)).toBeLessThanOrEqual(MINUTE);
  });

  it('starts a new window once the last one has ended', async () => {
    const counter = new RedisWindowCounter(await limiterConnection(connections), await prefix(), 200);
    await counter.charge('a');
    expect((await counter.charge('a')).count).toBe(2);
    await eventually(async () => expect(await counter.charge('a')).toEqual({ count: 1, msLeft: 200 }));
  });

  it('gives a count found without an expiry one, so its key is not refused for ever', async () => {
    const keys = await prefix();
    const redis = await limiterConnection(connections);
    await redis.set(`${keys}user:1`, '1000');
    const counter = new RedisWindowCounter(redis, keys, MINUTE);
    expect(await counter.charge('user:1')).toEqual({ count: 1001, msLeft: MINUTE });
    expect(await redis.pttl(`${keys}user:1`)).toBeGreaterThan(0);
  });

  it('charges many keys in one round trip', async () => {
    const counter = new RedisWindowCounter(await limiterConnection(connections), await prefix(), MINUTE);
    await counter.charge('a', 2);
    const counted = await counter.chargeAll([
      ['a', 3],
      ['b', 1],
    ]);
    expect(counted.map(({ count }) => count)).toEqual([5, 1]);
    expect(counted[1]?.msLeft).toBe(MINUTE);
  });

  it('Redis away: every charge is UNCOUNTED, and counted again once it is back', async () => {
    const server = await startPrivateRedis();
    try {
      const redis = await limiterConnection(connections, server.url);
      const counter = new RedisWindowCounter(redis, uniquePrefix(), MINUTE);
      expect((await counter.charge('a')).count).toBe(1);
      server.kill();
      await eventually(() => expect(redis.status).not.toBe('ready'));
      expect(await counter.charge('a')).toBe(UNCOUNTED);
      expect(await counter.chargeAll([['a', 1]])).toEqual([UNCOUNTED]);
      await server.start();
      await eventually(() => expect(redis.status).toBe('ready'));
      expect((await counter.charge('a')).count).toBe(2);
    } finally {
      server.remove();
    }
  });
});
