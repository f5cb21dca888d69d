import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReadBudget } from '../../src/limits/read-budget.js';
import { eventually } from '../support/eventually.js';
import {
  dropPrefix,
  limiterConnection,
  REDIS_TEST_URL,
  redisAvailable,
  startPrivateRedis,
  uniquePrefix,
} from '../support/redis.js';

const hasRedis = await redisAvailable('read budgets shared through Redis');
const MINUTE = 60_000;
/** 12:00:15 UTC: 45 s before the window ends. */
const AT_15_S = Date.UTC(2026, 0, 1, 12, 0, 15);
/** A sync interval no test waits for: the tests sync by hand. */
const NEVER = 3_600_000;

const budgets: ReadBudget[] = [];
const connections: Redis[] = [];

afterEach(async () => {
  vi.useRealTimers();
  for (const budget of budgets.splice(0)) budget.close();
  for (const redis of connections.splice(0)) redis.disconnect();
});

function budget(options: Partial<ConstructorParameters<typeof ReadBudget>[0]> = {}): ReadBudget {
  const made = new ReadBudget({ max: 5, windowMs: MINUTE, ...options });
  budgets.push(made);
  return made;
}

describe('a read budget', () => {
  it('counts each client within the clock’s window, and starts every client afresh when it ends', () => {
    vi.useFakeTimers();
    vi.setSystemTime(AT_15_S);
    const reads = budget();
    expect([reads.charge('a', 1), reads.charge('a', 1), reads.charge('b', 1)]).toEqual([1, 2, 1]);
    expect(reads.secondsLeft()).toBe(45);
    vi.advanceTimersByTime(44_500);
    expect(reads.charge('a', 1)).toBe(3);
    expect(reads.secondsLeft()).toBe(1);
    vi.advanceTimersByTime(500);
    expect(reads.charge('a', 1)).toBe(1);
    expect(reads.secondsLeft()).toBe(60);
    expect(reads.clients).toBe(1);
  });

  it('charges several reads at once (a bulk read), past the budget too', () => {
    vi.useFakeTimers();
    vi.setSystemTime(AT_15_S);
    const reads = budget();
    expect(reads.charge('a', 4)).toBe(4);
    expect(reads.charge('a', 3)).toBe(7);
    expect(reads.charge('a', 1)).toBe(8);
    expect(reads.charge('b', 5)).toBe(5);
  });

  it('counts thousands of IPv4 clients apart, and IPv6 /64s and other names beside them', () => {
    vi.useFakeTimers();
    vi.setSystemTime(AT_15_S);
    const reads = budget({ max: 100 });
    // Alike but for one byte, in every position: 4 × 1,250 addresses.
    const addresses = [0, 1, 2, 3].flatMap((position) =>
      Array.from({ length: 1_250 }, (_, n) => {
        const bytes = [10, 20, 30, 40];
        bytes[position] = n % 256;
        bytes[(position + 1) % 4] = 100 + Math.floor(n / 256);
        return bytes.join('.');
      }),
    );
    const others = ['2001:db8:0:1::', '2001:db8:0:2::', 'unknown', '0.1.2.3'];
    const clients = [...new Set([...addresses, ...others])];
    clients.forEach((client, n) => {
      for (let read = 0; read < n % 3; read++) reads.charge(client, 1);
    });
    expect(clients.map((client, n) => reads.charge(client, 1) - 1 - (n % 3))).toEqual(clients.map(() => 0));
    expect(reads.clients).toBe(clients.length);
    // The same address however its bytes are written.
    expect(reads.charge('10.020.030.040', 1)).toBe(reads.charge('10.20.30.40', 0));
    // Not addresses: counted by name.
    for (const name of ['1.2.3', '1.2.3.4.5', '1.2.3.256', '1..2.3']) expect(reads.charge(name, 2)).toBe(2);
  });

  it('keeps no text that cannot be an address: every such client is counted as one', () => {
    vi.useFakeTimers();
    vi.setSystemTime(AT_15_S);
    const reads = budget();
    const junk = (n: number) => `${n}${'x'.repeat(15_000)}`;
    expect([reads.charge(junk(1), 1), reads.charge(junk(2), 1), reads.charge('1.2.3.4 ', 1)]).toEqual([
      1, 2, 3,
    ]);
    expect(reads.charge('2001:DB8:0:1::', 1)).toBe(1);
    expect(reads.clients).toBe(2);
  });

  it('holds at most maxClients clients a window: one more is let through uncounted; the next window holds none', () => {
    vi.useFakeTimers();
    vi.setSystemTime(AT_15_S);
    const reads = budget({ maxClients: 3 });
    for (const client of ['198.51.100.1', '2001:db8::', 'unknown']) reads.charge(client, 1);
    for (const client of ['198.51.100.2', '2001:db8:0:1::']) {
      expect([reads.charge(client, 1), reads.charge(client, 1), reads.charge(client, 2)]).toEqual([1, 1, 2]);
    }
    expect(reads.charge('198.51.100.1', 1)).toBe(2);
    expect(reads.charge('2001:db8::', 1)).toBe(2);
    expect(reads.clients).toBe(3);
    vi.advanceTimersByTime(MINUTE);
    expect(reads.charge('198.51.100.2', 1)).toBe(1);
    expect(reads.clients).toBe(1);
  });
});

