import { describe, expect, it, vi } from 'vitest';
import type { RawPresence } from '../../../src/presence/model.js';
import { type PresenceChange, PresenceRegistry } from '../../../src/presence/registry/registry.js';
import { envelopeOf } from '../../../src/presence/registry/snapshot.js';
import { customStatusActivity, spotifyActivity } from '../../../src/simulator/activities.js';

const CDN = 'https://cdn.discordapp.com';
const ALICE = {
  id: '80351110224678912',
  username: 'alice',
  global_name: 'Alice',
  avatar: null,
  discriminator: '0',
};
const GUILD_A = '100000000000000001';
const GUILD_B = '100000000000000002';

function registry(): { registry: PresenceRegistry; changes: PresenceChange[] } {
  const reg = new PresenceRegistry({
    cdnUrl: CDN,
    youtubeMusic: { applicationIds: new Set(['1177081335727267940']), names: new Set(['youtube music']) },
  });
  const changes: PresenceChange[] = [];
  reg.onChange((change) => changes.push(change));
  return { registry: reg, changes };
}

function listening(song: string, start: number, shiftMs = 0): RawPresence {
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [
      spotifyActivity({
        song,
        artists: ['Artist'],
        album: 'Album',
        imageId: 'ab67616d0000b273',
        trackId: `track-${song}`,
        start: start + shiftMs,
        end: start + shiftMs + 200_000,
        createdAt: start + shiftMs,
      }),
    ],
  };
}

