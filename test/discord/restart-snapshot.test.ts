import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot } from '../../src/discord/restart-snapshot.js';
import type { DiscordUser, RawPresence } from '../../src/presence/model.js';
import { DEFAULT_PRIVACY, type PrivacySettings } from '../../src/presence/privacy.js';
import { type PresenceChange, PresenceRegistry } from '../../src/presence/registry/registry.js';
import { gameActivity, spotifyActivity } from '../../src/simulator/activities.js';

/**
 * What a process saves to resume its gateway sessions after a restart: the next process, taking it back,
 * serves every presence exactly as the previous one did, saying when Discord last reported it.
 */

const CDN = 'https://cdn.discordapp.com';
const GUILD_A = '100000000000000001';
const GUILD_B = '100000000000000002';
const T0 = 1_780_000_000_000;
const SETTINGS = '{"shardCount":null}';
const ALICE: DiscordUser = {
  id: '80351110224678912',
  username: 'alice',
  discriminator: '0',
  avatar: 'a_0123456789abcdef0123456789abcdef',
  global_name: 'Alice',
};
const BOB: DiscordUser = { id: '80351110224678913', username: 'bob', discriminator: '0' };
const CAROL: DiscordUser = { id: '80351110224678914', username: 'carol', discriminator: '0' };
const DAVE: DiscordUser = { id: '80351110224678915', username: 'dave', discriminator: '0' };

const listening: RawPresence = {
  status: 'online',
  client_status: { desktop: 'online', mobile: 'idle' },
  activities: [
    spotifyActivity({
      song: 'one',
      artists: ['Artist'],
      album: 'Album',
      imageId: 'ab67616d0000b273',
      trackId: 'track-one',
      start: T0,
      end: T0 + 200_000,
      createdAt: T0,
    }),
  ],
};
const playing: RawPresence = {
  status: 'dnd',
  client_status: { desktop: 'dnd' },
  activities: [gameActivity({ name: 'A Game', applicationId: '383226320970055681', createdAt: T0 })],
};

function registry(clock: { now: number }, settings = new Map<string, PrivacySettings>()) {
  return new PresenceRegistry({
    cdnUrl: CDN,
    youtubeMusic: { applicationIds: new Set(), names: new Set() },
    now: () => clock.now,
    privacy: (userId) => settings.get(userId),
  });
}

/** Every user's body as served, each rendered first. */
function bodies(reg: PresenceRegistry): Map<string, string> {
  const served = new Map<string, string>();
  for (const userId of [...reg.userIds()].sort()) {
    served.set(userId, String(reg.body(userId)?.body));
  }
  return served;
}

async function roundTrip(
  reg: PresenceRegistry,
  clock: { now: number },
  settings?: Map<string, PrivacySettings>,
) {
  const { bytes } = await encodeSnapshot({
    settings: SETTINGS,
    sequences: () => new Map([[0, 7]]),
    optedIn: [BOB.id],
    guildShards: [
      [GUILD_A, 0],
      [GUILD_B, 1],
    ],
    roleHolders: [[ALICE.id, [GUILD_A]]],
    presences: reg.saved(),
  });
  const snapshot = await decodeSnapshot(bytes);
  if (!snapshot) throw new Error('the snapshot did not read back');
  const next = registry(clock, settings);
  for (const saved of snapshot.presences) next.restore(saved);
  return { next, snapshot, bytes };
}

