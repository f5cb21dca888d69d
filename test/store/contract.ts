import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { TrackEntry } from '../../src/model/history.js';
import type { DeliveryRecord, StoredWebhook } from '../../src/model/webhook.js';
import { PAUSED_UNTIL_UNDONE, type PrivacyPatch } from '../../src/presence/privacy.js';
import type {
  HistoryWrite,
  SavedGatewaySession,
  SavedGatewayState,
  Store,
  StoredReadToken,
} from '../../src/store/ports.js';
import { KV_LIMITS } from '../support/kv.js';
import { profileOf } from '../support/profiles.js';

/**
 * What every store adapter must do, whatever it is built on: the embedded SQLite store and the Redis
 * store both run this suite, so the service behaves the same on one machine and on many.
 */

const T0 = Date.UTC(2026, 10, 22, 12);
const LIMITS = { history: 100, trackedTracks: 1000 };

function entry(id: string | null, ts: number): TrackEntry {
  return {
    source: 'spotify',
    song: `Song ${id}`,
    artist: 'Artist',
    album: 'Album',
    album_art_url: null,
    track_id: id,
    track_url: null,
    timestamps: { start: ts, end: ts + 1000 },
    duration_ms: 1000,
    ts,
  };
}

const play = (userId: string, id: string | null, ts: number): HistoryWrite => ({
  userId,
  status: null,
  track: entry(id, ts),
  countsPlay: id !== null,
  lastSeen: null,
});

const write = (set: Record<string, string>, del: string[] = []) => ({
  set: new Map(Object.entries(set)),
  delete: del,
});
/** A key limit, with room for any number of bytes the tests of it write. */
const keyLimit = (maxKeys: number) => ({ ...KV_LIMITS, maxKeys });
/** A byte cap, with room for any number of keys the tests of it write. */
const byteCap = (maxBytes: number) => ({ ...KV_LIMITS, maxBytes });

/**
 * A write, and the KV it left as the store reads it afterwards: the refusal as it is, `kv: null` for a
 * write that changed nothing (the store answers only the revision and whether anything changed).
 */
async function writeAndRead(
  store: Store,
  userId: string,
  change: ReturnType<typeof write>,
  limits: typeof KV_LIMITS,
) {
  const result = await store.kv.writeKv(userId, change, limits);
  if ('refused' in result) return result;
  return { revision: result.revision, kv: result.changed ? (await store.kv.getKv(userId)).kv : null };
}

/**
 * Opens a store of its own, or, given another, that store's data again: after it was closed, as a restart
 * does, or beside it, as a second node does.
 */
export type OpenStore = (reopening?: Store) => Promise<Store>;

