import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import { PAUSED_UNTIL_UNDONE } from '../../src/presence/privacy.js';
import type { PresenceChange } from '../../src/presence/registry.js';
import { PresenceRegistry } from '../../src/presence/registry.js';
import { PrivacyDirectory } from '../../src/privacy/directory.js';
import { PublicView } from '../../src/privacy/public-view.js';
import { PrivacyService } from '../../src/privacy/service.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';

const GUILD = '100000000000000001';
const ALICE = '80351110224678912';
const BOB = '80351110224678913';
const T0 = 1_780_000_000_000;

describe('PrivacyDirectory and PublicView', () => {
  let store: SqliteStore;
  let directory: PrivacyDirectory;
  let service: PrivacyService;
  let registry: PresenceRegistry;
  let view: PublicView;
  let told: string[];
  let seen: PresenceChange[];

  beforeEach(async () => {
    vi.useFakeTimers({ now: T0 });
    store = openSqliteStore({ kind: 'sqlite-memory' });
    await store.privacy.patchPrivacy(BOB, { visibility: 'private' });
    directory = new PrivacyDirectory(store.privacy);
    await directory.load();
    service = new PrivacyService(store.privacy, new LocalBus(), directory);
    registry = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: { applicationIds: new Set(), names: new Set() },
      privacy: (userId) => directory.of(userId),
    });
    view = new PublicView(registry, directory);
    view.start([BOB]);
    directory.onChange((userId) => registry.privacyChanged(userId));
    told = [];
    directory.onChange((userId) => told.push(userId));
    for (const id of [ALICE, BOB]) {
      registry.memberSeen(
        GUILD,
        { id, username: id },
        { status: 'online', activities: [], client_status: { desktop: 'online' } },
      );
    }
    seen = [];
    view.onChange((change) => seen.push(change));
  });
  afterEach(async () => {
    view.close();
    directory.close();
    await store.close();
    vi.useRealTimers();
  });

  it('keeps a private user out of everything anyone reads, and shows them to nobody live', () => {
    expect(view.get(BOB)).toBeUndefined();
    expect(view.body(BOB)).toBeUndefined();
    expect([...view.snapshots()].map(([id]) => id)).toEqual([ALICE]);
    expect(registry.get(BOB)).toBeDefined();
    registry.memberSeen(
      GUILD,
      { id: BOB },
      { status: 'idle', activities: [], client_status: { desktop: 'idle' } },
    );
    registry.memberSeen(
      GUILD,
      { id: ALICE },
      { status: 'idle', activities: [], client_status: { desktop: 'idle' } },
    );
    expect(seen.map((change) => [change.kind, change.userId])).toEqual([['updated', ALICE]]);
  });

  it('announces a user turning private as gone, and back as monitored, before their next presence', async () => {
    await service.change(ALICE, { visibility: 'private', hide_platforms: true });
    expect(seen.map((change) => [change.kind, change.userId])).toEqual([['unmonitored', ALICE]]);
    expect(view.get(ALICE)).toBeUndefined();
    // The presence rendered again for the new settings reached no public listener.
    expect(registry.get(ALICE)?.summary().active_on_discord_desktop).toBe(false);

    seen.length = 0;
    await service.change(ALICE, { visibility: 'public' });
    expect(seen.map((change) => [change.kind, change.userId])).toEqual([['monitored', ALICE]]);
    expect(view.get(ALICE)?.summary().active_on_discord_desktop).toBe(false);
    await service.reset(ALICE);
    expect(view.get(ALICE)?.summary().active_on_discord_desktop).toBe(true);
    expect(await service.settings(ALICE)).toMatchObject({ visibility: 'public', hide_platforms: false });
  });

  it('ends a pause when its time comes, with nobody writing anything', async () => {
    await service.change(ALICE, { paused_until: T0 + 60_000 });
    expect(view.get(ALICE)?.summary().discord_status).toBe('offline');
    told.length = 0;
    await vi.advanceTimersByTimeAsync(59_999);
    expect(told).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(told).toEqual([ALICE]);
    expect(view.get(ALICE)?.summary().discord_status).toBe('online');
  });

  it('waits for a pause past what one timer holds in steps, and never for one until undone', async () => {
    await service.change(ALICE, { paused_until: PAUSED_UNTIL_UNDONE });
    await service.change(BOB, { paused_until: T0 + 40 * 24 * 3600_000 });
    told.length = 0;
    await vi.advanceTimersByTimeAsync(30 * 24 * 3600_000);
    expect(told).toEqual([]);
    await vi.advanceTimersByTimeAsync(10 * 24 * 3600_000);
    expect(told).toEqual([BOB]);
    expect(registry.get(ALICE)?.summary().discord_status).toBe('offline');
  });

  it('reads everything again after the bus was away, telling of each user whose settings differ', async () => {
    // Written by another node while this one heard nothing.
    await store.privacy.patchPrivacy(ALICE, { hide_platforms: true });
    await store.privacy.deletePrivacy(BOB);
    told.length = 0;
    await directory.load();
    expect(told.sort()).toEqual([ALICE, BOB].sort());
    expect(registry.get(ALICE)?.summary().active_on_discord_desktop).toBe(false);
    expect(view.get(BOB)).toBeDefined();
    expect(seen.some((change) => change.kind === 'monitored' && change.userId === BOB)).toBe(true);
  });

  it('applies changes in the order they were made, however the reads interleave', async () => {
    await Promise.all([
      service.change(ALICE, { hide_kv: true }),
      service.change(ALICE, { hide_kv: false, hide_profile: true }),
    ]);
    expect(directory.of(ALICE)).toMatchObject({ hide_kv: false, hide_profile: true });
  });
});
