import { describe, expect, it } from 'vitest';
import type { DiscordUser, RawPresence } from '../../../src/presence/model.js';
import { DEFAULT_PRIVACY, type PrivacySettings } from '../../../src/presence/privacy.js';
import { type PresenceChange, PresenceRegistry } from '../../../src/presence/registry/registry.js';
import { gameActivity, spotifyActivity } from '../../../src/simulator/activities.js';

const CDN = 'https://cdn.discordapp.com';
const GUILD_A = '100000000000000001';
const GUILD_B = '100000000000000002';
const T0 = 1_780_000_000_000;
const ALICE: DiscordUser = { id: '80351110224678912', username: 'alice', discriminator: '0' };
const BOB: DiscordUser = { id: '80351110224678913', username: 'bob', discriminator: '0' };

const online = (shiftMs = 0): RawPresence => ({
  status: 'online',
  client_status: { desktop: 'online' },
  activities: [
    spotifyActivity({
      song: 'one',
      artists: ['Artist'],
      album: 'Album',
      imageId: 'ab67616d0000b273',
      trackId: 'track-one',
      start: T0 + shiftMs,
      end: T0 + shiftMs + 200_000,
      createdAt: T0 + shiftMs,
    }),
  ],
});
const idle: RawPresence = { status: 'idle', client_status: { desktop: 'idle' }, activities: [] };

function registry(settings = new Map<string, PrivacySettings>()) {
  const clock = { now: T0 };
  const reg = new PresenceRegistry({
    cdnUrl: CDN,
    youtubeMusic: { applicationIds: new Set(), names: new Set() },
    now: () => clock.now,
    privacy: (userId) => settings.get(userId),
  });
  const changes: PresenceChange[] = [];
  reg.onChange((change) => changes.push(change));
  /** The user's freshness as a read answers it, and whether it is the JSON's last before `kv`. */
  const freshness = (userId: string) => {
    const snapshot = reg.get(userId);
    const presence = snapshot?.presence;
    expect(snapshot?.json).toMatch(/,"observed_at":\d+,"stale":(true|false),"kv":/);
    return { observed_at: presence?.observed_at, stale: presence?.stale };
  };
  return { reg, clock, changes, freshness };
}

describe('observed_at', () => {
  it('is when the user was first seen, and moves with each change Discord reports, never with a copy', () => {
    const { reg, clock, changes, freshness } = registry();
    reg.memberSeen(GUILD_A, ALICE, online());
    reg.memberSeen(GUILD_B, ALICE, online());
    expect(freshness(ALICE.id)).toEqual({ observed_at: T0, stale: false });
    const body = reg.body(ALICE.id);

    // The other guild's copy of the same update, a few hundred ms later: no change, no new bytes.
    clock.now = T0 + 400;
    changes.length = 0;
    reg.memberSeen(GUILD_B, { id: ALICE.id }, online(400));
    reg.memberListed(GUILD_A, ALICE, online());
    expect(changes).toEqual([]);
    expect(reg.body(ALICE.id)).toEqual(body);

    clock.now = T0 + 60_000;
    reg.memberSeen(GUILD_A, { id: ALICE.id }, idle);
    expect(changes.map((change) => change.kind)).toEqual(['updated']);
    expect(freshness(ALICE.id)).toEqual({ observed_at: T0 + 60_000, stale: false });
    expect(changes[0]?.kind === 'updated' && changes[0].current.summary().observed_at).toBe(T0 + 60_000);
  });

  it('moves with a change of the user Discord reports, not with the KV, the profile or the settings', () => {
    const settings = new Map<string, PrivacySettings>();
    const { reg, clock, freshness } = registry(settings);
    reg.memberSeen(GUILD_A, ALICE, online());

    clock.now = T0 + 1_000;
    reg.kvLoaded(ALICE.id, { mood: 'fine' }, 1);
    reg.profileFetched(ALICE.id, { banner: null, accent_color: 0xff0000 });
    settings.set(ALICE.id, { ...DEFAULT_PRIVACY, hide_platforms: true });
    reg.privacyChanged(ALICE.id);
    expect(reg.get(ALICE.id)?.presence).toMatchObject({ kv: { mood: 'fine' }, accent_color: 0xff0000 });
    expect(freshness(ALICE.id).observed_at).toBe(T0);

    clock.now = T0 + 2_000;
    reg.userUpdated({ ...ALICE, global_name: 'Alice' });
    expect(freshness(ALICE.id).observed_at).toBe(T0 + 2_000);
  });

  it('does not move when what changed is hidden: the moment would tell of it', () => {
    const settings = new Map([[ALICE.id, { ...DEFAULT_PRIVACY, hide_activity_types: ['playing' as const] }]]);
    const { reg, clock, changes, freshness } = registry(settings);
    const playing = (name: string): RawPresence => ({
      ...idle,
      activities: [gameActivity({ name, applicationId: '1402418491272986635', start: T0, createdAt: T0 })],
    });
    reg.memberSeen(GUILD_A, ALICE, playing('Secret'));
    changes.length = 0;
    clock.now = T0 + 5_000;
    reg.memberSeen(GUILD_A, ALICE, playing('Other secret'));
    expect(changes).toEqual([]);
    expect(freshness(ALICE.id).observed_at).toBe(T0);
  });

  it('of a pending member is the moment of the listing', () => {
    const { reg, clock, freshness } = registry();
    reg.memberListed(GUILD_A, ALICE, online());
    clock.now = T0 + 9_000;
    expect(freshness(ALICE.id)).toEqual({ observed_at: T0, stale: false });
  });
});

