import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { presenceSchema } from '../../src/http/schemas/presence.js';
import type { DiscordUser, Presence, Profile } from '../../src/presence/model.js';
import { buildPresence, type NormalizeOptions } from '../../src/presence/normalize/presence.js';
import { rawPresenceFrom } from '../../src/presence/normalize/raw.js';
import { mergeUser } from '../../src/presence/normalize/user.js';
import {
  DEFAULT_YOUTUBE_MUSIC_MATCHER,
  PEAR_DESKTOP_APPLICATION_ID,
} from '../../src/presence/normalize/youtube-music.js';
import { type PresenceChange, PresenceRegistry } from '../../src/presence/registry/registry.js';
import { isSnowflake } from '../../src/presence/snowflake.js';

/**
 * Property-based: whatever Discord (or something pretending to be it) sends, normalizing never throws and
 * the presence a client receives is the contract's presence object (src/http/schemas/presence.ts). The
 * payloads are near misses of the real shapes, every field sometimes replaced by arbitrary JSON, so the
 * generator reaches the builders' branches rather than bouncing off the first type check.
 */

const OPTIONS: NormalizeOptions = {
  cdnUrl: 'https://cdn.example',
  youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
};
/** Enough runs to cover the shapes, few enough that the file takes a few seconds. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

const ajv = new Ajv({ allErrors: true, allowUnionTypes: true });
const validatePresence = ajv.compile(presenceSchema);

/** The presence validates, and the JSON a client receives is that same presence. */
function expectContractPresence(presence: Presence, json = JSON.stringify(presence)): void {
  const received = JSON.parse(json) as Presence;
  expect(received).toStrictEqual(JSON.parse(JSON.stringify(presence)));
  const valid = validatePresence(received);
  if (!valid) expect.fail(`${ajv.errorsText(validatePresence.errors)}\n${json.slice(0, 2000)}`);
  expect(isSnowflake(received.discord_user.id)).toBe(true);
  // What the schema cannot say: the flags agree with the objects, and now_playing follows them.
  expect(received.listening_to_spotify).toBe(received.spotify !== null);
  expect(received.listening_to_youtube_music).toBe(received.youtube_music !== null);
  expect(received.listening_to_music).toBe(received.now_playing !== null);
  // Discord's Spotify wins whenever it plays; any other music is there only with some player playing.
  if (received.spotify) expect(received.now_playing?.source).toBe('spotify');
  if (received.youtube_music) expect(received.now_playing).not.toBeNull();
}

// ---- arbitraries ---------------------------------------------------------------------------------------

const anyJson = fc.jsonValue({ maxDepth: 3 });
/**
 * Anything JSON.parse can give (payloads reach us as JSON text): any JSON value, and numbers of every
 * size, -0 and Infinity included (`1e400` parses to it). Not NaN, BigInt or undefined: JSON has none.
 */
const anyValue = fc.oneof(
  { weight: 4, arbitrary: anyJson },
  fc.double({ noNaN: true }),
  fc.constantFrom(1e21, -0, 2 ** 64, Number.MAX_SAFE_INTEGER + 2, Number.POSITIVE_INFINITY),
);
/** The real kind of value, or (one time in three) anything at all. */
const or = <T>(real: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 2, arbitrary: real as fc.Arbitrary<unknown> }, anyValue);

const snowflake = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String);
const status = fc.constantFrom('online', 'idle', 'dnd', 'offline', 'invisible', 'ONLINE', '');
const timestamp = fc.oneof(
  fc.integer({ min: 0, max: 2_000_000_000_000 }),
  fc.integer({ min: 0, max: 2_000_000_000_000 }).map(String),
  fc.constantFrom('9999999999999999', '1e21', '-5', '0x10', 1e21, -1, 1.5, 2 ** 53),
);
const text = fc.oneof(
  fc.string(),
  fc.constantFrom('', ' ', '⏸︎', '⏸ Paused', 'Spotify', 'YouTube Music', '\u0000', '\uD800', '__proto__'),
);
const imageKey = fc.oneof(
  text,
  fc.constantFrom(
    'spotify:ab67616d0000b273',
    'spotify:',
    'mp:external/x/https/a.b/c',
    'mp:',
    'https://example.com/a.png',
    'javascript:alert(1)',
    'twitch:x',
    '565945077491433494',
  ),
);
const detailsUrl = fc.oneof(
  fc.webUrl(),
  fc.constantFrom(
    'https://music.youtube.com/watch?v=lYBUbBu4W08',
    'https://youtu.be/lYBUbBu4W08',
    'https://youtu.be/',
    'https://music.youtube.com/watch?v=%00',
    'not a url',
  ),
);

