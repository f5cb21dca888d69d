import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import { PAUSED_UNTIL_UNDONE } from '../../src/presence/privacy.js';
import type { PresenceChange } from '../../src/presence/registry/registry.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
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

  it('shows a user turning public only as rendered under what they hid in the same change', async () => {
    await service.change(BOB, { visibility: 'public', hide_platforms: true });
    expect(seen.map((change) => [change.kind, change.userId])).toEqual([['monitored', BOB]]);
    for (const change of seen) {
      expect(change.kind === 'unmonitored' ? null : change.current.body).not.toContain(
        '"active_on_discord_desktop":true',
      );
    }
    expect(view.get(BOB)?.summary().active_on_discord_desktop).toBe(false);
  });

  it('keeps a user turning public hidden until a presence rendered under their settings arrives', async () => {
    // As on an API node: its directory hears of the change before the ingest node's new version arrives.
    const apiDirectory = new PrivacyDirectory(store.privacy);
    await apiDirectory.load();
    const replica = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: { applicationIds: new Set(), names: new Set() },
      privacy: (userId) => apiDirectory.of(userId),
    });
    replica.memberSeen(
      GUILD,
      { id: BOB, username: BOB },
      { status: 'online', activities: [], client_status: { desktop: 'online' } },
    );
    const apiView = new PublicView(replica, apiDirectory);
    apiView.start([BOB]);
    const heard: PresenceChange[] = [];
    apiView.onChange((change) => heard.push(change));

    await store.privacy.patchPrivacy(BOB, { visibility: 'public', hide_platforms: true });
    await apiDirectory.refresh(BOB);
    await Promise.resolve();
    expect(apiView.get(BOB)).toBeUndefined();
    expect(heard).toEqual([]);

    replica.privacyChanged(BOB);
    expect(heard.map((change) => [change.kind, change.userId])).toEqual([['monitored', BOB]]);
    expect(apiView.get(BOB)?.summary().active_on_discord_desktop).toBe(false);
    apiView.close();
    apiDirectory.close();
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

  it('reads a change it could not read again until it can, and a read that failed stops none after it', async () => {
    const flaky = new PrivacyDirectory({
      ...store.privacy,
      getPrivacy: vi
        .fn()
        .mockRejectedValueOnce(new Error('store away'))
        .mockRejectedValueOnce(new Error('store away'))
        .mockImplementation((userId: string) => store.privacy.getPrivacy(userId)),
      allPrivacy: () => store.privacy.allPrivacy(),
      patchPrivacy: (userId, patch) => store.privacy.patchPrivacy(userId, patch),
      deletePrivacy: (userId) => store.privacy.deletePrivacy(userId),
    });
    await flaky.load();
    await store.privacy.patchPrivacy(ALICE, { visibility: 'private' });
    await expect(flaky.refresh(ALICE)).rejects.toThrow('store away');
    // Asked again meanwhile (another change announced): the failed read before it does not stop it.
    await expect(flaky.refresh(ALICE)).rejects.toThrow('store away');
    expect(flaky.of(ALICE)).toBeUndefined();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(flaky.of(ALICE)?.visibility).toBe('private');
    flaky.close();
  });

  it('keeps what a user changed while everyone was being read again', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = new PrivacyDirectory({
      ...store.privacy,
      allPrivacy: async () => {
        const all = await store.privacy.allPrivacy();
        await held;
        return all;
      },
      getPrivacy: (userId) => store.privacy.getPrivacy(userId),
      patchPrivacy: (userId, patch) => store.privacy.patchPrivacy(userId, patch),
      deletePrivacy: (userId) => store.privacy.deletePrivacy(userId),
    });
    const loading = slow.load();
    await Promise.resolve();
    await store.privacy.patchPrivacy(ALICE, { visibility: 'private' });
    await slow.refresh(ALICE);
    release();
    await loading;
    expect(slow.of(ALICE)?.visibility).toBe('private');
    slow.close();
  });

  it('applies changes in the order they were made, however the reads interleave', async () => {
    await Promise.all([
      service.change(ALICE, { hide_kv: true }),
      service.change(ALICE, { hide_kv: false, hide_profile: true }),
    ]);
    expect(directory.of(ALICE)).toMatchObject({ hide_kv: false, hide_profile: true });
  });
});
