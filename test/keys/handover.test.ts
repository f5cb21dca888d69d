import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { ApiKeyService, PENDING_KEY_MS } from '../../src/keys/service.js';
import type { Store } from '../../src/store/ports.js';
import { openPostgresStore } from '../../src/store/postgres/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';

/**
 * Handing a key over, on each SQL store: the key works from the moment it is sent, beside the old one;
 * once Discord took the message the old key is dead; a key that was not sent or not activated never
 * becomes the user's key; a key left pending by a process that stopped works no longer than its bound.
 */

const hasPostgres = await postgresAvailable('key handover on PostgreSQL');
const database: TestDatabase | null = hasPostgres ? await createTestDatabase() : null;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});
afterAll(async () => {
  await database?.drop();
});

const USER = '42';
const T0 = Date.UTC(2026, 11, 6, 12);

function handoverContract(name: string, open: () => Promise<Store>, skip = false): void {
  describe.skipIf(skip)(`a key handed over on ${name}`, () => {
    async function setup() {
      const store = await open();
      closers.push(() => store.close());
      const clock = { now: T0 };
      const service = new ApiKeyService(store.apiKeys, () => clock.now);
      const old = await handOverAccepted(service);
      return { store, clock, service, old };
    }

    /** A key handed over and taken; the key. */
    async function handOverAccepted(service: ApiKeyService): Promise<string> {
      let key = '';
      const handover = await service.handOver(USER, async (sent) => {
        key = sent;
        return { accepted: true };
      });
      expect(handover.outcome).toBe('active');
      return key;
    }

    it('works while it is being sent, beside the old key; once sent, the old key is dead', async () => {
      const { service, old } = await setup();
      let fresh = '';
      const handover = await service.handOver(USER, async (key) => {
        fresh = key;
        // What the owner can do the instant the message can be read, before Discord answers the bot.
        expect(await service.ownerOf(key)).toBe(USER);
        expect(await service.ownerOf(old)).toBe(USER);
        return { accepted: true };
      });
      expect(handover).toEqual({ outcome: 'active', sent: { accepted: true } });
      expect(await service.ownerOf(fresh)).toBe(USER);
      expect(await service.ownerOf(old)).toBeUndefined();
    });

    it('two handovers asked side by side both end active, the later key the only one that works', async () => {
      const { service, old } = await setup();
      const keys: string[] = [];
      const handOver = () =>
        service.handOver(USER, async (key) => {
          keys.push(key);
          return { accepted: true };
        });
      const [first, second] = await Promise.all([handOver(), handOver()]);
      expect(first.outcome).toBe('active');
      expect(second.outcome).toBe('active');
      expect(await service.ownerOf(keys[1] as string)).toBe(USER);
      expect(await service.ownerOf(keys[0] as string)).toBeUndefined();
      expect(await service.ownerOf(old)).toBeUndefined();
    });

    it('not sent, never works after; the old key still does', async () => {
      const { service, old } = await setup();
      let unsent = '';
      const refused = await service.handOver(USER, async (key) => {
        unsent = key;
        return { accepted: false, reason: 'no' };
      });
      expect(refused).toEqual({ outcome: 'not-sent', sent: { accepted: false, reason: 'no' } });
      expect(await service.ownerOf(unsent)).toBeUndefined();
      expect(await service.ownerOf(old)).toBe(USER);
    });

    it('not stored, is never sent; the old key still works', async () => {
      const { store, service, old } = await setup();
      const failure = new Error('the disk is full');
      const add = vi.spyOn(store.apiKeys, 'addPendingKey').mockRejectedValueOnce(failure);
      const send = vi.fn(async () => ({ accepted: true }));
      expect(await service.handOver(USER, send)).toEqual({ outcome: 'not-stored', error: failure });
      add.mockRestore();
      expect(send).not.toHaveBeenCalled();
      expect(await service.ownerOf(old)).toBe(USER);
    });

    it('sent but not activated, works no more; the old key still does', async () => {
      const { store, service, old } = await setup();
      const failure = new Error('the disk is full');
      const activate = vi.spyOn(store.apiKeys, 'activateKey').mockRejectedValueOnce(failure);
      let unsaved = '';
      const lost = await service.handOver(USER, async (key) => {
        unsaved = key;
        return { accepted: true };
      });
      activate.mockRestore();
      expect(lost).toEqual({ outcome: 'not-activated', sent: { accepted: true }, error: failure });
      expect(await service.ownerOf(unsaved)).toBeUndefined();
      expect(await service.ownerOf(old)).toBe(USER);
    });

    it('left pending by a process that stopped mid-send, works until its bound and never after', async () => {
      const { store, clock, old } = await setup();
      let pending = '';
      const stopped = new ApiKeyService(store.apiKeys, () => clock.now);
      void stopped.handOver(USER, (key) => {
        pending = key;
        return new Promise<never>(() => {});
      });
      await vi.waitUntil(() => pending !== '');
      // The next process, on the same store.
      const next = new ApiKeyService(store.apiKeys, () => clock.now);
      expect(await next.ownerOf(pending)).toBe(USER);
      clock.now = T0 + PENDING_KEY_MS;
      expect(await next.ownerOf(pending)).toBeUndefined();
      expect(await next.ownerOf(old)).toBe(USER);
    });
  });
}

handoverContract('SQLite', async () => openSqliteStore({ kind: 'sqlite-memory' }));
handoverContract(
  'PostgreSQL',
  async () => openPostgresStore(await (database as TestDatabase).schema()),
  !hasPostgres,
);

describe.skipIf(!hasPostgres)('a key revoked on PostgreSQL while its activation is under way', () => {
  it('stays revoked: the revocation waits for the activation and then finds the key live', async () => {
    // Statements wait for the lock the test holds for as long as the test takes.
    const store = await openPostgresStore(await (database as TestDatabase).schema(), {
      timeouts: { statementMs: 60_000 },
    });
    closers.push(() => store.close());
    const hash = hashApiKey(generateApiKey());
    await store.apiKeys.addPendingKey(USER, hash, Date.now(), Date.now() + 60_000);
    // The pending row is held, so the activation and then the revocation queue behind it, in that order.
    let activated: Promise<boolean> | undefined;
    let revoked: Promise<boolean> | undefined;
    const holder = await store.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM api_keys_pending WHERE user_id = $1 FOR UPDATE', [USER]);
      const waiting = async () => {
        // Asked outside the holder's transaction, which would see the same snapshot of activity each time.
        const { rows } = await store.pool.query(
          "SELECT count(*)::integer AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        );
        return rows[0].n as number;
      };
      activated = store.apiKeys.activateKey(USER, hash, Date.now());
      await eventually(async () => expect(await waiting()).toBe(1));
      revoked = store.apiKeys.revokeKey(hash);
      await eventually(async () => expect(await waiting()).toBe(2));
    } finally {
      await holder.query('COMMIT');
      holder.release();
    }
    expect(await activated).toBe(true);
    expect(await revoked).toBe(true);
    expect(await store.apiKeys.findKey(hash)).toBeUndefined();
  });
});