const activity = fc.record(
  {
    type: or(fc.integer({ min: 0, max: 6 })),
    name: or(fc.constantFrom('Spotify', 'YouTube Music', 'youtube music ', 'Custom Status', 'Celeste')),
    id: or(fc.constantFrom('spotify:1', 'custom', '8a3d1e2f4b5c6d7e')),
    application_id: or(fc.oneof(snowflake, fc.constant(PEAR_DESKTOP_APPLICATION_ID), fc.integer())),
    sync_id: or(text),
    session_id: or(text),
    state: or(text),
    details: or(text),
    details_url: or(detailsUrl),
    party: or(fc.record({ id: or(fc.constantFrom('spotify:1', 'spotify:', 'x')) }, { requiredKeys: [] })),
    assets: or(
      fc.record(
        {
          large_image: or(imageKey),
          large_text: or(text),
          small_image: or(imageKey),
          small_text: or(text),
        },
        { requiredKeys: [] },
      ),
    ),
    timestamps: or(fc.record({ start: or(timestamp), end: or(timestamp) }, { requiredKeys: [] })),
    created_at: or(timestamp),
    emoji: or(
      fc.record(
        { name: or(text), id: or(fc.oneof(snowflake, fc.constant(null))), animated: or(fc.boolean()) },
        { requiredKeys: [] },
      ),
    ),
    flags: or(fc.integer()),
    buttons: or(fc.array(text, { maxLength: 3 })),
    metadata: anyValue,
  },
  { requiredKeys: [] },
);

const clientStatus = fc.record(
  { desktop: or(status), web: or(status), mobile: or(status), embedded: or(status), vr: or(status) },
  { requiredKeys: [] },
);

/** A PRESENCE_UPDATE `d` (or a member listing's presence): near the real shape, or anything. */
const presencePayload = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        user: or(fc.record({ id: or(snowflake) }, { requiredKeys: [] })),
        guild_id: or(snowflake),
        status: or(status),
        activities: or(fc.array(or(activity), { maxLength: 4 })),
        client_status: or(clientStatus),
      },
      { requiredKeys: [] },
    ),
  },
  anyValue,
);

/** A user object: partial, with any field of any type; sometimes no usable id at all. */
const userPayload = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        id: snowflake,
        username: or(text),
        global_name: or(fc.oneof(text, fc.constant(null))),
        avatar: or(fc.oneof(fc.constantFrom('a_7484f82375f47a487f41650f36d30318', '', null), text)),
        discriminator: or(fc.constant('0')),
        public_flags: or(fc.integer()),
        avatar_decoration_data: anyValue,
        primary_guild: anyValue,
        bot: or(fc.boolean()),
      },
      { requiredKeys: ['id'] },
    ),
  },
  fc.record({ id: anyValue, username: or(text) }, { requiredKeys: [] }),
  anyValue,
);

const profile = fc.oneof(
  fc.record({
    banner: or(fc.oneof(fc.constantFrom('a_5c1b1e0cbc4f0b9b2bf83d3e2fcdeb36', 'abc', '', null), text)),
    accent_color: or(fc.oneof(fc.integer({ min: -1, max: 0x1000000 }), fc.constant(null))),
  }),
  fc.constant(null),
);
const kv = fc.dictionary(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ maxLength: 50 }));

// ---- properties ------------------------------------------------------------------------------------------

