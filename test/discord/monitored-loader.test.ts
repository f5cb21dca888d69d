import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MONITORED_LOAD_BATCH, MonitoredLoader } from '../../src/discord/monitored-loader.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';
import { KV_LIMITS } from '../support/kv.js';

const GUILD = '300000000000000001';
const userId = (n: number) => String(80_000_000_000_000_000n + BigInt(n));

describe('loading what is stored for users who start being monitored', () => {
  const stores: SqliteStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });

  async function setup() {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    stores.push(store);
    const registry = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    });
    const profileBatches: string[][] = [];
    const logged: string[] = [];
    const kvBatches: number[] = [];
    const getKvs = store.kv.getKvs.bind(store.kv);
    store.kv.getKvs = (userIds) => {
      kvBatches.push(userIds.length);
      return getKvs(userIds);
    };
    const loader = new MonitoredLoader({
      registry,
      profiles: {
        usersMonitored: async (userIds) => {
          profileBatches.push([...userIds]);
        },
      },
      kv: store.kv,
      logger: pino(
        { level: 'warn' },
        {
          write: (line: string) => {
            logged.push((JSON.parse(line) as { msg: string }).msg);
          },
        },
      ),
    });
    registry.onChange(loader.observe);
    registry.onPending(loader.pending);
    return { store, registry, loader, profileBatches, kvBatches, logged };
  }

  it('reads the KV and profiles of a whole member listing in batches, and gives each user theirs back', async () => {
    const { store, registry, profileBatches, kvBatches } = await setup();
    await store.kv.writeKv(userId(7), { set: new Map([['note', 'kept']]), delete: [] }, KV_LIMITS);
    await store.kv.writeKv(
      userId(2_400),
      {
        set: new Map([
          ['a', '1'],
          ['b', '2'],
        ]),
        delete: [],
      },
      KV_LIMITS,
    );
    const users = 2_500;
    for (let n = 0; n < users; n++) registry.memberSeen(GUILD, { id: userId(n), username: `u${n}` });
    await eventually(() => expect(registry.get(userId(2_400))?.presence.kv).toEqual({ a: '1', b: '2' }));
    expect(registry.get(userId(7))?.presence.kv).toEqual({ note: 'kept' });
    expect(registry.get(userId(8))?.presence.kv).toEqual({});
    expect(kvBatches).toEqual([MONITORED_LOAD_BATCH, MONITORED_LOAD_BATCH, users - 2 * MONITORED_LOAD_BATCH]);
    expect(profileBatches.flat()).toEqual(Array.from({ length: users }, (_, n) => userId(n)));
    expect(profileBatches).toHaveLength(3);
  });

  it('reads for pending members as they are listed, not again when they are rendered; the KV renders its owner', async () => {
    const { store, registry, profileBatches, kvBatches } = await setup();
    await store.kv.writeKv(userId(3), { set: new Map([['note', 'kept']]), delete: [] }, KV_LIMITS);
    const announced: string[] = [];
    registry.onChange((change) => {
      if (change.kind === 'monitored') announced.push(change.userId);
    });
    for (let n = 0; n < 5; n++) {
      registry.memberListed(
        GUILD,
        { id: userId(n), username: `u${n}` },
        {
          status: 'offline',
          client_status: {},
          activities: [],
        },
      );
    }
    // Only the member with a stored KV is rendered for it; the others wait, read for all the same.
    await eventually(() => expect(announced).toEqual([userId(3)]));
    expect(registry.get(userId(3))?.presence.kv).toEqual({ note: 'kept' });
    expect(registry.pendingCount).toBe(4);
    expect(kvBatches).toEqual([5]);
    expect(profileBatches).toEqual([Array.from({ length: 5 }, (_, n) => userId(n))]);
    registry.renderPending(10);
    expect(announced).toHaveLength(5);
    // A turn later, the announcements have asked for nothing.
    await new Promise((resolve) => setImmediate(resolve));
    expect(kvBatches).toEqual([5]);
    expect(profileBatches).toHaveLength(1);
  });

  it('logs a store that fails, and loads the users of the next turn as usual', async () => {
    const { store, registry, logged } = await setup();
    await store.kv.writeKv(userId(2), { set: new Map([['note', 'back']]), delete: [] }, KV_LIMITS);
    const getKvs = store.kv.getKvs;
    store.kv.getKvs = async () => {
      throw new Error('store away');
    };
    registry.memberSeen(GUILD, { id: userId(1), username: 'one' });
    await eventually(() => expect(logged).toContain('could not load the stored KV'));
    store.kv.getKvs = getKvs;
    registry.memberSeen(GUILD, { id: userId(2), username: 'two' });
    await eventually(() => expect(registry.get(userId(2))?.presence.kv).toEqual({ note: 'back' }));
  });

  it('reads once for users already monitored: only a user who starts being monitored is loaded', async () => {
    const { registry, profileBatches } = await setup();
    registry.memberSeen(GUILD, { id: userId(1), username: 'one' });
    registry.memberSeen(GUILD, { id: userId(1), username: 'one again' });
    registry.memberSeen('300000000000000002', { id: userId(1), username: 'one again' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(profileBatches).toEqual([[userId(1)]]);
  });

  it('applies an announced KV change that follows the revision held, and reads the KV again after a gap', async () => {
    const { store, registry, loader, kvBatches } = await setup();
    const id = userId(1);
    await store.kv.writeKv(id, { set: new Map([['a', '1']]), delete: [] }, KV_LIMITS);
    registry.memberSeen(GUILD, { id, username: 'u1' });
    await eventually(() => expect(registry.get(id)?.presence.kv).toEqual({ a: '1' }));
    const reads = kvBatches.length;

    // The next revision: applied as it is, nothing read.
    await store.kv.writeKv(id, { set: new Map([['b', '2']]), delete: ['a'] }, KV_LIMITS);
    loader.kvChanged({ userId: id, revision: 2, set: [['b', '2']], delete: ['a'] });
    expect(registry.get(id)?.presence.kv).toEqual({ b: '2' });
    expect(kvBatches.length).toBe(reads);

    // Revision 3 never arrived: 4 cannot be applied to 2, so the KV is read back from the store.
    await store.kv.writeKv(id, { set: new Map([['c', '3']]), delete: [] }, KV_LIMITS);
    await store.kv.writeKv(id, { set: new Map([['d', '4']]), delete: [] }, KV_LIMITS);
    loader.kvChanged({ userId: id, revision: 4, set: [['d', '4']], delete: [] });
    await eventually(() => expect(registry.get(id)?.presence.kv).toEqual({ b: '2', c: '3', d: '4' }));
    expect(kvBatches.length).toBe(reads + 1);
    expect(registry.kvRevisionOf(id)).toBe(4);
    // And a late message is ignored.
    loader.kvChanged({ userId: id, revision: 3, set: [['c', 'late']], delete: [] });
    expect(registry.get(id)?.presence.kv).toEqual({ b: '2', c: '3', d: '4' });
  });

  it('takes an erased KV at once, whatever revision it holds, and the writes after it in order', async () => {
    const { store, registry, loader, kvBatches } = await setup();
    const id = userId(1);
    await store.kv.writeKv(id, { set: new Map([['a', '1']]), delete: [] }, KV_LIMITS);
    registry.memberSeen(GUILD, { id, username: 'u1' });
    await eventually(() => expect(registry.get(id)?.presence.kv).toEqual({ a: '1' }));
    const reads = kvBatches.length;
    // Revision 2 was missed; the erasure leaves revision 3 with no keys, taken whole, nothing read.
    await store.kv.writeKv(id, { set: new Map([['b', '2']]), delete: [] }, KV_LIMITS);
    const erased = await store.accounts.erase(id, Date.now());
    expect(erased.kvRevision).toBe(3);
    loader.kvChanged({ userId: id, revision: 3, whole: true, set: [], delete: erased.kvKeys });
    expect(registry.get(id)?.presence.kv).toEqual({});
    expect(registry.kvRevisionOf(id)).toBe(3);
    expect(kvBatches.length).toBe(reads);
    // The missed write, late, is ignored; the next one applies.
    loader.kvChanged({ userId: id, revision: 2, set: [['b', '2']], delete: [] });
    loader.kvChanged({ userId: id, revision: 4, set: [['c', '3']], delete: [] });
    expect(registry.get(id)?.presence.kv).toEqual({ c: '3' });
  });
});
