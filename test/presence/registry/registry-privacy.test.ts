import { describe, expect, it } from 'vitest';
import type { DiscordUser, Presence, RawPresence } from '../../../src/presence/model.js';
import { DEFAULT_PRIVACY, PAUSED_UNTIL_UNDONE, type PrivacySettings } from '../../../src/presence/privacy.js';
import { type PresenceChange, PresenceRegistry } from '../../../src/presence/registry/registry.js';
import {
  appleMusicActivity,
  customStatusActivity,
  gameActivity,
  spotifyActivity,
} from '../../../src/simulator/activities.js';

const CDN = 'https://cdn.discordapp.com';
const GUILD = '100000000000000001';
const NOW = 1_780_000_000_000;
const USER: DiscordUser = {
  id: '80351110224678912',
  username: 'alice',
  global_name: 'Alice',
  avatar: null,
  discriminator: '0',
  primary_guild: {
    identity_guild_id: '613425648685547541',
    identity_enabled: true,
    tag: 'SECRETTAG',
    badge: 'b1',
  },
  avatar_decoration_data: { asset: 'a_decorationasset', sku_id: '1144058522808614923' },
} as DiscordUser;
const GAME_ID = '1402418491272986635';

const RAW: RawPresence = {
  status: 'dnd',
  client_status: { desktop: 'dnd', mobile: 'dnd' },
  activities: [
    customStatusActivity({ text: 'SECRET-STATUS', createdAt: NOW }),
    gameActivity({ name: 'SecretGame', applicationId: GAME_ID, start: NOW, createdAt: NOW }),
    spotifyActivity({
      song: 'SecretSong',
      artists: ['SecretArtist'],
      album: 'SecretAlbum',
      imageId: 'ab67616d0000b273',
      trackId: 'secrettrack',
      start: NOW,
      end: NOW + 200_000,
      createdAt: NOW,
    }),
    appleMusicActivity({
      title: 'AppleSong',
      artist: 'AppleArtist',
      album: 'AppleAlbum',
      artworkUrl: 'https://is1-ssl.mzstatic.com/image/thumb/art.jpg',
      albumSlug: 'album',
      albumId: '1',
      trackId: '2',
      start: NOW - 1000,
      end: NOW + 100_000,
      createdAt: NOW - 1000,
    }),
  ],
};

/** A registry whose settings the test changes, told as the directory tells it. */
function setup(initial?: Partial<PrivacySettings>) {
  const settings = new Map<string, PrivacySettings>();
  if (initial) settings.set(USER.id, { ...DEFAULT_PRIVACY, ...initial });
  const registry = new PresenceRegistry({
    cdnUrl: CDN,
    youtubeMusic: { applicationIds: new Set(['1177081335727267940']), names: new Set(['youtube music']) },
    now: () => NOW,
    privacy: (userId) => settings.get(userId),
  });
  const changes: PresenceChange[] = [];
  registry.onChange((change) => changes.push(change));
  const change = (patch: Partial<PrivacySettings> | null) => {
    if (patch === null) settings.delete(USER.id);
    else settings.set(USER.id, { ...DEFAULT_PRIVACY, ...patch });
    registry.privacyChanged(USER.id);
  };
  const body = () => String(registry.body(USER.id)?.body);
  const presence = () => (JSON.parse(body()) as { data: Presence }).data;
  return { registry, changes, change, body, presence };
}