describe('PresenceRegistry', () => {
  it('starts monitoring a member, offline until a presence says otherwise', () => {
    const { registry: reg, changes } = registry();
    reg.memberSeen(GUILD_A, ALICE);
    expect(changes.map((c) => c.kind)).toEqual(['monitored']);
    expect(reg.get(ALICE.id)?.presence.discord_status).toBe('offline');
    expect(reg.get(ALICE.id)?.presence.discord_user.username).toBe('alice');
    expect(reg.isMonitored(ALICE.id)).toBe(true);
    expect(reg.size).toBe(1);
  });

  it('keeps one presence for a user in two guilds and fires once per real change', () => {
    const { registry: reg, changes } = registry();
    reg.memberSeen(GUILD_A, ALICE);
    reg.memberSeen(GUILD_B, ALICE);
    changes.length = 0;

    const start = 1_700_000_000_000;
    reg.memberSeen(GUILD_A, { id: ALICE.id }, listening('one', start));
    reg.memberSeen(GUILD_B, { id: ALICE.id }, listening('one', start, 420));
    expect(changes).toHaveLength(1);
    expect(reg.get(ALICE.id)?.presence.spotify?.timestamps.start).toBe(start);

    reg.memberSeen(GUILD_A, { id: ALICE.id }, listening('two', start + 200_000));
    reg.memberSeen(GUILD_B, { id: ALICE.id }, listening('two', start + 200_000, -300));
    expect(changes).toHaveLength(2);
    expect(reg.get(ALICE.id)?.presence.spotify?.song).toBe('two');
    expect(reg.size).toBe(1);
  });

  it('treats a seek of more than the copy tolerance as a change', () => {
    const { registry: reg, changes } = registry();
    const start = 1_700_000_000_000;
    reg.memberSeen(GUILD_A, ALICE, listening('one', start));
    reg.memberSeen(GUILD_A, ALICE, listening('one', start, -30_000));
    expect(changes.map((c) => c.kind)).toEqual(['monitored', 'updated']);
  });

  it('merges partial users into the known user', () => {
    const { registry: reg, changes } = registry();
    reg.memberSeen(GUILD_A, ALICE);
    reg.memberSeen(
      GUILD_A,
      { id: ALICE.id },
      { status: 'idle', activities: [], client_status: { web: 'idle' } },
    );
    const presence = reg.get(ALICE.id)?.presence;
    expect(presence?.discord_user).toMatchObject({ id: ALICE.id, username: 'alice', global_name: 'Alice' });
    expect(presence?.discord_status).toBe('idle');
    expect(presence?.active_on_discord_web).toBe(true);

    reg.userUpdated({ id: ALICE.id, global_name: 'Alice L.' });
    expect(reg.get(ALICE.id)?.presence.discord_user.global_name).toBe('Alice L.');
    expect(changes.map((c) => c.kind)).toEqual(['monitored', 'updated', 'updated']);
  });

  it('keeps a user it holds only as text whole through presence, profile and KV changes', () => {
    const { registry: reg, changes } = registry();
    const user = {
      ...ALICE,
      username: 'zoë',
      global_name: 'Zoë 🎧 "the" \\ one',
      avatar_decoration_data: { asset: 'a_1', sku_id: '1144058522808614923', expires_at: null },
      primary_guild: { identity_guild_id: GUILD_A, tag: 'ZOË', identity_enabled: true, badge: 'b1' },
    };
    reg.memberSeen(GUILD_A, user);
    for (let i = 0; i < 3; i++)
      reg.memberSeen(GUILD_A, { id: ALICE.id }, listening(`song ${i} ✨`, 1_700_000_000_000 + i));
    reg.profileFetched(ALICE.id, { banner: 'a_banner', accent_color: 0x123456 });
    reg.kvLoaded(ALICE.id, { note: 'héllo' }, 1);
    const snapshot = reg.get(ALICE.id);
    // As sent, with the URLs of its server tag badge and decoration beside them.
    const shown = {
      ...user,
      avatar_decoration_data: {
        ...user.avatar_decoration_data,
        asset_url: `${CDN}/avatar-decoration-presets/a_1.png`,
      },
      primary_guild: { ...user.primary_guild, badge_url: `${CDN}/guild-tag-badges/${GUILD_A}/b1.png` },
    };
    expect(snapshot?.presence.discord_user).toEqual(shown);
    expect(snapshot?.body).toMatch(/^[\x20-\x7e]*$/);
    // The same member listed again, or the same user object from elsewhere, is no change.
    reg.memberSeen(GUILD_B, user);
    reg.userUpdated({ ...user });
    expect(changes.map((c) => c.kind)).toEqual([
      'monitored',
      'updated',
      'updated',
      'updated',
      'updated',
      'updated',
    ]);
    for (const change of changes) {
      if (change.kind !== 'unmonitored') expect(JSON.parse(change.current.json).discord_user).toEqual(shown);
    }
  });

  it('writes the same bytes as serializing the whole presence at once', () => {
    const { registry: reg } = registry();
    const user = { ...ALICE, global_name: 'Ålice 🎧' };
    reg.memberSeen(GUILD_A, user, listening('Señorita', 1_700_000_000_000));
    reg.userUpdated({ id: ALICE.id, username: 'ålice' });
    reg.memberSeen(GUILD_A, { id: ALICE.id }, listening('Nude', 1_700_000_300_000));
    const snapshot = reg.get(ALICE.id);
    const presence = snapshot?.presence;
    expect(presence?.discord_user).toEqual({ ...user, username: 'ålice' });
    expect(snapshot?.body).toBe(envelopeOf(JSON.stringify(presence)));
  });

  it('ignores user updates for users it does not monitor', () => {
    const { registry: reg, changes } = registry();
    reg.userUpdated({ id: '5', username: 'nobody' });
    expect(changes).toHaveLength(0);
    expect(reg.get('5')).toBeUndefined();
  });

  it('ignores members and users without a usable id (payloads are JSON we did not write)', () => {
    const { registry: reg, changes } = registry();
    for (const user of [
      undefined,
      null,
      {},
      { id: 5 },
      { id: '' },
      { id: 'abc' },
      { id: '18446744073709551616' },
    ]) {
      expect(() => reg.memberSeen(GUILD_A, user as never, listening('one', 1_700_000_000_000))).not.toThrow();
      expect(() => reg.userUpdated(user as never)).not.toThrow();
    }
    expect(changes).toHaveLength(0);
    expect(reg.size).toBe(0);
    expect(reg.memberCount(GUILD_A)).toBe(0);
  });

  it('stops monitoring only when the last shared guild is gone', () => {
    const { registry: reg, changes } = registry();
    reg.memberSeen(GUILD_A, ALICE);
    reg.memberSeen(GUILD_B, ALICE);
    reg.memberRemoved(GUILD_A, ALICE.id);
    expect(reg.isMonitored(ALICE.id)).toBe(true);
    reg.memberRemoved(GUILD_B, ALICE.id);
    expect(reg.isMonitored(ALICE.id)).toBe(false);
    expect(reg.get(ALICE.id)).toBeUndefined();
    expect(changes.map((c) => c.kind)).toEqual(['monitored', 'unmonitored']);
  });

  it('drops the members of a removed guild unless another guild still shares them', () => {
    const { registry: reg } = registry();
    const bob = { id: '2', username: 'bob' };
    reg.memberSeen(GUILD_A, ALICE);
    reg.memberSeen(GUILD_B, ALICE);
    reg.memberSeen(GUILD_A, bob);
    reg.guildRemoved(GUILD_A);
    expect(reg.isMonitored(ALICE.id)).toBe(true);
    expect(reg.isMonitored(bob.id)).toBe(false);
    expect(reg.guildIds()).toEqual([GUILD_B]);
  });

  it('after a re-listing, forgets members who were not listed again', () => {
    const { registry: reg, changes } = registry();
    const bob = { id: '2', username: 'bob' };
    reg.memberSeen(GUILD_A, ALICE);
    reg.memberSeen(GUILD_A, bob);
    changes.length = 0;

    reg.beginGuildSync(GUILD_A);
    reg.memberSeen(GUILD_A, ALICE);
    reg.endGuildSync(GUILD_A);

    expect(reg.isMonitored(ALICE.id)).toBe(true);
    expect(reg.isMonitored(bob.id)).toBe(false);
    expect(changes).toEqual([expect.objectContaining({ kind: 'unmonitored', userId: bob.id })]);
  });

  it('adds the profile to the presence and counts versions', () => {
    const { registry: reg } = registry();
    reg.memberSeen(GUILD_A, ALICE, {
      status: 'dnd',
      activities: [customStatusActivity({ text: 'busy' })],
      client_status: { mobile: 'dnd' },
    });
    expect(reg.get(ALICE.id)?.version).toBe(1);
    reg.profileFetched(ALICE.id, { banner: 'a_1234', accent_color: 16711680 });
    const snapshot = reg.get(ALICE.id);
    expect(snapshot?.version).toBe(2);
    expect(snapshot?.presence).toMatchObject({
      banner: 'a_1234',
      banner_url: `${CDN}/banners/${ALICE.id}/a_1234.gif?size=1024`,
      accent_color: 16711680,
      custom_status: { text: 'busy', emoji: null },
    });
  });

  it('serializes each change once: the snapshot carries the JSON and the REST envelope', () => {
    const { registry: reg } = registry();
    reg.memberSeen(GUILD_A, ALICE, listening('one', 1_700_000_000_000));
    const snapshot = reg.get(ALICE.id);
    if (!snapshot) throw new Error('not monitored');
    expect(JSON.parse(snapshot.json)).toEqual(snapshot.presence);
    expect(JSON.parse(snapshot.body.toString())).toEqual({ success: true, data: snapshot.presence });
  });

  it('fires nothing when a change leaves the normalized view as it was', () => {
    const { registry: reg, changes } = registry();
    reg.memberSeen(GUILD_A, ALICE);
    reg.profileFetched(ALICE.id, { banner: null, accent_color: null });
    expect(changes.map((c) => c.kind)).toEqual(['monitored']);
  });

  it('applies a KV change to the KV it holds: small as text, large as bytes, each form what a store read gives', () => {
    const { registry: reg, changes } = registry();
    reg.memberSeen(GUILD_A, ALICE);
    reg.kvLoaded(ALICE.id, { note: 'héllo' }, 1);
    expect(typeof reg.get(ALICE.id)?.body).toBe('string');
    expect(reg.kvChanged(ALICE.id, { set: [['big', '🎧'.repeat(20_000)]], delete: [] }, 2)).toBe(true);
    expect(Buffer.isBuffer(reg.get(ALICE.id)?.body)).toBe(true);
    expect(reg.get(ALICE.id)?.presence.kv).toEqual({ big: '🎧'.repeat(20_000), note: 'héllo' });
    // The same KV read whole from the store is no change at all: the bytes are the same.
    const seen = changes.length;
    reg.kvLoaded(ALICE.id, { big: '🎧'.repeat(20_000), note: 'héllo' }, 3);
    expect(changes.length).toBe(seen);
    // Small again: back to text.
    expect(reg.kvChanged(ALICE.id, { set: [], delete: ['big'] }, 4)).toBe(true);
    expect(reg.get(ALICE.id)?.body).toMatch(/^[\x20-\x7e]*$/);
    expect(reg.get(ALICE.id)?.presence.kv).toEqual({ note: 'héllo' });
    // A revision that skips one cannot be applied: the KV must be read again.
    expect(reg.kvChanged(ALICE.id, { set: [['x', '1']], delete: [] }, 6)).toBe(false);
    expect(reg.get(ALICE.id)?.presence.kv).toEqual({ note: 'héllo' });
  });

  it("applies a user's first KV write at once, whether or not their empty KV was read from the store", () => {
    const { registry: reg } = registry();
    reg.memberSeen(GUILD_A, ALICE);
    expect(reg.kvChanged(ALICE.id, { set: [['city', 'Lyon']], delete: [] }, 1)).toBe(true);
    expect(reg.get(ALICE.id)?.presence.kv).toEqual({ city: 'Lyon' });
    // The store's read of the KV before that write, answering late, takes nothing back.
    reg.kvLoaded(ALICE.id, {}, 0);
    expect(reg.get(ALICE.id)?.presence.kv).toEqual({ city: 'Lyon' });
    expect(reg.kvRevisionOf(ALICE.id)).toBe(1);
    // A user whose KV is further along than the registry knows is read again.
    const bob = { ...ALICE, id: '80351110224678913', username: 'bob' };
    reg.memberSeen(GUILD_A, bob);
    expect(reg.kvChanged(bob.id, { set: [['x', '1']], delete: [] }, 5)).toBe(false);
  });
});