describe('normalization, fuzzed', () => {
  it('rawPresenceFrom never throws and keeps only what a presence can hold', () => {
    fc.assert(
      fc.property(presencePayload, (payload) => {
        const raw = rawPresenceFrom(payload);
        expect(['online', 'idle', 'dnd', 'offline']).toContain(raw.status);
        for (const entry of raw.activities) {
          expect(typeof entry.name).toBe('string');
          expect(Number.isInteger(entry.type)).toBe(true);
        }
        for (const [platform, value] of Object.entries(raw.client_status)) {
          expect(['desktop', 'web', 'mobile', 'embedded', 'vr']).toContain(platform);
          expect(['online', 'idle', 'dnd']).toContain(value);
        }
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('buildPresence gives a contract presence for any payload, user and profile', () => {
    fc.assert(
      fc.property(
        snowflake,
        userPayload,
        presencePayload,
        profile,
        kv,
        (id, user, payload, known, values) => {
          // The registry knows the user by a valid id, whatever the partial adds.
          const merged = mergeUser({ id }, { ...(user as object), id } as DiscordUser);
          const presence = buildPresence(
            {
              user: merged,
              raw: rawPresenceFrom(payload),
              profile: known as Profile | null,
              freshness: { observed_at: 1_763_800_000_000, stale: false },
              kv: values,
            },
            OPTIONS,
          );
          expectContractPresence(presence);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('the registry takes any sequence of gateway events without throwing, and serves contract presences', () => {
    const guild = fc.constantFrom('100000000000000001', '100000000000000002');
    const userId = fc.constantFrom('80351110224678912', '80351110224678913');
    const event = fc.oneof(
      // PRESENCE_UPDATE, as the ingest hands it over: the payload's user, its normalized presence.
      fc.record({ kind: fc.constant('presence' as const), guild, payload: presencePayload }),
      // GUILD_MEMBER_ADD / UPDATE and listings: a user object, with or without a presence.
      fc.record({ kind: fc.constant('member' as const), guild, user: userPayload, payload: presencePayload }),
      // A member chunk's members, held as they came until rendered.
      fc.record({ kind: fc.constant('listed' as const), guild, user: userPayload, payload: presencePayload }),
      fc.record({ kind: fc.constant('renderPending' as const), max: fc.nat(2) }),
      fc.record({ kind: fc.constant('user' as const), user: userPayload }),
      fc.record({ kind: fc.constant('profile' as const), userId, profile }),
      fc.record({ kind: fc.constant('kv' as const), userId, kv, revision: fc.nat(5) }),
      fc.record({ kind: fc.constant('remove' as const), guild, userId }),
      // A shard's session lost, a new one sending the guild again, stale users rendered in batches.
      fc.record({ kind: fc.constant('lost' as const), guild }),
      fc.record({ kind: fc.constant('relist' as const), guild }),
      fc.record({ kind: fc.constant('renderStale' as const), max: fc.nat(2) }),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 12 }), (events) => {
        const registry = new PresenceRegistry(OPTIONS);
        const changes: PresenceChange[] = [];
        registry.onChange((change) => changes.push(change));
        for (const e of events) {
          switch (e.kind) {
            case 'presence': {
              const d = e.payload as { user?: DiscordUser; guild_id?: string } | null;
              registry.memberSeen(
                e.guild,
                (d as { user?: DiscordUser })?.user as DiscordUser,
                rawPresenceFrom(d),
              );
              break;
            }
            case 'member':
              registry.memberSeen(e.guild, e.user as DiscordUser, rawPresenceFrom(e.payload));
              break;
            case 'listed':
              registry.memberListed(e.guild, e.user as DiscordUser, rawPresenceFrom(e.payload));
              break;
            case 'renderPending':
              registry.renderPending(e.max);
              break;
            case 'user':
              registry.userUpdated(e.user as DiscordUser);
              break;
            case 'profile':
              registry.profileFetched(e.userId, e.profile as Profile);
              break;
            case 'kv':
              registry.kvLoaded(e.userId, e.kv, e.revision);
              break;
            case 'remove':
              registry.memberRemoved(e.guild, e.userId);
              break;
            case 'lost':
              registry.guildsLost([e.guild]);
              break;
            case 'relist':
              registry.beginGuildSync(e.guild);
              break;
            case 'renderStale':
              registry.renderStale(e.max);
              break;
          }
        }
        let stale = 0;
        for (const [id, snapshot] of registry.snapshots()) {
          if (snapshot.presence.stale) stale++;
          expect(registry.get(id)).toBe(snapshot);
          // Served by id: only users with a real id, each under its own.
          expect(isSnowflake(id)).toBe(true);
          expect(snapshot.presence.discord_user.id).toBe(id);
          const body = JSON.parse(snapshot.body.toString()) as { success: boolean; data: unknown };
          expect(body.success).toBe(true);
          expectContractPresence(snapshot.presence, JSON.stringify(body.data));
        }
        expect(registry.pendingCount).toBe(0);
        // Every read renders what its presence lags behind: each stale user says so.
        expect(registry.staleWaiting).toBe(0);
        expect(stale).toBe(registry.staleCount);
        for (const change of changes) {
          const snapshot = change.kind === 'unmonitored' ? change.previous : change.current;
          expectContractPresence(snapshot.presence, snapshot.json);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('a guild copy of a fuzzed presence is no change', () => {
    // The registry dedupes per-guild copies: the same payload twice must never emit twice.
    fc.assert(
      fc.property(snowflake, presencePayload, (id, payload) => {
        const registry = new PresenceRegistry(OPTIONS);
        const changes: PresenceChange[] = [];
        registry.onChange((change) => changes.push(change));
        registry.memberSeen('100000000000000001', { id }, rawPresenceFrom(payload));
        registry.memberSeen('100000000000000002', { id }, rawPresenceFrom(payload));
        expect(changes.map((change) => change.kind)).toEqual(isSnowflake(id) ? ['monitored'] : []);
      }),
      { numRuns: RUNS },
    );
  });
});
