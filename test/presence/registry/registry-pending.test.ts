import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DiscordUser, RawPresence } from '../../../src/presence/model.js';
import { type PresenceChange, PresenceRegistry } from '../../../src/presence/registry/registry.js';
import { LARGE_BODY_BYTES } from '../../../src/presence/registry/snapshot.js';
import { customStatusActivity, spotifyActivity } from '../../../src/simulator/activities.js';

const [GUILD_A, GUILD_B] = ['100000000000000001', '100000000000000002'];
const member = (n: number, extra: Partial<DiscordUser> = {}): DiscordUser => ({
  id: String(80351110224678912n + BigInt(n)),
  username: `member${n}`,
  ...extra,
});
const ALICE = member(0, { global_name: 'Ålice 🎧', avatar: null });
const BOB = member(1, { avatar: 'a_0123456789abcdef' });
const CAROL = member(2);

function registry(clock = { now: 1_000 }): { registry: PresenceRegistry; changes: PresenceChange[] } {
  const reg = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: { applicationIds: new Set(), names: new Set() },
    now: () => clock.now,
  });
  const changes: PresenceChange[] = [];
  reg.onChange((change) => changes.push(change));
  return { registry: reg, changes };
}

/** A custom status and a song on Spotify, on two devices. */
function listening(song: string): RawPresence {
  const start = 1_700_000_000_000;
  const spotify = { song, artists: ['Artist'], album: 'Album', imageId: 'ab67616d0000b273', trackId: song };
  return {
    status: 'online',
    client_status: { desktop: 'online', mobile: 'idle' },
    activities: [
      customStatusActivity({ text: 'héllo 🎧' }),
      spotifyActivity({ ...spotify, start, end: start + 200_000, createdAt: start }),
    ],
  };
}

const OFFLINE: RawPresence = { status: 'offline', client_status: {}, activities: [] };

