import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountService } from '../../src/account/service.js';
import { LocalBus } from '../../src/bus/local.js';
import type { Erasure } from '../../src/store/ports.js';

/**
 * The erasure of everything, its store and its neighbours stood in for: what is announced, in which
 * order, and that an announcement that fails does not undo or fail the erasure.
 */

const USER = '94490510688792576';
const AT = Date.UTC(2026, 11, 6);
const ERASED: Erasure = {
  statusEntries: 3,
  trackEntries: 2,
  playCounts: 1,
  kvKeys: ['a', 'b'],
  kvRevision: 8,
  apiKeys: 1,
  readTokens: 0,
  webhookIds: ['wh_0123456789abcdef'],
  privacySettings: true,
  profile: true,
};

function setup(erasure: Erasure, failing: string[] = []) {
  const told: string[] = [];
  const logged: Array<{ msg: string }> = [];
  const bus = new LocalBus();
  bus.subscribe('history.forgotten', ({ userId, at }) => told.push(`history ${userId} ${at}`));
  bus.subscribe('read-tokens.revoked', ({ userId, tokenId }) =>
    told.push(`read tokens ${userId} ${tokenId}`),
  );
  const step =
    (name: string) =>
    async (..._args: unknown[]) => {
      told.push(name);
      if (failing.includes(name)) throw new Error(`${name} failed`);
    };
  const service = new AccountService({
    store: { erase: async () => erasure, details: async () => ({ key: null, historyErasedAt: null }) },
    bus,
    kv: { erased: async (userId, revision, keys) => step(`kv ${userId} ${revision} ${keys.join(',')}`)() },
    webhooks: { erased: async (_userId, ids) => step(`webhooks ${ids.join(',')}`)() },
    privacy: { erased: step('privacy') },
    logger: pino({ level: 'warn' }, { write: (line: string) => logged.push(JSON.parse(line)) }),
    now: () => AT,
  });
  return { service, told, logged };
}

describe('erasing everything about a user', () => {
  it('announces the webhooks, then the KV, then the settings, then the history', async () => {
    const { service, told } = setup(ERASED);
    expect(await service.erase(USER)).toBe(ERASED);
    expect(told).toEqual([
      'webhooks wh_0123456789abcdef',
      `kv ${USER} 8 a,b`,
      'privacy',
      `history ${USER} ${AT}`,
    ]);
  });

  it("announces the read tokens erased last, all of the user's at once", async () => {
    const { service, told } = setup({ ...ERASED, readTokens: 2 });
    await service.erase(USER);
    expect(told.at(-1)).toBe(`read tokens ${USER} null`);
  });

  it('announces no webhooks or KV the user did not have; the settings and history always', async () => {
    const { service, told } = setup({ ...ERASED, kvKeys: [], webhookIds: [], privacySettings: false });
    await service.erase(USER);
    expect(told).toEqual(['privacy', `history ${USER} ${AT}`]);
  });

  it('logs an announcement that fails and goes on: the store has erased it all already', async () => {
    const { service, told, logged } = setup(ERASED, [`kv ${USER} 8 a,b`]);
    expect(await service.erase(USER)).toBe(ERASED);
    expect(told).toHaveLength(4);
    expect(logged.map((line) => line.msg)).toEqual(["could not announce the erasure of a user's KV"]);
  });
});