describe('stale', () => {
  it('is set for users seen only through a lost guild, rendered as they are read or in batches', () => {
    const { reg, changes, freshness } = registry();
    reg.memberSeen(GUILD_A, ALICE, online());
    reg.memberSeen(GUILD_A, BOB, idle);
    reg.memberSeen(GUILD_B, BOB, idle);
    changes.length = 0;

    reg.guildsLost([GUILD_A]);
    expect(reg.staleCount).toBe(1);
    expect(reg.staleWaiting).toBe(1);
    expect(changes).toEqual([]);
    // A read renders it then: no reader sees it current.
    expect(freshness(ALICE.id)).toEqual({ observed_at: T0, stale: true });
    expect(changes.map((change) => [change.kind, change.userId])).toEqual([['updated', ALICE.id]]);
    expect(reg.staleWaiting).toBe(0);
    // Bob is still heard through the other guild.
    expect(freshness(BOB.id).stale).toBe(false);

    reg.guildsLost([GUILD_B]);
    expect(reg.staleCount).toBe(2);
    expect(reg.renderStale(10)).toBe(0);
    expect(changes.map((change) => change.userId)).toEqual([ALICE.id, BOB.id]);
    expect(freshness(BOB.id).stale).toBe(true);
  });

  it('renders so many at a time, in the order of their slots, those made stale meanwhile included', () => {
    const { reg, changes } = registry();
    // Bob first, in B alone: the lowest slot.
    reg.memberSeen(GUILD_B, BOB, idle);
    const ids = Array.from({ length: 5 }, (_, n) => String(80351110224678920n + BigInt(n)));
    for (const id of ids) reg.memberSeen(GUILD_A, { id }, idle);
    changes.length = 0;
    reg.guildsLost([GUILD_A]);
    expect(reg.renderStale(2)).toBe(3);
    reg.guildsLost([GUILD_B]);
    expect(reg.renderStale(2)).toBe(2);
    expect(reg.renderStale(2)).toBe(0);
    expect(reg.renderStale(2)).toBe(0);
    expect(changes.map((change) => change.userId)).toEqual([ids[0], ids[1], BOB.id, ...ids.slice(2)]);
    expect(changes.every((change) => change.kind === 'updated' && change.current.summary().stale)).toBe(true);
  });

  it('ends when Discord reports the user again: a listing that confirms the same presence observes it then', () => {
    const { reg, clock, changes, freshness } = registry();
    reg.memberSeen(GUILD_A, ALICE, online());
    reg.memberSeen(GUILD_A, BOB, idle);
    reg.guildsLost([GUILD_A]);
    reg.renderStale(10);
    changes.length = 0;

    // A new session sends the guild again and lists it; until the listing reaches a member, they stay stale.
    clock.now = T0 + 30_000;
    reg.beginGuildSync(GUILD_A);
    reg.memberListed(GUILD_A, ALICE, online());
    expect(freshness(ALICE.id)).toEqual({ observed_at: T0 + 30_000, stale: false });
    expect(freshness(BOB.id)).toEqual({ observed_at: T0, stale: true });
    expect(changes.map((change) => change.userId)).toEqual([ALICE.id]);

    // A member update carries no presence: it confirms nothing.
    reg.memberSeen(GUILD_A, { ...BOB, global_name: 'Bob' });
    expect(freshness(BOB.id).stale).toBe(true);
    clock.now = T0 + 31_000;
    reg.memberSeen(GUILD_A, { id: BOB.id }, online());
    expect(freshness(BOB.id)).toEqual({ observed_at: T0 + 31_000, stale: false });
    reg.endGuildSync(GUILD_A);
    expect(reg.staleCount).toBe(0);
  });

  it('is set at once for a user whose last live guild goes while the others are lost', () => {
    const { reg, changes, freshness } = registry();
    reg.memberSeen(GUILD_A, ALICE, online());
    reg.memberSeen(GUILD_B, ALICE, online());
    reg.guildsLost([GUILD_A]);
    expect(reg.staleCount).toBe(0);
    changes.length = 0;
    reg.memberRemoved(GUILD_B, ALICE.id);
    expect(changes.map((change) => change.kind)).toEqual(['updated']);
    expect(reg.staleWaiting).toBe(0);
    expect(freshness(ALICE.id).stale).toBe(true);
  });

  it('of a pending member, not rendered yet, is in their first version', () => {
    const { reg, changes, freshness } = registry();
    reg.memberListed(GUILD_A, ALICE, online());
    reg.guildsLost([GUILD_A]);
    expect(reg.staleWaiting).toBe(0);
    expect(reg.renderPending(10)).toBe(0);
    expect(changes.map((change) => change.kind)).toEqual(['monitored']);
    expect(freshness(ALICE.id)).toEqual({ observed_at: T0, stale: true });
  });

  it('is let go with the user, and counted no more', () => {
    const { reg } = registry();
    reg.memberSeen(GUILD_A, ALICE, online());
    reg.guildsLost([GUILD_A]);
    reg.guildRemoved(GUILD_A);
    expect(reg.isMonitored(ALICE.id)).toBe(false);
    expect(reg.staleCount).toBe(0);
    expect(reg.staleWaiting).toBe(0);
  });

  it('follows a private or hiding user as any other, hiding nothing more', () => {
    const settings = new Map([
      [ALICE.id, { ...DEFAULT_PRIVACY, hide_activity_types: ['listening' as const] }],
    ]);
    const { reg, freshness } = registry(settings);
    reg.memberSeen(GUILD_A, ALICE, online());
    reg.guildsLost([GUILD_A]);
    expect(freshness(ALICE.id)).toEqual({ observed_at: T0, stale: true });
    expect(reg.get(ALICE.id)?.presence).toMatchObject({
      now_playing: null,
      activities: [],
      privacy: { hidden: ['activities:listening'] },
    });
  });
});