describe('PresenceRegistry under privacy settings', () => {
  it('renders a user with no settings exactly as before, with no privacy field', () => {
    const plain = setup();
    plain.registry.memberSeen(GUILD, USER, RAW);
    const withDefaults = setup({});
    withDefaults.registry.memberSeen(GUILD, USER, RAW);
    expect(withDefaults.body()).toBe(plain.body());
    expect(plain.presence().privacy).toBeUndefined();
    expect(plain.body()).toContain('SECRET-STATUS');
  });

  it('leaves each hidden thing out of every field derived from it, and names what is hidden', () => {
    const { registry, presence, body } = setup({
      hide_custom_status: true,
      hide_music_sources: ['spotify'],
      hide_application_ids: [GAME_ID],
      hide_platforms: true,
      hide_profile: true,
      hide_kv: true,
    });
    registry.memberSeen(GUILD, USER, RAW);
    registry.kvLoaded(USER.id, { secret: 'SECRET-KV' }, 1);
    const shown = presence();
    for (const secret of [
      'SECRET-STATUS',
      'SecretGame',
      'SecretSong',
      'secrettrack',
      'SECRETTAG',
      'decorationasset',
      'SECRET-KV',
      GAME_ID,
    ]) {
      expect(body()).not.toContain(secret);
    }
    expect(shown.custom_status).toBeNull();
    expect(shown.listening_to_spotify).toBe(false);
    expect(shown.spotify).toBeNull();
    // Apple Music is not hidden: it plays on in now_playing.
    expect(shown.now_playing?.source).toBe('apple_music');
    expect(shown.active_on_discord_desktop).toBe(false);
    expect(shown.active_on_discord_mobile).toBe(false);
    expect(shown.discord_status).toBe('dnd');
    expect(shown.member_since).toBeNull();
    expect(shown.banner).toBeNull();
    expect(shown.kv).toEqual({});
    expect(shown.privacy?.hidden).toEqual([
      'activities:spotify',
      'applications',
      'custom_status',
      'platforms',
      'profile',
      'kv',
    ]);
  });

  it('hides every activity of a type, and all music with listening', () => {
    const { registry, presence } = setup({ hide_activity_types: ['listening', 'playing'] });
    registry.memberSeen(GUILD, USER, RAW);
    const shown = presence();
    expect(shown.activities.map((activity) => activity.name)).toEqual(['Custom Status']);
    expect(shown.now_playing).toBeNull();
    expect(shown.listening_to_music).toBe(false);
    expect(shown.custom_status?.text).toBe('SECRET-STATUS');
  });

  it('reads a paused user as offline with nothing going on, until the pause is undone', () => {
    const { registry, presence, change } = setup({ paused_until: PAUSED_UNTIL_UNDONE });
    registry.memberSeen(GUILD, USER, RAW);
    expect(presence()).toMatchObject({
      discord_status: 'offline',
      activities: [],
      custom_status: null,
      now_playing: null,
      active_on_discord_desktop: false,
      privacy: { hidden: ['paused'] },
    });
    change({ paused_until: null });
    expect(presence().discord_status).toBe('dnd');
    expect(presence().activities).toHaveLength(4);
  });

  it('takes a change of settings live: hidden, then shown again with what happened meanwhile', () => {
    const { registry, changes, change, presence, body } = setup();
    registry.memberSeen(GUILD, USER, RAW);
    registry.kvLoaded(USER.id, { mood: 'MOOD-1' }, 1);
    changes.length = 0;

    change({ hide_activity_types: ['playing'], hide_kv: true, hide_profile: true });
    expect(changes.map((c) => c.kind)).toEqual(['updated']);
    expect(body()).not.toContain('SecretGame');
    expect(body()).not.toContain('MOOD-1');

    // While hidden, the game changes, the KV is written and the user's profile grows: none of it shows...
    const nextRaw = {
      ...RAW,
      activities: RAW.activities.map((activity) =>
        activity.name === 'SecretGame' ? { ...activity, details: 'LEVEL-9' } : activity,
      ),
    };
    changes.length = 0;
    registry.memberSeen(GUILD, USER, nextRaw);
    expect(registry.kvChanged(USER.id, { set: [['mood', 'MOOD-2']], delete: [] }, 2)).toBe(true);
    registry.userUpdated({ id: USER.id, global_name: 'Alice Renamed' });
    expect(body()).not.toContain('LEVEL-9');
    expect(body()).not.toContain('MOOD-2');
    expect(presence().discord_user.global_name).toBe('Alice Renamed');
    expect(presence().discord_user.primary_guild).toBeUndefined();
    // ...a change of the hidden game alone is no change of the presence anyone sees.
    expect(changes.map((c) => c.kind)).toEqual(['updated']);

    // ...and all of it is there once shown again.
    change(null);
    const shown = presence();
    expect(shown.activities.find((activity) => activity.name === 'SecretGame')?.details).toBe('LEVEL-9');
    expect(shown.kv).toEqual({ mood: 'MOOD-2' });
    expect(shown.discord_user.global_name).toBe('Alice Renamed');
    expect(shown.discord_user.primary_guild).toMatchObject({ tag: 'SECRETTAG' });
    expect(shown.privacy).toBeUndefined();
  });

  it('takes a guild copy of a hidden presence as no change', () => {
    const { registry, changes } = setup({ hide_custom_status: true });
    registry.memberSeen(GUILD, USER, RAW);
    changes.length = 0;
    registry.memberSeen('100000000000000002', USER, structuredClone(RAW));
    expect(changes).toEqual([]);
  });

  it('renders a pending member under their settings when they are first shown', () => {
    const { registry, changes, body } = setup({ hide_custom_status: true });
    registry.memberListed(GUILD, USER, RAW);
    registry.renderPending(10);
    expect(changes.map((c) => c.kind)).toEqual(['monitored']);
    expect(body()).not.toContain('SECRET-STATUS');
  });
});