describe('copies and repeats that change nothing', () => {
  it('a copy from another guild with microsecond timestamps and a numeric application id is a copy', () => {
    const { registry: reg, changes } = registry();
    const start = 1_700_000_000_000;
    const game = (timestampScale: number, applicationId: unknown, shiftMs: number): RawPresence => ({
      status: 'online',
      client_status: { desktop: 'online' },
      activities: [
        {
          type: 0,
          name: 'Game',
          application_id: applicationId,
          created_at: (start + shiftMs) * timestampScale,
          timestamps: { start: (start + shiftMs) * timestampScale },
        } as never,
      ],
    });
    reg.memberSeen(GUILD_A, ALICE, game(1000, 4_194_304, 0));
    reg.memberSeen(GUILD_B, ALICE, game(1000, 4_194_304, 150));
    reg.memberSeen(GUILD_B, { id: ALICE.id }, game(1, '4194304', 300));
    expect(changes.map((change) => change.kind)).toEqual(['monitored']);
  });

  it('a full user object that changes nothing is neither a change nor serialized again', () => {
    const { registry: reg, changes } = registry();
    const user = {
      ...ALICE,
      primary_guild: { identity_guild_id: GUILD_A, identity_enabled: true, tag: 'TAG', badge: 'b1' },
      avatar_decoration_data: { asset: 'a_1', sku_id: '1144058522808614923', expires_at: null },
    };
    reg.memberSeen(GUILD_A, user);
    const stringify = vi.spyOn(JSON, 'stringify');
    try {
      for (let i = 0; i < 5; i++) reg.memberSeen(GUILD_A, { ...user });
      reg.userUpdated({ ...user });
      expect(stringify).not.toHaveBeenCalled();
    } finally {
      stringify.mockRestore();
    }
    expect(changes.map((change) => change.kind)).toEqual(['monitored']);
    reg.userUpdated({ ...user, primary_guild: { ...user.primary_guild, tag: 'NEW' } });
    expect(changes.map((change) => change.kind)).toEqual(['monitored', 'updated']);
    expect(reg.get(ALICE.id)?.presence.discord_user).toMatchObject({
      primary_guild: { tag: 'NEW', badge_url: `${CDN}/guild-tag-badges/${GUILD_A}/b1.png` },
    });
  });
});