describe.skipIf(!hasRedis)('read budgets of several nodes sharing one Redis', () => {
  const prefixes: string[] = [];
  afterEach(async () => {
    const redis = new Redis(REDIS_TEST_URL);
    for (const prefix of prefixes.splice(0)) await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  async function nodes(count: number, max: number): Promise<ReadBudget[]> {
    const prefix = uniquePrefix();
    prefixes.push(prefix);
    const redis = await limiterConnection(connections);
    return Array.from({ length: count }, () => budget({ max, shared: { redis, prefix, syncMs: NEVER } }));
  }

  const CLIENT = '203.0.113.9';
  /** Charges one read of `client` on `node`; whether it was admitted. */
  const admitted = (node: ReadBudget, client: string) => node.charge(client, 1) <= node.max;

  it('enforce the combined limit, past it by no more than the nodes admit within two syncs', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(AT_15_S);
    const max = 100;
    const perSync = 7;
    const all = await nodes(3, max);
    let total = 0;
    let lastRounds: number[] = [];
    for (let round = 0; round < 20; round++) {
      let thisRound = 0;
      for (let n = 0; n < perSync; n++) {
        for (const node of all) if (admitted(node, CLIENT)) thisRound++;
      }
      total += thisRound;
      lastRounds = [...lastRounds.slice(-1), thisRound];
      // The nodes sync in turns, each in a different order: every node's view lags by a sync at times.
      const order = round % 2 === 0 ? all : [...all].reverse();
      for (const node of order) await node.sync();
    }
    // Never short of the limit; past it by at most what the nodes admit within two syncs.
    expect(total).toBeGreaterThanOrEqual(max);
    expect(total).toBeLessThanOrEqual(max + 2 * perSync * all.length);
    // Every node now knows the client is spent, and a new client is not.
    for (const node of all) expect(admitted(node, CLIENT)).toBe(false);
    expect(lastRounds).toEqual([0, 0]);
    expect(admitted(all[0] as ReadBudget, '203.0.113.10')).toBe(true);
  });

  it('a node that has not synced since the client read elsewhere admits it until its next sync, then refuses', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(AT_15_S);
    const [a, b] = (await nodes(2, 10)) as [ReadBudget, ReadBudget];
    expect(admitted(b, CLIENT)).toBe(true);
    await b.sync();
    // a has not synced since b's read: it decides from its own reads alone until it does.
    for (let n = 0; n < 10; n++) expect(admitted(a, CLIENT)).toBe(true);
    expect(admitted(a, CLIENT)).toBe(false);
    await a.sync();
    // b last heard 1: until it syncs, it decides from that and its own reads.
    expect(admitted(b, CLIENT)).toBe(true);
    await b.sync();
    expect(admitted(b, CLIENT)).toBe(false);
  });

  it('count a window under its own key, gone after the next window', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(AT_15_S);
    const [a] = (await nodes(1, 10)) as [ReadBudget];
    a.charge('198.51.100.7', 3);
    a.charge('2001:db8:0:1::', 2);
    await a.sync();
    const redis = await limiterConnection(connections);
    const window = `${prefixes[0]}rate-limit:read:${Math.floor(AT_15_S / MINUTE)}`;
    expect((await redis.keys(`${prefixes[0]}rate-limit:read:*`)).sort()).toEqual([
      `${window}:198.51.100.7`,
      `${window}:2001:db8:0:1::`,
    ]);
    expect(await redis.get(`${window}:198.51.100.7`)).toBe('3');
    expect(await redis.get(`${window}:2001:db8:0:1::`)).toBe('2');
    const ttl = await redis.pttl(`${window}:198.51.100.7`);
    expect(ttl).toBeGreaterThan(MINUTE);
    expect(ttl).toBeLessThanOrEqual(2 * MINUTE);
  });

  it('Redis away: reads are let through, counted by the node alone, and added to the shared count once it is back', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(AT_15_S);
    const server = await startPrivateRedis();
    try {
      const prefix = uniquePrefix();
      const redis = await limiterConnection(connections, server.url);
      const node = budget({ max: 5, shared: { redis, prefix, syncMs: NEVER } });
      expect(admitted(node, '2001:db8:0:9::')).toBe(true);
      await node.sync();
      server.kill();
      await eventually(() => expect(redis.status).not.toBe('ready'));
      for (let n = 0; n < 4; n++) expect(admitted(node, '2001:db8:0:9::')).toBe(true);
      await node.sync();
      expect(admitted(node, '2001:db8:0:9::')).toBe(false);
      await server.start();
      await eventually(() => expect(redis.status).toBe('ready'));
      await node.sync();
      expect(await redis.get(`${prefix}rate-limit:read:${Math.floor(AT_15_S / MINUTE)}:2001:db8:0:9::`)).toBe(
        '6',
      );
    } finally {
      server.remove();
    }
  });
});