describe('pending members, from a listing', () => {
  it('are monitored and served at once, and announced when first asked for, with the moment they were listed', () => {
    const clock = { now: 1_000 };
    const { registry: reg, changes } = registry(clock);
    reg.memberListed(GUILD_A, ALICE, listening('Señorita'));
    expect(reg.size).toBe(1);
    expect(reg.isMonitored(ALICE.id)).toBe(true);
    expect(reg.memberCount(GUILD_A)).toBe(1);
    expect(reg.pendingCount).toBe(1);
    expect(changes).toHaveLength(0);

    clock.now = 9_000;
    const read = reg.body(ALICE.id);
    expect(changes.map((change) => [change.kind, change.at])).toEqual([['monitored', 1_000]]);
    expect(reg.pendingCount).toBe(0);
    const snapshot = reg.get(ALICE.id);
    expect(read?.body).toBe(snapshot?.body);
    expect(snapshot?.version).toBe(1);
    expect(snapshot?.presence.now_playing?.song).toBe('Señorita');
    expect(snapshot?.presence.discord_user.global_name).toBe('Ålice 🎧');
    // Asked again, nothing more is announced.
    reg.get(ALICE.id);
    expect(changes).toHaveLength(1);
  });

  it('keep the same bytes, and announce the same presence, as a member seen and rendered at once', () => {
    const user = fc.record(
      {
        id: fc.constant(ALICE.id),
        // Any UTF-16, lone surrogates included: the payload is kept as UTF-8 until rendered.
        username: fc.string({ unit: 'binary' }),
        global_name: fc.option(fc.string({ unit: 'grapheme' })),
        avatar: fc.option(fc.constantFrom('0123456789abcdef', 'a_0123456789abcdef')),
        bot: fc.boolean(),
      },
      { requiredKeys: ['id', 'username'] },
    );
    const raw = fc.record({
      status: fc.constantFrom('online', 'idle', 'dnd', 'offline'),
      client_status: fc.constantFrom({}, { desktop: 'online' }, { mobile: 'dnd', web: 'idle' }),
      activities: fc.array(
        fc.oneof(
          fc.string({ unit: 'binary' }).map((text) => customStatusActivity({ text })),
          fc.string({ minLength: 1 }).map((song) => listening(song).activities[1]),
        ),
        { maxLength: 2 },
      ),
    }) as fc.Arbitrary<RawPresence>;
    fc.assert(
      fc.property(user, raw, (member, presence) => {
        const eager = registry();
        const pending = registry();
        eager.registry.memberSeen(GUILD_A, member as DiscordUser, presence);
        pending.registry.memberListed(GUILD_A, member as DiscordUser, presence);
        expect(pending.registry.renderPending(10)).toBe(0);
        expect(pending.registry.get(ALICE.id)?.body).toBe(eager.registry.get(ALICE.id)?.body);
        const [announced] = pending.changes;
        const [seen] = eager.changes;
        expect(announced?.kind).toBe('monitored');
        if (announced?.kind !== 'monitored' || seen?.kind !== 'monitored') return;
        expect(announced.current.summary()).toEqual(seen.current.summary());
        expect(announced.at).toBe(seen.at);
      }),
    );
  });

  it('are rendered by renderPending in the order they were listed, so many at a time', () => {
    const { registry: reg, changes } = registry();
    reg.memberListed(GUILD_A, ALICE, OFFLINE);
    reg.memberListed(GUILD_A, BOB, listening('Nude'));
    reg.memberListed(GUILD_A, CAROL, OFFLINE);
    expect(reg.renderPending(2)).toBe(1);
    expect(changes.map((change) => change.userId)).toEqual([ALICE.id, BOB.id]);
    // One asked for meanwhile is not announced twice.
    reg.get(CAROL.id);
    expect(reg.renderPending(2)).toBe(0);
    expect(changes.map((change) => change.userId)).toEqual([ALICE.id, BOB.id, CAROL.id]);
    expect(reg.renderPending(2)).toBe(0);
    expect(changes).toHaveLength(3);
  });

  it('take what is said of them before they are rendered, announced first', () => {
    const { registry: reg, changes } = registry();
    reg.memberListed(GUILD_A, ALICE, OFFLINE);
    reg.memberListed(GUILD_A, BOB, OFFLINE);
    reg.memberListed(GUILD_A, CAROL, OFFLINE);
    // The same member listed again by another guild, with a presence now.
    reg.memberListed(GUILD_B, ALICE, listening('Señorita'));
    reg.kvLoaded(BOB.id, { theme: 'dark' }, 3);
    reg.userUpdated({ id: CAROL.id, username: 'caroline' });
    expect(
      changes.map((change) => [
        change.kind,
        change.userId,
        change.kind !== 'unmonitored' && change.current.version,
      ]),
    ).toEqual([
      ['monitored', ALICE.id, 1],
      ['updated', ALICE.id, 2],
      ['monitored', BOB.id, 1],
      ['updated', BOB.id, 2],
      ['monitored', CAROL.id, 1],
      ['updated', CAROL.id, 2],
    ]);
    expect(reg.pendingCount).toBe(0);
    expect(reg.memberCount(GUILD_B)).toBe(1);
    expect(reg.get(ALICE.id)?.presence.now_playing?.song).toBe('Señorita');
    expect(reg.get(BOB.id)?.presence.kv).toEqual({ theme: 'dark' });
    expect(reg.kvRevisionOf(BOB.id)).toBe(3);
    expect(reg.get(CAROL.id)?.presence.discord_user.username).toBe('caroline');
  });

  it('take a stored profile while they wait, and are rendered with it in their first version', () => {
    const { registry: reg, changes } = registry();
    reg.memberListed(GUILD_A, ALICE, OFFLINE);
    reg.memberListed(GUILD_A, BOB, OFFLINE);
    reg.profileFetched(ALICE.id, { banner: 'a_0123456789abcdef', accent_color: 0x5865f2 });
    reg.profileFetched(BOB.id, { banner: null, accent_color: null });
    expect(changes).toHaveLength(0);
    expect(reg.pendingCount).toBe(2);
    expect(reg.renderPending(10)).toBe(0);
    const [alice, bob] = changes;
    expect(alice?.kind === 'monitored' && alice.current.version).toBe(1);
    expect(alice?.kind === 'monitored' && alice.current.summary()).toMatchObject({
      banner: 'a_0123456789abcdef',
      accent_color: 0x5865f2,
    });
    expect(bob?.kind === 'monitored' && bob.current.summary()).toMatchObject({
      banner: null,
      accent_color: null,
    });
    // Once rendered, a profile is a change like any other.
    reg.profileFetched(BOB.id, { banner: '0123456789abcdef', accent_color: null });
    expect(changes.map((change) => change.kind)).toEqual(['monitored', 'monitored', 'updated']);
  });

  it('who leave before they are rendered are announced, then let go', () => {
    const { registry: reg, changes } = registry();
    reg.memberListed(GUILD_A, ALICE, OFFLINE);
    reg.memberListed(GUILD_A, BOB, OFFLINE);
    reg.memberListed(GUILD_A, CAROL, OFFLINE);
    reg.memberRemoved(GUILD_A, ALICE.id);
    reg.guildRemoved(GUILD_A);
    expect(changes.map((change) => [change.kind, change.userId])).toEqual([
      ['monitored', ALICE.id],
      ['unmonitored', ALICE.id],
      ['monitored', BOB.id],
      ['unmonitored', BOB.id],
      ['monitored', CAROL.id],
      ['unmonitored', CAROL.id],
    ]);
    expect(reg.size).toBe(0);
    expect(reg.pendingCount).toBe(0);
    expect(reg.renderPending(10)).toBe(0);
    expect(changes).toHaveLength(6);
  });

  it('a re-listing forgets, announced first, a pending member it does not list again', () => {
    const { registry: reg, changes } = registry();
    reg.beginGuildSync(GUILD_A);
    reg.memberListed(GUILD_A, ALICE, OFFLINE);
    reg.memberListed(GUILD_A, BOB, OFFLINE);
    reg.endGuildSync(GUILD_A);
    reg.beginGuildSync(GUILD_A);
    reg.memberListed(GUILD_A, BOB, OFFLINE);
    reg.endGuildSync(GUILD_A);
    expect(reg.isMonitored(ALICE.id)).toBe(false);
    expect(reg.isMonitored(BOB.id)).toBe(true);
    expect(changes.map((change) => [change.kind, change.userId])).toEqual([
      ['monitored', BOB.id],
      ['monitored', ALICE.id],
      ['unmonitored', ALICE.id],
    ]);
  });

  it('one that cannot be rendered is shown by its id alone, offline, and every listener hears of each', () => {
    // A normalization that fails on one application: what rendering at once would have thrown.
    const failing = new Set<string>();
    failing.has = (id: string) => {
      if (id === '999') throw new Error('normalization failed');
      return false;
    };
    const reg = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: { applicationIds: failing, names: new Set() },
    });
    const first: string[] = [];
    const second: string[] = [];
    reg.onChange((change) => {
      first.push(change.userId);
      if (change.userId === BOB.id) throw new Error('listener failed');
    });
    reg.onChange((change) => second.push(change.userId));
    const game = {
      type: 0,
      name: 'Game',
      application_id: '999',
      created_at: 1,
    } as RawPresence['activities'][number];
    reg.memberListed(GUILD_A, ALICE, {
      status: 'online',
      client_status: { desktop: 'online' },
      activities: [game],
    });
    reg.memberListed(GUILD_A, BOB, OFFLINE);
    reg.memberListed(GUILD_A, CAROL, OFFLINE);
    expect(reg.get(ALICE.id)?.presence).toMatchObject({
      discord_user: { id: ALICE.id },
      discord_status: 'offline',
      activities: [],
    });
    // The first listener's failure reaches the caller, after the second has heard it too.
    expect(() => reg.renderPending(10)).toThrow('listener failed');
    expect(reg.renderPending(10)).toBe(0);
    expect(first).toEqual([ALICE.id, BOB.id, CAROL.id]);
    expect(second).toEqual([ALICE.id, BOB.id, CAROL.id]);
    expect(reg.get(BOB.id)?.version).toBe(1);
  });

  it('whose payload is large are rendered at once', () => {
    const { registry: reg, changes } = registry();
    const long = 'x'.repeat(LARGE_BODY_BYTES);
    reg.memberListed(GUILD_A, ALICE, {
      ...OFFLINE,
      status: 'online',
      activities: [customStatusActivity({ text: long })],
    });
    expect(changes.map((change) => change.kind)).toEqual(['monitored']);
    expect(reg.pendingCount).toBe(0);
  });

  it('without a usable id are not kept', () => {
    const { registry: reg, changes } = registry();
    reg.memberListed(GUILD_A, { id: 'not a snowflake' } as DiscordUser, OFFLINE);
    reg.memberListed(GUILD_A, undefined as unknown as DiscordUser, OFFLINE);
    expect(reg.size).toBe(0);
    expect(reg.renderPending(10)).toBe(0);
    expect(changes).toHaveLength(0);
  });
});