export function storeContract(name: string, openStore: OpenStore, skip = false): void {
  describe.skipIf(skip)(`${name} store contract`, () => {
    const opened: Store[] = [];
    const open = async (reopening?: Store): Promise<Store> => {
      const store = await openStore(reopening);
      opened.push(store);
      return store;
    };
    /** Closes `store` and opens what it holds again, as a restart does. */
    const reopen = async (store: Store): Promise<Store> => {
      await store.close();
      return open(store);
    };
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });

    it('answers ping', async () => {
      expect(await (await open()).ping()).toBe(true);
    });

    it('keeps profiles, replacing what was there', async () => {
      const store = await open();
      expect(await profileOf(store, '1')).toBeUndefined();
      await store.profiles.putProfiles(
        new Map([
          ['1', { profile: { banner: 'a_1', accent_color: 42 }, fetchedAt: T0 }],
          ['2', { profile: { banner: null, accent_color: 7 }, fetchedAt: T0 }],
        ]),
      );
      await store.profiles.putProfiles(
        new Map([['1', { profile: { banner: null, accent_color: null }, fetchedAt: T0 + 1 }]]),
      );
      await store.profiles.putProfiles(new Map());
      expect(await profileOf(store, '1')).toEqual({
        profile: { banner: null, accent_color: null },
        fetchedAt: T0 + 1,
      });
      expect(await profileOf(store, '2')).toEqual({
        profile: { banner: null, accent_color: 7 },
        fetchedAt: T0,
      });
    });

    it('reads the profiles of many users in one call, leaving out those without one', async () => {
      const store = await open();
      expect(await store.profiles.getProfiles([])).toEqual(new Map());
      const stored = new Map(
        Array.from({ length: 1_500 }, (_, i) => [
          String(80_000_000_000_000_000n + BigInt(i * 2)),
          {
            profile: { banner: i % 3 === 0 ? null : `b${i}`, accent_color: i % 5 === 0 ? null : i },
            fetchedAt: T0 + i,
          },
        ]),
      );
      await store.profiles.putProfiles(stored);
      const asked = Array.from({ length: 3_000 }, (_, i) => String(80_000_000_000_000_000n + BigInt(i)));
      const found = await store.profiles.getProfiles(asked);
      expect(found).toEqual(stored);
      for (const [userId, profile] of found) expect(await profileOf(store, userId)).toEqual(profile);
    });

    it('keeps one live key per user: a new one revokes the previous at once', async () => {
      const store = await open();
      const first = Buffer.alloc(32, 1);
      const second = Buffer.alloc(32, 2);
      await store.apiKeys.replaceKey('1', first, T0);
      expect(await store.apiKeys.findKey(first)).toEqual({ userId: '1', hash: first });
      await store.apiKeys.replaceKey('1', second, T0 + 1);
      expect(await store.apiKeys.findKey(first)).toBeUndefined();
      expect(await store.apiKeys.findKey(second)).toEqual({ userId: '1', hash: second });
      expect(await store.apiKeys.findKey(Buffer.alloc(32, 3))).toBeUndefined();
    });

    it("rotating one user's key leaves other users' keys alone", async () => {
      const store = await open();
      const theirs = Buffer.alloc(32, 7);
      await store.apiKeys.replaceKey('2', theirs, T0);
      await store.apiKeys.replaceKey('1', Buffer.alloc(32, 1), T0);
      await store.apiKeys.replaceKey('1', Buffer.alloc(32, 2), T0 + 1);
      expect(await store.apiKeys.findKey(theirs)).toEqual({ userId: '2', hash: theirs });
    });

    it('revokes a key by its hash, leaving its owner without one and other keys alone', async () => {
      const store = await open();
      const leaked = Buffer.alloc(32, 1);
      const theirs = Buffer.alloc(32, 7);
      await store.apiKeys.replaceKey('1', leaked, T0);
      await store.apiKeys.replaceKey('2', theirs, T0);
      expect(await store.apiKeys.revokeKey(leaked)).toBe(true);
      expect(await store.apiKeys.findKey(leaked)).toBeUndefined();
      expect(await store.apiKeys.findKey(theirs)).toEqual({ userId: '2', hash: theirs });
      expect(await store.apiKeys.revokeKey(leaked)).toBe(false);
      expect(await store.apiKeys.revokeKey(Buffer.alloc(32, 3))).toBe(false);

      // A new key after a revocation works, and revoking the old hash again does not touch it.
      const fresh = Buffer.alloc(32, 2);
      await store.apiKeys.replaceKey('1', fresh, T0 + 1);
      expect(await store.apiKeys.revokeKey(leaked)).toBe(false);
      expect(await store.apiKeys.findKey(fresh)).toEqual({ userId: '1', hash: fresh });
      // And a later key replaces it as before, the revoked one staying dead.
      const later = Buffer.alloc(32, 4);
      await store.apiKeys.replaceKey('1', later, T0 + 2);
      expect(await store.apiKeys.findKey(fresh)).toBeUndefined();
      expect(await store.apiKeys.findKey(later)).toEqual({ userId: '1', hash: later });
    });

    describe("revoking a user's keys without knowing them", () => {
      const live = Buffer.alloc(32, 1);
      const pending = Buffer.alloc(32, 2);
      const theirs = Buffer.alloc(32, 7);
      const later = () => Date.now() + 60_000;

      it('ends the live and the pending key, counts them, and leaves other users alone', async () => {
        const store = await open();
        await store.apiKeys.replaceKey('1', live, T0);
        await store.apiKeys.addPendingKey('1', pending, Date.now(), later());
        await store.apiKeys.replaceKey('2', theirs, T0);
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(2);
        expect(await store.apiKeys.findKey(live)).toBeUndefined();
        expect(await store.apiKeys.findKey(pending)).toBeUndefined();
        expect(await store.apiKeys.activateKey('1', pending, Date.now())).toBe(false);
        expect(await store.apiKeys.findKey(theirs)).toEqual({ userId: '2', hash: theirs });
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(0);
        expect(await store.apiKeys.findKey(theirs)).toEqual({ userId: '2', hash: theirs });
      });

      it('counts a live key alone, or a pending key alone; a user with none has 0', async () => {
        const store = await open();
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(0);
        await store.apiKeys.replaceKey('1', live, T0);
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(1);
        expect(await store.apiKeys.findKey(live)).toBeUndefined();
        await store.apiKeys.addPendingKey('1', pending, Date.now(), later());
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(1);
        expect(await store.apiKeys.findKey(pending)).toBeUndefined();
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(0);
      });

      it('does not count a pending key past its expiry, which worked no more', async () => {
        const store = await open();
        await store.apiKeys.replaceKey('1', live, T0);
        await store.apiKeys.addPendingKey('1', pending, Date.now() - 2_000, Date.now() - 1_000);
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(1);
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(0);
      });

      it('leaves the user free to get a new key, which works', async () => {
        const store = await open();
        await store.apiKeys.replaceKey('1', live, T0);
        expect(await store.apiKeys.revokeKeysOf('1')).toBe(1);
        const fresh = Buffer.alloc(32, 3);
        await store.apiKeys.addPendingKey('1', fresh, Date.now(), later());
        expect(await store.apiKeys.activateKey('1', fresh, Date.now())).toBe(true);
        expect(await store.apiKeys.findKey(fresh)).toEqual({ userId: '1', hash: fresh });
        expect(await store.apiKeys.findKey(live)).toBeUndefined();
        // The old hash is nobody's: revoking it by hash finds nothing.
        expect(await store.apiKeys.revokeKey(live)).toBe(false);
      });
    });

    describe('a key handed over', () => {
      const live = Buffer.alloc(32, 1);
      const pending = Buffer.alloc(32, 2);
      const later = () => Date.now() + 60_000;

      it('works while pending beside the live key; activated, it is the only key', async () => {
        const store = await open();
        await store.apiKeys.replaceKey('1', live, T0);
        await store.apiKeys.addPendingKey('1', pending, Date.now(), later());
        expect(await store.apiKeys.findKey(pending)).toEqual({ userId: '1', hash: pending });
        expect(await store.apiKeys.findKey(live)).toEqual({ userId: '1', hash: live });
        expect(await store.apiKeys.activateKey('1', pending, Date.now())).toBe(true);
        expect(await store.apiKeys.findKey(live)).toBeUndefined();
        expect(await store.apiKeys.findKey(pending)).toEqual({ userId: '1', hash: pending });
        // Activated once: it is pending no more, and stays the live key.
        expect(await store.apiKeys.activateKey('1', pending, Date.now())).toBe(false);
        expect(await store.apiKeys.findKey(pending)).toEqual({ userId: '1', hash: pending });
      });

      it('discarded, never works again and cannot be activated; the live key stays', async () => {
        const store = await open();
        await store.apiKeys.replaceKey('1', live, T0);
        await store.apiKeys.addPendingKey('1', pending, Date.now(), later());
        await store.apiKeys.discardPendingKey('1', pending);
        expect(await store.apiKeys.findKey(pending)).toBeUndefined();
        expect(await store.apiKeys.activateKey('1', pending, Date.now())).toBe(false);
        expect(await store.apiKeys.findKey(live)).toEqual({ userId: '1', hash: live });
      });

      it('expired, works no more and cannot be activated', async () => {
        const store = await open();
        await store.apiKeys.replaceKey('1', live, T0);
        await store.apiKeys.addPendingKey('1', pending, Date.now() - 2_000, Date.now() - 1_000);
        expect(await store.apiKeys.findKey(pending)).toBeUndefined();
        expect(await store.apiKeys.activateKey('1', pending, Date.now())).toBe(false);
        expect(await store.apiKeys.findKey(live)).toEqual({ userId: '1', hash: live });
      });

      it('revoked while pending, works no more and cannot be activated; a newer pending key replaces an older', async () => {
        const store = await open();
        await store.apiKeys.addPendingKey('1', pending, Date.now(), later());
        expect(await store.apiKeys.revokeKey(pending)).toBe(true);
        expect(await store.apiKeys.findKey(pending)).toBeUndefined();
        expect(await store.apiKeys.activateKey('1', pending, Date.now())).toBe(false);

        const newer = Buffer.alloc(32, 3);
        await store.apiKeys.addPendingKey('1', pending, Date.now(), later());
        await store.apiKeys.addPendingKey('1', newer, Date.now(), later());
        expect(await store.apiKeys.findKey(pending)).toBeUndefined();
        expect(await store.apiKeys.activateKey('1', pending, Date.now())).toBe(false);
        expect(await store.apiKeys.activateKey('1', newer, Date.now())).toBe(true);
        expect(await store.apiKeys.findKey(newer)).toEqual({ userId: '1', hash: newer });
      });
    });

    describe('KV', () => {
      it('never passes the limit under concurrent writes: each is checked against what is stored', async () => {
        const store = await open();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.kv.writeKv('1', write({ [`k${i}`]: 'v' }), keyLimit(5))),
        );
        expect(results.filter((result) => 'refused' in result)).toHaveLength(15);
        const state = await store.kv.getKv('1');
        expect(Object.keys(state.kv)).toHaveLength(5);
        expect(state.revision).toBe(5);
      });

      it('a change that sets and deletes the same key keeps the set value', async () => {
        const store = await open();
        await store.kv.writeKv('1', write({ a: '1' }), KV_LIMITS);
        expect(await writeAndRead(store, '1', write({ a: '2' }, ['a']), KV_LIMITS)).toEqual({
          kv: { a: '2' },
          revision: 2,
        });
      });

      it('reads the KV of many users in one call as each alone, leaving out those who never wrote', async () => {
        const store = await open();
        expect(await store.kv.getKvs([])).toEqual(new Map());
        await store.kv.writeKv(
          '1',
          write(
            Object.fromEntries([
              ['b', '2'],
              ['a', '1'],
              ['__proto__', 'data'],
              ['é🎧', 'ünï'],
            ]),
          ),
          KV_LIMITS,
        );
        await store.kv.writeKv('2', write({ only: 'one' }), KV_LIMITS);
        await store.kv.writeKv('3', write({ gone: 'soon' }), KV_LIMITS);
        await store.kv.writeKv('3', write({}, ['gone']), KV_LIMITS);
        const found = await store.kv.getKvs(['1', '2', '3', '4', '1']);
        expect([...found.keys()].sort()).toEqual(['1', '2', '3']);
        for (const userId of ['1', '2', '3']) {
          const alone = await store.kv.getKv(userId);
          expect(found.get(userId)).toEqual(alone);
          expect(Object.keys(found.get(userId)?.kv ?? {})).toEqual(Object.keys(alone.kv));
        }
        expect(found.get('3')).toEqual({ kv: {}, revision: 2 });
      });

      it('orders keys by code point, as UTF-8 bytes sort, in either store', async () => {
        const store = await open();
        const keys = ['\uff01', '🎧', 'z', 'é', 'A', '\ue000', '\ud7ff'];
        await store.kv.writeKv('1', write(Object.fromEntries(keys.map((key) => [key, 'v']))), KV_LIMITS);
        const byCodePoint = [...keys].sort(
          (a, b) => (a.codePointAt(0) as number) - (b.codePointAt(0) as number),
        );
        expect(Object.keys((await store.kv.getKv('1')).kv)).toEqual(byCodePoint);
        expect(Object.keys((await store.kv.getKvs(['1'])).get('1')?.kv ?? {})).toEqual(byCodePoint);
      });

      it('merges, deletes and counts revisions', async () => {
        const store = await open();
        expect(await store.kv.getKv('1')).toEqual({ kv: {}, revision: 0 });
        expect(await writeAndRead(store, '1', write({ a: '1', b: '2' }), KV_LIMITS)).toEqual({
          kv: { a: '1', b: '2' },
          revision: 1,
        });
        expect(await writeAndRead(store, '1', write({ b: '3' }, ['a', 'missing']), KV_LIMITS)).toEqual({
          kv: { b: '3' },
          revision: 2,
        });
        expect(await store.kv.getKv('2')).toEqual({ kv: {}, revision: 0 });
      });

      it('refuses a write that would pass the limit and writes none of it', async () => {
        const store = await open();
        await store.kv.writeKv('1', write({ a: '1', b: '2' }), keyLimit(3));
        expect(await writeAndRead(store, '1', write({ c: '3', d: '4' }), keyLimit(3))).toEqual({
          refused: 'keys',
          wouldHave: 4,
        });
        expect(await store.kv.getKv('1')).toEqual({ kv: { a: '1', b: '2' }, revision: 1 });
        expect(await writeAndRead(store, '1', write({ a: 'x', c: '3' }), keyLimit(3))).toMatchObject({
          revision: 2,
        });
        expect(await writeAndRead(store, '1', write({ d: '4' }, ['a']), keyLimit(3))).toMatchObject({
          kv: { b: '2', c: '3', d: '4' },
        });
      });

      it('refuses a multi-key change whole: not even its updates of existing keys land', async () => {
        const store = await open();
        await store.kv.writeKv('1', write({ a: '1', b: '2' }), keyLimit(3));
        expect(
          await writeAndRead(store, '1', write({ a: 'changed', c: '3', d: '4' }, ['b']), keyLimit(2)),
        ).toEqual({
          refused: 'keys',
          wouldHave: 3,
        });
        expect(await store.kv.getKv('1')).toEqual({ kv: { a: '1', b: '2' }, revision: 1 });
      });

      it('counts a key deleted twice in one change once', async () => {
        const store = await open();
        await store.kv.writeKv('1', write({ a: '1', b: '2' }), keyLimit(2));
        expect(await writeAndRead(store, '1', write({ c: '3', d: '4' }, ['a', 'a']), keyLimit(2))).toEqual({
          refused: 'keys',
          wouldHave: 3,
        });
        expect(await writeAndRead(store, '1', write({ c: '3' }, ['a', 'a']), keyLimit(2))).toEqual({
          kv: { b: '2', c: '3' },
          revision: 2,
        });
      });

      it('answers the revision a write left and whether it changed anything, never the KV', async () => {
        const store = await open();
        expect(await store.kv.writeKv('1', write({ a: '1' }), KV_LIMITS)).toEqual({
          revision: 1,
          changed: true,
        });
        expect(await store.kv.writeKv('1', write({ a: '1' }), KV_LIMITS)).toEqual({
          revision: 1,
          changed: false,
        });
      });

      it('a write that changes nothing keeps the revision and answers no KV', async () => {
        const store = await open();
        await store.kv.writeKv('1', write({ a: '1', b: '2' }), KV_LIMITS);
        const unchanged = { revision: 1, kv: null };
        expect(await writeAndRead(store, '1', write({ a: '1' }), KV_LIMITS)).toEqual(unchanged);
        expect(await writeAndRead(store, '1', write({}, ['missing', 'missing']), KV_LIMITS)).toEqual(
          unchanged,
        );
        expect(await writeAndRead(store, '1', write({ b: '2' }, ['b', 'gone']), KV_LIMITS)).toEqual(
          unchanged,
        );
        expect(await store.kv.getKv('1')).toEqual({ kv: { a: '1', b: '2' }, revision: 1 });
        expect(await writeAndRead(store, '2', write({}, ['missing']), KV_LIMITS)).toEqual({
          revision: 0,
          kv: null,
        });
        expect(await store.kv.getKvs(['2'])).toEqual(new Map());
        expect(await writeAndRead(store, '1', write({ a: '1' }, ['b']), KV_LIMITS)).toEqual({
          kv: { a: '1' },
          revision: 2,
        });
      });

      it('refuses a write that would leave more bytes than the cap, counted in UTF-8, and writes none of it', async () => {
        const store = await open();
        const cap = byteCap(100);
        await store.kv.writeKv('1', write({ a: 'x'.repeat(50) }), cap);
        // One byte of key and 24 two-byte characters: 100 bytes in all, exactly the cap.
        expect(await writeAndRead(store, '1', write({ b: 'é'.repeat(24) }), cap)).toMatchObject({
          revision: 2,
        });
        expect(await writeAndRead(store, '1', write({ c: '' }), cap)).toEqual({
          refused: 'bytes',
          wouldHave: 101,
        });
        expect(await writeAndRead(store, '1', write({ a: 'x'.repeat(49), d: '🎧' }), cap)).toEqual({
          refused: 'bytes',
          wouldHave: 104,
        });
        expect(await store.kv.getKv('1')).toEqual({
          kv: { a: 'x'.repeat(50), b: 'é'.repeat(24) },
          revision: 2,
        });
        // What a write frees counts: a shorter value, a deleted key.
        expect(await writeAndRead(store, '1', write({ a: 'x'.repeat(48), c: '' }), cap)).toMatchObject({
          revision: 3,
        });
        expect(await writeAndRead(store, '1', write({ e: 'z'.repeat(49) }, ['a']), cap)).toMatchObject({
          kv: { b: 'é'.repeat(24), c: '', e: 'z'.repeat(49) },
          revision: 4,
        });
        expect(await writeAndRead(store, '1', write({ f: '' }), cap)).toEqual({
          refused: 'bytes',
          wouldHave: 101,
        });
      });

      it('never passes the byte cap under concurrent writes', async () => {
        const store = await open();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.kv.writeKv('1', write({ [`k${String(i).padStart(2, '0')}`]: 'v'.repeat(7) }), byteCap(50)),
          ),
        );
        expect(results.filter((result) => 'refused' in result)).toHaveLength(15);
        expect(Object.keys((await store.kv.getKv('1')).kv)).toHaveLength(5);
      });

      it('lets a user past the cap (written under a higher one) keep their KV and shrink it, never grow it', async () => {
        const store = await open();
        await store.kv.writeKv('1', write({ a: 'x'.repeat(200) }), byteCap(1_000));
        const cap = byteCap(100);
        expect(await writeAndRead(store, '1', write({ a: 'x'.repeat(201) }), cap)).toEqual({
          refused: 'bytes',
          wouldHave: 202,
        });
        expect(await writeAndRead(store, '1', write({ a: 'x'.repeat(200) }), cap)).toEqual({
          revision: 1,
          kv: null,
        });
        // As large as before is not larger: accepted.
        expect(await writeAndRead(store, '1', write({ a: 'y'.repeat(200) }), cap)).toMatchObject({
          revision: 2,
        });
        expect(await writeAndRead(store, '1', write({ a: 'x'.repeat(150) }), cap)).toMatchObject({
          revision: 3,
        });
        expect(await writeAndRead(store, '1', write({ b: 'v' }), cap)).toEqual({
          refused: 'bytes',
          wouldHave: 153,
        });
        expect(await store.kv.getKv('1')).toEqual({ kv: { a: 'x'.repeat(150) }, revision: 3 });
        expect(await writeAndRead(store, '1', write({ b: 'v' }, ['a']), cap)).toEqual({
          kv: { b: 'v' },
          revision: 4,
        });
        // Back under the cap, the cap holds again.
        expect(await writeAndRead(store, '1', write({ c: 'x'.repeat(97) }), cap)).toMatchObject({
          revision: 5,
        });
        expect(await writeAndRead(store, '1', write({ d: '' }), cap)).toEqual({
          refused: 'bytes',
          wouldHave: 101,
        });
      });

      it('keeps the byte total across a reopen', async () => {
        const first = await open();
        await first.kv.writeKv('1', write({ a: 'x'.repeat(80), gone: 'soon' }), byteCap(100));
        const store = await reopen(first);
        expect(
          await writeAndRead(store, '1', write({ b: 'x'.repeat(9) }, ['gone']), byteCap(100)),
        ).toMatchObject({
          revision: 2,
        });
        expect(await writeAndRead(store, '1', write({ c: 'x'.repeat(9) }), byteCap(100))).toEqual({
          refused: 'bytes',
          wouldHave: 101,
        });
      });

      it('keeps a key named __proto__ as data', async () => {
        const store = await open();
        const set = new Map([['__proto__', 'polluted']]);
        expect(await store.kv.writeKv('1', { set, delete: [] }, KV_LIMITS)).toEqual({
          revision: 1,
          changed: true,
        });
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        const read = await store.kv.getKv('1');
        expect(Object.hasOwn(read.kv, '__proto__')).toBe(true);
        expect(JSON.stringify(read.kv)).toBe('{"__proto__":"polluted"}');
      });
    });

    describe('history', () => {
      it('keeps the 100 most recent entries of each list, newest first', async () => {
        const store = await open();
        const writes: HistoryWrite[] = [];
        for (let i = 0; i < 150; i++) {
          writes.push({
            userId: '1',
            status: { status: i % 2 ? 'idle' : 'online', ts: T0 + i },
            track: null,
            countsPlay: false,
            lastSeen: null,
          });
          writes.push(play('1', `t${i}`, T0 + i));
        }
        await store.history.appendHistory(writes.slice(0, 100), LIMITS);
        await store.history.appendHistory(writes.slice(100), LIMITS);
        const { status, tracks } = await store.history.history('1', 100);
        expect(status).toHaveLength(100);
        expect(tracks).toHaveLength(100);
        expect(status[0]).toEqual({ status: 'idle', ts: T0 + 149 });
        expect(tracks[0]?.track_id).toBe('t149');
        expect(tracks[99]?.track_id).toBe('t50');
        expect((await store.history.stats('1')).trackHistoryCount).toBe(100);
      });

      it('reads the newest status and track of many users at once, leaving out users with neither', async () => {
        const store = await open();
        const status = (userId: string, ts: number): HistoryWrite => ({
          userId,
          status: { status: 'dnd', ts },
          track: null,
          countsPlay: false,
          lastSeen: null,
        });
        await store.history.appendHistory(
          [
            status('1', T0),
            play('1', 't1', T0 + 1),
            status('1', T0 + 2),
            play('2', 't2', T0 + 3),
            status('3', T0 + 4),
          ],
          LIMITS,
        );
        await store.history.appendHistory([play('1', 't3', T0 + 5)], LIMITS);
        const latest = await store.history.latest(['1', '2', '3', '4']);
        expect([...latest.keys()].sort()).toEqual(['1', '2', '3']);
        expect(latest.get('1')?.status).toEqual({ status: 'dnd', ts: T0 + 2 });
        expect(latest.get('1')?.track?.track_id).toBe('t3');
        expect(latest.get('2')).toMatchObject({ status: null, track: { track_id: 't2', ts: T0 + 3 } });
        expect(latest.get('3')).toEqual({ status: { status: 'dnd', ts: T0 + 4 }, track: null });
        expect((await store.history.latest([])).size).toBe(0);
      });

      it('orders top tracks by plays, then by last played; keeps the latest metadata', async () => {
        const store = await open();
        await store.history.appendHistory(
          [
            play('1', 'a', T0),
            play('1', 'b', T0 + 1),
            play('1', 'a', T0 + 2),
            play('1', 'c', T0 + 3),
            play('1', 'b', T0 + 4),
            play('1', 'c', T0 + 5),
            play('1', 'c', T0 + 6),
            play('1', 'once', T0 + 7),
            play('1', null, T0 + 8),
            play('1', null, T0 + 9),
          ],
          LIMITS,
        );
        const top = await store.history.topTracks('1', 2, 10);
        expect(top.map((t) => [t.track_id, t.play_count, t.last_played])).toEqual([
          ['c', 3, T0 + 6],
          ['b', 2, T0 + 4],
          ['a', 2, T0 + 2],
        ]);
        expect(top[0]).not.toHaveProperty('ts');
        expect(await store.history.topTracks('1', 2, 1)).toHaveLength(1);

        const renamed = play('1', 'a', T0 + 20);
        (renamed.track as TrackEntry).song = 'Song a (Remastered)';
        await store.history.appendHistory([renamed], LIMITS);
        expect(await store.history.topTracks('1', 2, 1)).toMatchObject([
          { track_id: 'a', song: 'Song a (Remastered)', last_played: T0 + 20, play_count: 3 },
        ]);
      });

      it('keeps a track entry as given and its top-tracks metadata without ts, whatever the key order', async () => {
        const store = await open();
        const { ts, ...nowPlaying } = entry('a', T0);
        const tsFirst = { ts, ...nowPlaying };
        const write = (track: TrackEntry): HistoryWrite => ({ ...play('1', 'a', ts), track });
        await store.history.appendHistory([write({ ...nowPlaying, ts }), write(tsFirst)], LIMITS);
        const { tracks } = await store.history.history('1', 100);
        expect(tracks.map((track) => Object.keys(track)[0])).toEqual(['ts', 'source']);
        const [top] = await store.history.topTracks('1', 1, 10);
        expect(top).toEqual({ ...nowPlaying, last_played: T0, play_count: 2 });
      });

      it('counts every play of concurrent batches', async () => {
        const store = await open();
        await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.history.appendHistory([play('1', 'a', T0 + i)], LIMITS)),
        );
        const [top] = await store.history.topTracks('1', 1, 10);
        expect(top?.play_count).toBe(20);
        expect((await store.history.stats('1')).trackHistoryCount).toBe(20);
      });

      it('caps the tracks counted per user, evicting the least played and oldest', async () => {
        const store = await open();
        await store.history.appendHistory(
          [play('1', 'keep', T0), play('1', 'keep', T0 + 1), play('1', 'old', T0 + 2)],
          {
            history: 100,
            trackedTracks: 2,
          },
        );
        await store.history.appendHistory([play('1', 'new', T0 + 3)], { history: 100, trackedTracks: 2 });
        const counted = await store.history.topTracks('1', 1, 10);
        expect(counted.map((t) => [t.track_id, t.play_count])).toEqual([
          ['keep', 2],
          ['new', 1],
        ]);
        // Evicted means forgotten: played again, it counts from one, and the older 'new' goes instead.
        await store.history.appendHistory([play('1', 'old', T0 + 4)], { history: 100, trackedTracks: 2 });
        const again = await store.history.topTracks('1', 1, 10);
        expect(again.map((t) => [t.track_id, t.play_count])).toEqual([
          ['keep', 2],
          ['old', 1],
        ]);
      });

      describe('top tracks of a period', () => {
        const DAY = 86_400_000;
        /** Plays each in a batch of its own, in time order, as the recorder writes them. */
        const playAll = async (store: Store, plays: [string, number][], limits = LIMITS) => {
          for (const [id, ts] of plays) await store.history.appendHistory([play('1', id, ts)], limits);
        };
        const ranked = async (store: Store, since?: string, minPlays = 2, limit = 10) =>
          (await store.history.topTracks('1', minPlays, limit, since)).map((t) => [
            t.track_id,
            t.play_count,
            t.last_played,
          ]);

        it('counts only the plays of the UTC days from `since` on, ranked as all-time top tracks are', async () => {
          const store = await open();
          await playAll(store, [
            ['a', T0 - 40 * DAY],
            ['a', T0 - 40 * DAY + 1],
            ['a', T0 - 40 * DAY + 2],
            ['c', T0 - 20 * DAY],
            ['c', T0 - 20 * DAY + 1],
            ['a', T0 - 10 * DAY],
            ['b', T0 - 3 * DAY],
            ['b', T0 - 3 * DAY + 1],
            ['c', T0 - 1],
            ['c', T0],
            ['a', T0 + 1],
          ]);
          expect(await ranked(store)).toEqual([
            ['a', 5, T0 + 1],
            ['c', 4, T0],
            ['b', 2, T0 - 3 * DAY + 1],
          ]);
          // 30 days: today and the 29 before it.
          expect(await ranked(store, '2026-10-24')).toEqual([
            ['c', 4, T0],
            ['a', 2, T0 + 1],
            ['b', 2, T0 - 3 * DAY + 1],
          ]);
          // 7 days: a played once in them, under the minimum.
          expect(await ranked(store, '2026-11-16')).toEqual([
            ['c', 2, T0],
            ['b', 2, T0 - 3 * DAY + 1],
          ]);
          expect(await ranked(store, '2026-11-16', 1)).toEqual([
            ['c', 2, T0],
            ['b', 2, T0 - 3 * DAY + 1],
            ['a', 1, T0 + 1],
          ]);
          expect(await ranked(store, '2026-11-16', 1, 1)).toEqual([['c', 2, T0]]);
          // A day is whole: from its 00:00 UTC.
          expect(await ranked(store, '2026-11-22', 1)).toEqual([
            ['c', 2, T0],
            ['a', 1, T0 + 1],
          ]);
          expect(await ranked(store, '2026-11-23', 1)).toEqual([]);
          expect(await store.history.topTracks('2', 1, 10, '2026-11-16')).toEqual([]);
        });

        it('keeps the latest metadata, without ts, as all-time top tracks do', async () => {
          const store = await open();
          const { ts, ...nowPlaying } = { ...entry('a', T0 + 1), song: 'Song a (Remastered)' };
          await store.history.appendHistory(
            [play('1', 'a', T0), { ...play('1', 'a', ts), track: { ...nowPlaying, ts } }],
            LIMITS,
          );
          expect(await store.history.topTracks('1', 1, 10, '2026-11-22')).toEqual([
            { ...nowPlaying, last_played: T0 + 1, play_count: 2 },
          ]);
        });

        it('counts every play of concurrent batches, on its day', async () => {
          const store = await open();
          await Promise.all(
            Array.from({ length: 20 }, (_, i) =>
              store.history.appendHistory([play('1', 'a', T0 - (i % 2) * DAY)], LIMITS),
            ),
          );
          expect((await store.history.topTracks('1', 1, 10, '2026-11-22'))[0]?.play_count).toBe(10);
          expect((await store.history.topTracks('1', 1, 10, '2026-11-21'))[0]?.play_count).toBe(20);
        });

        it('gives each track its plays of each recent day, by play key, older days dropped as it is played', async () => {
          const store = await open();
          await playAll(store, [
            ['b', T0 - 40 * DAY],
            ['a', T0 - DAY],
            ['a', T0],
            ['b', T0 + 1],
            ['a', T0 + 2],
            ['once', T0 + 3],
          ]);
          await store.history.appendHistory([play('2', 'a', T0)], LIMITS);
          expect(await store.history.playDays('1')).toEqual(
            new Map([
              ['spotify:a', { '2026-11-21': 1, '2026-11-22': 2 }],
              ['spotify:b', { '2026-11-22': 1 }],
              ['spotify:once', { '2026-11-22': 1 }],
            ]),
          );
          expect(await store.history.playDays('3')).toEqual(new Map());
        });

        it('forgets the days of a track evicted past the cap, and of an erased history', async () => {
          const store = await open();
          const two = { history: 100, trackedTracks: 2 };
          await playAll(
            store,
            [
              ['keep', T0],
              ['keep', T0 + 1],
              ['gone', T0 + 2],
              ['new', T0 + 3],
              ['gone', T0 + 4],
            ],
            two,
          );
          expect(await ranked(store, '2026-11-22', 1)).toEqual([
            ['keep', 2, T0 + 1],
            ['gone', 1, T0 + 4],
          ]);
          expect([...(await store.history.playDays('1')).keys()].sort()).toEqual([
            'spotify:gone',
            'spotify:keep',
          ]);
          await store.history.forget('1', T0 + 5);
          expect(await store.history.playDays('1')).toEqual(new Map());
          await playAll(store, [['keep', T0 + 6]]);
          expect(await ranked(store, '2026-11-22', 1)).toEqual([['keep', 1, T0 + 6]]);
        });
      });

      it('counts plays per UTC day and keeps the latest last_seen', async () => {
        const store = await open();
        const late = Date.UTC(2026, 10, 21, 23, 59);
        await store.history.appendHistory([play('1', 'a', late), play('1', 'b', late + 1)], LIMITS);
        expect(await store.history.stats('1')).toMatchObject({ playsDay: '2026-11-21', plays: 2 });
        await store.history.appendHistory([play('1', 'c', Date.UTC(2026, 10, 22, 0, 1))], LIMITS);
        expect(await store.history.stats('1')).toMatchObject({ playsDay: '2026-11-22', plays: 1 });
        const seen = (ts: number): HistoryWrite => ({
          userId: '1',
          status: null,
          track: null,
          countsPlay: false,
          lastSeen: ts,
        });
        await store.history.appendHistory([seen(T0 + 10), seen(T0)], LIMITS);
        expect((await store.history.stats('1')).lastSeen).toBe(T0 + 10);
      });

      it('forgets one user entirely, and only that user', async () => {
        const store = await open();
        await store.kv.writeKv('1', { set: new Map([['k', 'v']]), delete: [] }, KV_LIMITS);
        await store.history.appendHistory(
          [
            {
              userId: '1',
              status: { status: 'online', ts: T0 },
              track: null,
              countsPlay: false,
              lastSeen: T0,
            },
            play('1', 'a', T0),
            play('1', 'a', T0 + 1),
            play('2', 'a', T0),
          ],
          LIMITS,
        );
        expect(await store.history.forget('1', T0 + 2)).toEqual({
          statusEntries: 1,
          trackEntries: 2,
          playCounts: 1,
        });
        expect(await store.history.history('1', 100)).toEqual({ status: [], tracks: [] });
        expect(await store.history.stats('1')).toEqual({
          lastStatus: null,
          lastSeen: null,
          trackHistoryCount: 0,
          playsDay: null,
          plays: 0,
        });
        expect(await store.history.topTracks('1', 1, 10)).toEqual([]);
        expect((await store.history.history('2', 100)).tracks).toHaveLength(1);
        expect((await store.kv.getKv('1')).kv).toEqual({ k: 'v' });
      });

      it("after forget, drops a later batch's entries of that user stamped at or before the erasure", async () => {
        const store = await open();
        const FORGOTTEN = T0 + 100;
        const observed = (ts: number): HistoryWrite => ({
          userId: '1',
          status: { status: ts % 2 === 0 ? 'online' : 'idle', ts },
          track: entry(`t${ts}`, ts),
          countsPlay: true,
          lastSeen: ts,
        });
        await store.history.appendHistory([observed(T0)], LIMITS);
        await store.history.forget('1', FORGOTTEN);
        // A batch another node held while the history was erased: its older entries must not come back.
        await store.history.appendHistory(
          [observed(T0 + 50), observed(FORGOTTEN), play('2', 'other', T0 + 50), observed(FORGOTTEN + 1)],
          LIMITS,
        );
        expect(await store.history.history('1', 100)).toEqual({
          status: [{ status: 'idle', ts: FORGOTTEN + 1 }],
          tracks: [entry(`t${FORGOTTEN + 1}`, FORGOTTEN + 1)],
        });
        expect(await store.history.topTracks('1', 1, 10)).toEqual([
          expect.objectContaining({ track_id: `t${FORGOTTEN + 1}`, play_count: 1 }),
        ]);
        expect(await store.history.stats('1')).toMatchObject({ lastSeen: FORGOTTEN + 1, plays: 1 });
        // Other users are not concerned.
        expect((await store.history.history('2', 100)).tracks).toHaveLength(1);

        // Each part of a write by its own stamp: a last_seen after the erasure counts without its track.
        await store.history.forget('1', FORGOTTEN + 10);
        await store.history.appendHistory(
          [{ ...play('1', 'late', FORGOTTEN + 5), lastSeen: FORGOTTEN + 20 }],
          LIMITS,
        );
        expect(await store.history.history('1', 100)).toEqual({ status: [], tracks: [] });
        expect(await store.history.stats('1')).toMatchObject({ lastSeen: FORGOTTEN + 20, plays: 0 });
        expect(await store.history.topTracks('1', 1, 10)).toEqual([]);

        // An older erasure announced late does not move the moment back.
        await store.history.forget('1', T0);
        await store.history.appendHistory([observed(FORGOTTEN + 9)], LIMITS);
        expect((await store.history.history('1', 100)).status).toEqual([]);
      });
    });

    describe('erasing everything about a user', () => {
      const LIVE = Buffer.alloc(32, 1);
      const PENDING = Buffer.alloc(32, 2);
      const THEIRS = Buffer.alloc(32, 7);
      const TOKEN_HASH = (userId: string, n: number) => Buffer.alloc(32, 10 * Number(userId) + n);
      const webhook = (id: string, userId: string, createdAt: number): StoredWebhook => ({
        id,
        userId,
        url: `https://example.com/${id}`,
        events: ['presence', 'kv'],
        secret: `secret-of-${id}`,
        createdAt,
        disabledAt: null,
        disabledReason: null,
      });
      const delivery = (id: string): DeliveryRecord => ({
        id,
        type: 'presence',
        status: 'delivered',
        attempts: 1,
        at: T0,
        response_code: 200,
        error: null,
        next_attempt_at: null,
      });
      const observed = (userId: string, ts: number): HistoryWrite => ({
        userId,
        status: { status: 'online', ts },
        track: entry(`t${ts}`, ts),
        countsPlay: true,
        lastSeen: ts,
      });

      /** Users 1 and 2 with one of everything a store keeps; 1 with a key handed over too. */
      async function everything(store: Store): Promise<void> {
        for (const userId of ['1', '2']) {
          await store.kv.writeKv(userId, write({ a: '1', b: '2' }), KV_LIMITS);
          await store.kv.writeKv(userId, write({ c: '3' }, ['a']), KV_LIMITS);
          await store.privacy.patchPrivacy(userId, { hide_kv: true, visibility: 'private' });
          await store.webhooks.addWebhook(webhook(`wh_${userId}a`, userId, T0), 5);
          await store.webhooks.addWebhook(webhook(`wh_${userId}b`, userId, T0 + 1), 5);
          await store.webhooks.recordDelivery(`wh_${userId}a`, delivery(`d${userId}`), 20);
          for (const n of [1, 2]) {
            const id = `rt_${userId}${n}`.padEnd(19, '0');
            await store.readTokens.addReadToken(
              { id, userId, hash: TOKEN_HASH(userId, n), label: `token ${n}`, createdAt: T0 + n },
              10,
            );
          }
        }
        await store.apiKeys.replaceKey('1', LIVE, T0);
        await store.apiKeys.addPendingKey('1', PENDING, Date.now(), Date.now() + 60_000);
        await store.apiKeys.replaceKey('2', THEIRS, T0);
        await store.profiles.putProfiles(
          new Map([
            ['1', { profile: { banner: 'a_1', accent_color: 1 }, fetchedAt: T0 }],
            ['2', { profile: { banner: 'a_2', accent_color: 2 }, fetchedAt: T0 }],
          ]),
        );
        await store.history.appendHistory(
          [observed('1', T0), observed('1', T0 + 1), observed('2', T0), observed('2', T0 + 1)],
          LIMITS,
        );
      }

      /** What the store holds of a user, read through every port. */
      async function heldOf(store: Store, userId: string) {
        const webhooks = await store.webhooks.webhooksOf(userId);
        return {
          kv: await store.kv.getKv(userId),
          profile: await profileOf(store, userId),
          privacy: await store.privacy.getPrivacy(userId),
          readTokens: await store.readTokens.readTokensOf(userId),
          webhooks: await Promise.all(
            webhooks.map(async (found) => ({
              id: found.id,
              deliveries: (await store.webhooks.deliveries(found.id, 20)).map((record) => record.id),
            })),
          ),
          history: await store.history.history(userId, 100),
          stats: await store.history.stats(userId),
          plays: await store.history.topTracks(userId, 1, 1000),
        };
      }

      it('erases every part of one user, and only theirs, counting what went', async () => {
        const store = await open();
        await everything(store);
        const theirs = await heldOf(store, '2');
        const revision = (await store.kv.getKv('1')).revision;
        expect(await store.accounts.erase('1', T0 + 10)).toEqual({
          statusEntries: 2,
          trackEntries: 2,
          playCounts: 2,
          kvKeys: ['b', 'c'],
          kvRevision: revision + 1,
          apiKeys: 2,
          readTokens: 2,
          webhookIds: ['wh_1a', 'wh_1b'],
          privacySettings: true,
          profile: true,
        });
        expect(await heldOf(store, '1')).toEqual({
          kv: { kv: {}, revision: revision + 1 },
          profile: undefined,
          privacy: undefined,
          readTokens: [],
          webhooks: [],
          history: { status: [], tracks: [] },
          stats: { lastStatus: null, lastSeen: null, trackHistoryCount: 0, playsDay: null, plays: 0 },
          plays: [],
        });
        expect(await store.apiKeys.findKey(LIVE)).toBeUndefined();
        expect(await store.apiKeys.findKey(PENDING)).toBeUndefined();
        expect(await store.apiKeys.activateKey('1', PENDING, Date.now())).toBe(false);
        expect(await store.readTokens.findReadToken(TOKEN_HASH('1', 1))).toBeUndefined();
        expect(await store.readTokens.findReadToken(TOKEN_HASH('1', 2))).toBeUndefined();
        expect(await store.webhooks.webhook('wh_1a')).toBeUndefined();
        expect(await store.webhooks.deliveries('wh_1a', 20)).toEqual([]);
        expect((await store.webhooks.activeWebhooks()).map((found) => found.id).sort()).toEqual([
          'wh_2a',
          'wh_2b',
        ]);
        expect([...(await store.privacy.allPrivacy()).keys()]).toEqual(['2']);
        expect(await store.accounts.details('1')).toEqual({ key: null, historyErasedAt: T0 + 10 });

        // The other user keeps everything.
        expect(await heldOf(store, '2')).toEqual(theirs);
        expect(await store.apiKeys.findKey(THEIRS)).toEqual({ userId: '2', hash: THEIRS });
        expect(await store.readTokens.findReadToken(TOKEN_HASH('2', 1))).toMatchObject({ userId: '2' });
        expect((await store.accounts.details('2')).key).not.toBeNull();
        expect((await store.accounts.details('2')).historyErasedAt).toBeNull();

        // Nothing comes back with a restart.
        const restarted = await reopen(store);
        expect(await heldOf(restarted, '1')).toMatchObject({ kv: { kv: {} }, webhooks: [], plays: [] });
        expect(await restarted.apiKeys.findKey(LIVE)).toBeUndefined();
        expect(await restarted.readTokens.findReadToken(TOKEN_HASH('1', 1))).toBeUndefined();
        expect(await restarted.readTokens.readTokensOf('1')).toEqual([]);
      });

      it('tells when the live key was made, where the store keeps it', async () => {
        const store = await open();
        expect(await store.accounts.details('1')).toEqual({ key: null, historyErasedAt: null });
        await store.apiKeys.replaceKey('1', LIVE, T0);
        const { key } = await store.accounts.details('1');
        // Redis keeps no creation time.
        expect([T0, null]).toContain(key?.createdAt);
      });

      it('keeps the KV revision moving on: a write after the erasure is ordered after it', async () => {
        const store = await open();
        await store.kv.writeKv('1', write({ a: '1' }), KV_LIMITS);
        const erased = await store.accounts.erase('1', T0);
        expect(erased.kvRevision).toBe(2);
        expect(await store.kv.getKvs(['1'])).toEqual(new Map([['1', { kv: {}, revision: 2 }]]));
        expect(await store.kv.writeKv('1', write({ b: '2' }), KV_LIMITS)).toEqual({
          revision: 3,
          changed: true,
        });
        expect(await store.kv.getKv('1')).toEqual({ kv: { b: '2' }, revision: 3 });
        // The byte total starts over from nothing: a cap fits what is written after.
        expect(await store.kv.writeKv('1', write({ c: 'xyz' }), byteCap(6))).toMatchObject({ changed: true });

        // A user who never wrote KV gets no revision of it.
        const untouched = await store.accounts.erase('3', T0);
        expect(untouched).toMatchObject({ kvKeys: [], kvRevision: 0 });
        expect(await store.kv.getKvs(['3'])).toEqual(new Map());
      });

      it('erases nothing more the second time, the revision staying', async () => {
        const store = await open();
        await everything(store);
        const first = await store.accounts.erase('1', T0 + 10);
        expect(await store.accounts.erase('1', T0 + 20)).toEqual({
          statusEntries: 0,
          trackEntries: 0,
          playCounts: 0,
          kvKeys: [],
          kvRevision: first.kvRevision,
          apiKeys: 0,
          readTokens: 0,
          webhookIds: [],
          privacySettings: false,
          profile: false,
        });
        expect((await store.accounts.details('1')).historyErasedAt).toBe(T0 + 20);
      });

      it("drops a later batch's entries stamped at or before the erasure, as forget does", async () => {
        const store = await open();
        await everything(store);
        await store.accounts.erase('1', T0 + 10);
        // A batch another node held while everything was erased.
        await store.history.appendHistory([observed('1', T0 + 5), observed('1', T0 + 11)], LIMITS);
        expect(await store.history.history('1', 100)).toEqual({
          status: [{ status: 'online', ts: T0 + 11 }],
          tracks: [entry(`t${T0 + 11}`, T0 + 11)],
        });
        expect(await store.history.topTracks('1', 1, 10)).toEqual([
          expect.objectContaining({ track_id: `t${T0 + 11}`, play_count: 1 }),
        ]);
      });
    });

    describe('retention', () => {
      /** Every user due by `before`, as the store orders them. */
      const dueBy = (store: Store, before: number) => store.retention.due(before, 100_000);

      it("keeps each user's latest moment, and answers those due the longest gone first, bounded", async () => {
        const store = await open();
        expect(await dueBy(store, T0 + 1_000)).toEqual([]);
        await store.retention.seen(new Map());
        await store.retention.seen(
          new Map([
            ['1', T0 + 10],
            ['2', T0],
            ['3', T0 + 5],
            ['5', T0 + 7],
            ['4', T0 + 7],
          ]),
        );
        // An earlier moment, reported late by another node, does not move one back.
        await store.retention.seen(new Map([['1', T0]]));
        await store.retention.seen(new Map([['2', T0 + 1]]));
        expect(await dueBy(store, T0 + 1)).toEqual([]);
        expect(await dueBy(store, T0 + 2)).toEqual(['2']);
        expect(await dueBy(store, T0 + 7)).toEqual(['2', '3']);
        expect(await store.retention.due(T0 + 100, 3)).toEqual(['2', '3', '4']);
        const restarted = await reopen(store);
        expect(await dueBy(restarted, T0 + 100)).toEqual(['2', '3', '4', '5', '1']);
      });

      it('forgets only the moments still before the one given: a user seen since keeps theirs', async () => {
        const store = await open();
        await store.retention.seen(
          new Map([
            ['1', T0],
            ['2', T0],
            ['3', T0],
          ]),
        );
        // User 2 came back after the sweep read them as due.
        await store.retention.seen(new Map([['2', T0 + 50]]));
        await store.retention.forgetSeen(['1', '2', '9'], T0 + 10);
        await store.retention.forgetSeen([], T0 + 10);
        expect(await dueBy(store, T0 + 100)).toEqual(['3', '2']);
        // Forgotten for good: a restart brings nothing back, and a new moment starts over.
        const restarted = await reopen(store);
        expect(await dueBy(restarted, T0 + 100)).toEqual(['3', '2']);
        await restarted.retention.seen(new Map([['1', T0 + 60]]));
        expect(await dueBy(restarted, T0 + 100)).toEqual(['3', '2', '1']);
      });

      it('writes the moments of many users in one call', async () => {
        const store = await open();
        const users = Array.from({ length: 2_500 }, (_, i) => String(80_000_000_000_000_000n + BigInt(i)));
        await store.retention.seen(new Map(users.map((userId, i) => [userId, T0 + (i % 10)])));
        const due = await dueBy(store, T0 + 10);
        expect(due).toHaveLength(2_500);
        expect(new Set(due)).toEqual(new Set(users));
        await store.retention.forgetSeen(users.slice(0, 1_500), T0 + 10);
        expect(await dueBy(store, T0 + 10)).toHaveLength(1_000);
      });

      it('adopts the users with data and no moment, in bounded steps, once', async () => {
        const store = await open();
        const observed: HistoryWrite = {
          userId: '17',
          status: { status: 'online', ts: T0 },
          track: entry('t', T0),
          countsPlay: true,
          lastSeen: T0,
        };
        // One user for each kind of data.
        await store.kv.writeKv('11', write({ a: '1' }), KV_LIMITS);
        await store.apiKeys.replaceKey('12', Buffer.alloc(32, 12), T0);
        await store.apiKeys.addPendingKey('13', Buffer.alloc(32, 13), T0, Date.now() + 60_000);
        await store.webhooks.addWebhook(
          {
            id: 'wh_14',
            userId: '14',
            url: 'https://example.com/14',
            events: ['presence'],
            secret: 'secret',
            createdAt: T0,
            disabledAt: null,
            disabledReason: null,
          },
          5,
        );
        await store.privacy.patchPrivacy('15', { hide_kv: true });
        await store.profiles.putProfiles(
          new Map([['16', { profile: { banner: null, accent_color: 1 }, fetchedAt: T0 }]]),
        );
        await store.history.appendHistory([observed], LIMITS);
        // Data and a moment already: kept as it is.
        await store.kv.writeKv('18', write({ a: '1' }), KV_LIMITS);
        await store.retention.seen(new Map([['18', T0]]));
        // Erased: what stays (the KV's revision, the moment of the erasure) is no data.
        await store.kv.writeKv('19', write({ a: '1' }), KV_LIMITS);
        await store.history.appendHistory([{ ...observed, userId: '19' }], LIMITS);
        await store.accounts.erase('19', T0 + 1);

        const pass = async (at: number): Promise<number> => {
          let adopted = 0;
          for (let calls = 0; calls < 100_000; calls++) {
            const step = await store.retention.adoptUnseen(at, 2);
            adopted += step.adopted;
            if (step.passEnded) return adopted;
          }
          throw new Error('the pass never ended');
        };
        expect(await pass(T0 + 50)).toBe(7);
        expect(await dueBy(store, T0 + 50)).toEqual(['18']);
        expect(await dueBy(store, T0 + 51)).toEqual(['18', '11', '12', '13', '14', '15', '16', '17']);
        // Nobody twice; the next pass starts over and finds everyone has a moment.
        expect(await pass(T0 + 60)).toBe(0);
        await store.retention.forgetSeen(['11'], T0 + 51);
        expect(await pass(T0 + 70)).toBe(1);
        expect(await dueBy(store, T0 + 70)).not.toContain('11');
        expect(await dueBy(store, T0 + 71)).toContain('11');
      });
    });

    describe('privacy', () => {
      /** One value of every kind a setting takes, the edges among them. */
      const EVERY_KIND: PrivacyPatch = {
        hide_activity_types: [],
        hide_application_ids: ['1234567890123456789'],
        hide_music_sources: ['spotify', 'youtube_music'],
        hide_custom_status: false,
        hide_kv: true,
        visibility: 'private',
        paused_until: PAUSED_UNTIL_UNDONE,
      };

      it('has nothing for a user who never set anything', async () => {
        const store = await open();
        expect(await store.privacy.getPrivacy('1')).toBeUndefined();
        expect(await store.privacy.allPrivacy()).toEqual(new Map());
        await store.privacy.deletePrivacy('1');
        expect(await store.privacy.getPrivacy('1')).toBeUndefined();
      });

      it('merges a patch over what is kept, answering all that is kept, and keeps it across a restart', async () => {
        const store = await open();
        const first: PrivacyPatch = { hide_kv: true, visibility: 'private' };
        expect(await store.privacy.patchPrivacy('1', first)).toStrictEqual(first);
        const second: PrivacyPatch = { visibility: 'public', hide_activity_types: ['playing', 'custom'] };
        const merged = { hide_kv: true, visibility: 'public', hide_activity_types: ['playing', 'custom'] };
        expect(await store.privacy.patchPrivacy('1', second)).toStrictEqual(merged);
        expect(await store.privacy.getPrivacy('1')).toStrictEqual(merged);
        expect(await store.privacy.getPrivacy('2')).toBeUndefined();
        const restarted = await reopen(store);
        expect(await restarted.privacy.getPrivacy('1')).toStrictEqual(merged);
      });

      it('keeps every value as it was given: empty lists, null, the pause until undone, false', async () => {
        const store = await open();
        expect(await store.privacy.patchPrivacy('1', EVERY_KIND)).toStrictEqual(EVERY_KIND);
        // null is a value: it replaces the pause, it does not remove the field.
        const resumed = { ...EVERY_KIND, paused_until: null, hide_application_ids: [] };
        expect(
          await store.privacy.patchPrivacy('1', { paused_until: null, hide_application_ids: [] }),
        ).toStrictEqual(resumed);
        const restarted = await reopen(store);
        expect(await restarted.privacy.getPrivacy('1')).toStrictEqual(resumed);
        expect(await restarted.privacy.allPrivacy()).toStrictEqual(new Map([['1', resumed]]));
        expect(
          await restarted.privacy.patchPrivacy('1', { paused_until: PAUSED_UNTIL_UNDONE }),
        ).toStrictEqual({
          ...resumed,
          paused_until: 8_640_000_000_000_000,
        });
      });

      it('writes nothing for a patch that names nothing', async () => {
        const store = await open();
        expect(await store.privacy.patchPrivacy('1', {})).toStrictEqual({});
        expect(await store.privacy.getPrivacy('1')).toBeUndefined();
        expect(await store.privacy.allPrivacy()).toEqual(new Map());
        await store.privacy.patchPrivacy('2', { hide_profile: true });
        expect(await store.privacy.patchPrivacy('2', {})).toStrictEqual({ hide_profile: true });
        // A field given as undefined is not named: it neither replaces nor removes what is kept.
        expect(await store.privacy.patchPrivacy('2', { hide_profile: undefined })).toStrictEqual({
          hide_profile: true,
        });
        expect(
          await store.privacy.patchPrivacy('2', { hide_profile: undefined, hide_kv: true }),
        ).toStrictEqual({
          hide_profile: true,
          hide_kv: true,
        });
      });

      it('loses no field when two nodes patch the same users at once', async () => {
        const first = await open();
        const second = await open(first);
        // Every setting its own patch, each sent at once by one node or the other, for several users.
        const patches: PrivacyPatch[] = [
          { hide_activity_types: ['watching'] },
          { hide_application_ids: ['111111111111111111'] },
          { hide_music_sources: ['spotify'] },
          { hide_custom_status: true },
          { hide_platforms: true },
          { hide_profile: true },
          { hide_kv: true },
          { record_history: false },
          { show_last_seen: false },
          { visibility: 'private' },
          { allow_agents: true },
          { paused_until: T0 },
        ];
        const users = ['1', '2', '3', '4', '5'];
        const answers = await Promise.all(
          users.flatMap((userId) =>
            patches.map((patch, i) =>
              (i % 2 === 0 ? first : second).privacy
                .patchPrivacy(userId, patch)
                .then((kept) => ({ patch, kept })),
            ),
          ),
        );
        // Each answer holds its own patch, whatever else had been merged by then.
        for (const { patch, kept } of answers) expect(kept).toMatchObject(patch);
        const all = Object.assign({}, ...patches);
        for (const userId of users) {
          expect(await first.privacy.getPrivacy(userId)).toStrictEqual(all);
          expect(await second.privacy.getPrivacy(userId)).toStrictEqual(all);
        }
      });

      it('reads every user who set any in one call', async () => {
        const store = await open();
        const users = Array.from({ length: 1_200 }, (_, i) => String(80_000_000_000_000_000n + BigInt(i)));
        const settingsOf = (i: number): PrivacyPatch =>
          i % 3 === 0
            ? { hide_kv: i % 2 === 0 }
            : { paused_until: i % 2 === 0 ? null : T0 + i, hide_platforms: true };
        for (let start = 0; start < users.length; start += 100) {
          await Promise.all(
            users
              .slice(start, start + 100)
              .map((userId, j) => store.privacy.patchPrivacy(userId, settingsOf(start + j))),
          );
        }
        const gone = users.filter((_, i) => i % 7 === 0);
        for (const userId of gone) await store.privacy.deletePrivacy(userId);
        const expected = new Map(
          users.flatMap((userId, i) => (i % 7 === 0 ? [] : [[userId, settingsOf(i)] as const])),
        );
        expect(await store.privacy.allPrivacy()).toStrictEqual(expected);
      });

      it('deletes every setting of one user and only theirs; a later patch starts from nothing', async () => {
        const store = await open();
        await store.privacy.patchPrivacy('1', EVERY_KIND);
        await store.privacy.patchPrivacy('2', { hide_kv: true });
        await store.privacy.deletePrivacy('1');
        expect(await store.privacy.getPrivacy('1')).toBeUndefined();
        expect(await store.privacy.allPrivacy()).toStrictEqual(new Map([['2', { hide_kv: true }]]));
        expect(await store.privacy.patchPrivacy('1', { show_last_seen: false })).toStrictEqual({
          show_last_seen: false,
        });
        const restarted = await reopen(store);
        expect(await restarted.privacy.allPrivacy()).toStrictEqual(
          new Map<string, PrivacyPatch>([
            ['1', { show_last_seen: false }],
            ['2', { hide_kv: true }],
          ]),
        );
      });
    });

    describe('read tokens', () => {
      const hashOf = (n: number) => Buffer.alloc(32, n);
      const token = (userId: string, n: number, label: string | null = null): StoredReadToken => ({
        id: `rt_${String(n).padStart(16, '0')}`,
        userId,
        hash: hashOf(n),
        label,
        createdAt: T0 + n,
      });
      const listed = ({ id, label, createdAt }: StoredReadToken) => ({ id, label, createdAt });

      it("keeps each user's tokens, oldest first, listed without their hashes, and finds one by its hash", async () => {
        const store = await open();
        const labelled = token('1', 3, 'README card ✓ 🎧');
        // Added out of order: a list is by creation time.
        expect(await store.readTokens.addReadToken(labelled, 10)).toBe(true);
        expect(await store.readTokens.addReadToken(token('1', 1), 10)).toBe(true);
        expect(await store.readTokens.addReadToken(token('2', 2, 'theirs'), 10)).toBe(true);
        expect(await store.readTokens.readTokensOf('1')).toStrictEqual([
          listed(token('1', 1)),
          listed(labelled),
        ]);
        expect(await store.readTokens.readTokensOf('3')).toEqual([]);
        expect(await store.readTokens.findReadToken(hashOf(3))).toEqual({
          userId: '1',
          id: labelled.id,
          hash: hashOf(3),
        });
        expect(await store.readTokens.findReadToken(hashOf(2))).toMatchObject({ userId: '2' });
        expect(await store.readTokens.findReadToken(hashOf(9))).toBeUndefined();

        const restarted = await reopen(store);
        expect(await restarted.readTokens.readTokensOf('1')).toStrictEqual([
          listed(token('1', 1)),
          listed(labelled),
        ]);
        expect(await restarted.readTokens.findReadToken(hashOf(1))).toMatchObject({ userId: '1' });
      });

      it('refuses a token past the limit, writing nothing, even when nodes add at once', async () => {
        const store = await open();
        const beside = await open(store);
        const added = await Promise.all(
          Array.from({ length: 8 }, (_, n) =>
            (n % 2 === 0 ? store : beside).readTokens.addReadToken(token('1', n + 1), 3),
          ),
        );
        expect(added.filter(Boolean)).toHaveLength(3);
        const kept = await store.readTokens.readTokensOf('1');
        expect(kept).toHaveLength(3);
        for (const [n, wasAdded] of added.entries()) {
          expect(Boolean(await store.readTokens.findReadToken(hashOf(n + 1)))).toBe(wasAdded);
        }
        // Another user's limit is their own.
        expect(await store.readTokens.addReadToken(token('2', 20), 3)).toBe(true);
      });

      it("removes one of the user's tokens by its id: it is found no more, at once, on every node", async () => {
        const store = await open();
        const beside = await open(store);
        for (const n of [1, 2]) await store.readTokens.addReadToken(token('1', n), 2);
        await store.readTokens.addReadToken(token('2', 3), 2);
        // Another user's id, or one that never was: nothing goes.
        expect(await store.readTokens.removeReadToken('2', token('1', 1).id)).toBe(false);
        expect(await store.readTokens.removeReadToken('1', 'rt_nothing0000000')).toBe(false);
        expect(await beside.readTokens.findReadToken(hashOf(1))).toMatchObject({ userId: '1' });

        expect(await store.readTokens.removeReadToken('1', token('1', 1).id)).toBe(true);
        expect(await beside.readTokens.findReadToken(hashOf(1))).toBeUndefined();
        expect(await beside.readTokens.readTokensOf('1')).toStrictEqual([listed(token('1', 2))]);
        expect(await store.readTokens.removeReadToken('1', token('1', 1).id)).toBe(false);
        // Its place is free again; the other user's token is untouched.
        expect(await beside.readTokens.addReadToken(token('1', 4), 2)).toBe(true);
        expect(await store.readTokens.findReadToken(hashOf(3))).toMatchObject({ userId: '2' });
      });
    });

    describe('gateway state', () => {
      /** Long enough that no state of these tests is dropped for its age. */
      const KEEP = 100 * 365 * 24 * 60 * 60 * 1000;
      const session = (shardId: number, sequence: number): SavedGatewaySession => ({
        shardId,
        shardCount: 4,
        sessionId: `session-${shardId}-${sequence}`,
        resumeUrl: `wss://gateway-us-east1-${shardId}.discord.gg`,
        sequence,
      });
      /** Every byte value, in order and reversed: a store that takes bytes for text mangles some. */
      const EVERY_BYTE = Buffer.from([
        ...Array.from({ length: 256 }, (_, i) => i),
        ...Array.from({ length: 256 }, (_, i) => 255 - i),
      ]);
      /** Bytes with no pattern, as compressed presences are, and as many as a large node holds. */
      const LARGE = randomBytes(12 * 1024 * 1024);
      const state = (savedAt: number, presences: Buffer, sessions = [session(0, 41)]): SavedGatewayState => ({
        savedAt,
        sessions,
        presences,
      });
      /** The state loaded is the one saved: the same sessions and moment, the same bytes. */
      const expectLoaded = (loaded: SavedGatewayState | null, saved: SavedGatewayState): void => {
        expect(loaded).not.toBeNull();
        const { presences, ...rest } = loaded as SavedGatewayState;
        const { presences: bytes, ...expected } = saved;
        expect(rest).toStrictEqual(expected);
        expect(Buffer.isBuffer(presences)).toBe(true);
        // Compared as bytes: a deep equality of megabytes is slow, and its diff unreadable.
        expect(presences.length).toBe(bytes.length);
        expect(presences.equals(bytes)).toBe(true);
      };

      it('has nothing for a node that saved nothing', async () => {
        const store = await open();
        expect(await store.gatewayState.load('0')).toBeNull();
        await store.gatewayState.clear('0');
        expect(await store.gatewayState.load('0')).toBeNull();
      });

      it('gives back the sessions, the moment and every byte of the presences saved', async () => {
        const store = await open();
        const sessions = [session(0, 41), session(1, 0), session(2, 2 ** 31), session(3, 7)];
        const small = state(T0, EVERY_BYTE, sessions);
        await store.gatewayState.save('0', small, KEEP);
        expectLoaded(await store.gatewayState.load('0'), small);
        const large = state(T0 + 1, LARGE, sessions);
        await store.gatewayState.save('1', large, KEEP);
        expectLoaded(await store.gatewayState.load('1'), large);
      });

      it('replaces what a node saved with its next save', async () => {
        const store = await open();
        await store.gatewayState.save('0', state(T0, LARGE, [session(0, 1), session(1, 1)]), KEEP);
        const next = state(T0 + 60_000, EVERY_BYTE, [session(1, 900)]);
        await store.gatewayState.save('0', next, KEEP);
        expectLoaded(await store.gatewayState.load('0'), next);
      });

      it("keeps each node's apart, and clears only the node named", async () => {
        const store = await open();
        const whole = state(T0, EVERY_BYTE, [session(0, 5), session(1, 6), session(2, 7), session(3, 8)]);
        const first = state(T0 + 1, Buffer.from('first'), [session(0, 9)]);
        await store.gatewayState.save('0-3', whole, KEEP);
        await store.gatewayState.save('0', first, KEEP);
        expectLoaded(await store.gatewayState.load('0-3'), whole);
        expectLoaded(await store.gatewayState.load('0'), first);
        await store.gatewayState.clear('0');
        expect(await store.gatewayState.load('0')).toBeNull();
        expectLoaded(await store.gatewayState.load('0-3'), whole);
        // A node that saves again after a clear has what it saved then.
        await store.gatewayState.save('0', first, KEEP);
        expectLoaded(await store.gatewayState.load('0'), first);
      });

      it('keeps no state past the time given with its save', async () => {
        const store = await open();
        const now = Date.now();
        await store.gatewayState.save('0', state(now - 10_000, EVERY_BYTE, [session(0, 1)]), 5_000);
        expect(await store.gatewayState.load('0')).toBeNull();
        const recent = state(now, EVERY_BYTE, [session(0, 2)]);
        await store.gatewayState.save('1', recent, 5_000);
        expectLoaded(await store.gatewayState.load('1'), recent);
      });

      it('keeps what a node saved across a restart of the store', async () => {
        const store = await open();
        const saved = state(T0, LARGE, [session(0, 41), session(1, 42)]);
        await store.gatewayState.save('0-1', saved, KEEP);
        await store.gatewayState.save('2', state(T0, EVERY_BYTE), KEEP);
        await store.gatewayState.clear('2');
        const restarted = await reopen(store);
        expectLoaded(await restarted.gatewayState.load('0-1'), saved);
        expect(await restarted.gatewayState.load('2')).toBeNull();
      });
    });
  });
}