describe('a snapshot of the presences held', () => {
  it('is taken back whole: every body as served, the guilds, the freshness and the stale flag', async () => {
    const clock = { now: T0 };
    const reg = registry(clock);
    reg.memberSeen(GUILD_A, ALICE, listening);
    clock.now += 1_000;
    reg.memberSeen(GUILD_B, ALICE, listening);
    reg.memberSeen(GUILD_A, BOB, playing);
    // Pending, never rendered: saved as it is kept.
    reg.memberListed(GUILD_B, CAROL, listening);
    reg.memberSeen(GUILD_B, DAVE, playing);
    // B's shard lost its session: Carol and Dave, seen through B alone, are stale.
    reg.guildsLost([GUILD_B]);
    clock.now += 60_000;
    const before = bodies(reg);

    const { next, snapshot } = await roundTrip(reg, clock);

    expect(snapshot.guildShards).toEqual([
      [GUILD_A, 0],
      [GUILD_B, 1],
    ]);
    expect(snapshot.roleHolders).toEqual([[ALICE.id, [GUILD_A]]]);
    expect(snapshot.settings).toBe(SETTINGS);
    expect(snapshot.optedIn).toEqual([BOB.id]);
    expect(snapshot.presences.map((presence) => [...presence.sequences])).toEqual(
      snapshot.presences.map(() => [[0, 7]]),
    );
    expect(next.size).toBe(4);
    expect(next.memberCount(GUILD_A)).toBe(2);
    expect(next.memberCount(GUILD_B)).toBe(3);
    expect(bodies(next)).toEqual(before);
    expect(next.get(ALICE.id)?.summary()).toMatchObject({ observed_at: T0, stale: false });
    expect(next.get(CAROL.id)?.summary()).toMatchObject({ observed_at: T0 + 1_000, stale: true });
    expect(next.staleCount).toBe(2);
  });

  it('keeps what a privacy setting hides, so the presence is the same once it is shown again', async () => {
    const clock = { now: T0 };
    const settings = new Map<string, PrivacySettings>([
      [ALICE.id, { ...DEFAULT_PRIVACY, hide_music_sources: ['spotify'], hide_activity_types: ['listening'] }],
    ]);
    const reg = registry(clock, settings);
    reg.memberSeen(GUILD_A, ALICE, listening);
    const hidden = bodies(reg);
    const { next } = await roundTrip(reg, clock, settings);
    expect(bodies(next)).toEqual(hidden);
    expect(String(next.body(ALICE.id)?.body)).not.toContain('track-one');

    settings.delete(ALICE.id);
    next.privacyChanged(ALICE.id);
    expect(String(next.body(ALICE.id)?.body)).toContain('track-one');
  });

  it('announces each user taken back as monitored, at the moment Discord last reported them', async () => {
    const clock = { now: T0 };
    const reg = registry(clock);
    reg.memberSeen(GUILD_A, BOB, playing);
    clock.now += 30_000;
    const { next } = await roundTrip(reg, clock);
    const changes: PresenceChange[] = [];
    next.onChange((change) => changes.push(change));
    next.get(BOB.id);
    expect(changes).toMatchObject([{ kind: 'monitored', userId: BOB.id, at: T0, wasPending: true }]);
  });

  it('leaves a user monitored already as they are', async () => {
    const clock = { now: T0 };
    const reg = registry(clock);
    reg.memberSeen(GUILD_A, BOB, playing);
    const { bytes } = await encodeSnapshot({
      settings: SETTINGS,
      sequences: () => new Map(),
      optedIn: [],
      guildShards: [],
      roleHolders: [],
      presences: reg.saved(),
    });
    const next = registry(clock);
    next.memberSeen(GUILD_B, BOB, listening);
    const served = String(next.body(BOB.id)?.body);
    for (const saved of (await decodeSnapshot(bytes))?.presences ?? []) next.restore(saved);
    expect(String(next.body(BOB.id)?.body)).toBe(served);
    expect(next.memberCount(GUILD_A)).toBe(0);
  });
});

describe('a saved snapshot that is not one', () => {
  const header = JSON.stringify({ v: 2, settings: SETTINGS, guilds: [[GUILD_A, 0]], roles: [], optedIn: [] });

  it('is not read when not gzip, of another version, or without its header', async () => {
    expect(await decodeSnapshot(Buffer.from('not gzip'))).toBeNull();
    expect(
      await decodeSnapshot(
        gzipSync(JSON.stringify({ v: 1, settings: '', guilds: [], roles: [], optedIn: [] })),
      ),
    ).toBeNull();
    expect(
      await decodeSnapshot(gzipSync(`${JSON.stringify({ v: 2, guilds: [], roles: [], optedIn: [] })}\n`)),
    ).toBeNull();
    expect(await decodeSnapshot(gzipSync('[1,2,3]\n'))).toBeNull();
    expect(await decodeSnapshot(gzipSync(''))).toBeNull();
  });

  it('skips the users whose lines are not well formed and keeps the rest, with the sequences before them', async () => {
    const text = JSON.stringify([T0, BOB, playing]);
    const lines = [
      header,
      'not a line',
      `not-a-snowflake\t${GUILD_A}\t0\t${text}`,
      `${BOB.id}\t\t0\t${text}`,
      `${BOB.id}\tx\t0\t${text}`,
      `${BOB.id}\t${GUILD_A}\t0\t{"not":"a list"}`,
      `${BOB.id}\t${GUILD_A}\t0`,
      `${BOB.id}\t${GUILD_A},${GUILD_B}\t1\t${text}`,
      '#[[0,12],[1,4]]',
      `${CAROL.id}\t${GUILD_A}\t0\t${text}`,
    ];
    const snapshot = await decodeSnapshot(gzipSync(`${lines.join('\n')}\n`));
    expect(snapshot?.guildShards).toEqual([[GUILD_A, 0]]);
    expect(snapshot?.presences).toEqual([
      { userId: BOB.id, guildIds: [GUILD_A, GUILD_B], stale: true, text, sequences: new Map() },
      {
        userId: CAROL.id,
        guildIds: [GUILD_A],
        stale: false,
        text,
        sequences: new Map([
          [0, 12],
          [1, 4],
        ]),
      },
    ]);
  });
});
