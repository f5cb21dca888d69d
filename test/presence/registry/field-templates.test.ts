import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ClientStatus, DiscordStatus, RawPresence } from '../../../src/presence/model.js';
import { CLIENT_PLATFORMS } from '../../../src/presence/normalize/client-status.js';
import { type NormalizeOptions, presenceFields } from '../../../src/presence/normalize/presence.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../../src/presence/normalize/youtube-music.js';
import { FieldTemplates } from '../../../src/presence/registry/field-templates.js';
import { customStatusActivity } from '../../../src/simulator/activities.js';
import { CDN } from '../payloads.js';

const OPTIONS: NormalizeOptions = { cdnUrl: CDN, youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER };
const STATUSES: DiscordStatus[] = ['online', 'idle', 'dnd', 'offline'];

const status = fc.constantFrom<DiscordStatus | 'invisible'>(...STATUSES, 'invisible');
const clientStatus = fc.dictionary(
  fc.constantFrom(...CLIENT_PLATFORMS),
  fc.constantFrom<DiscordStatus>(...STATUSES),
) as fc.Arbitrary<ClientStatus>;
/** Snowflakes of any age, and ids that are none (which count from Discord's epoch). */
const userId = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
  fc.constantFrom('0', '', 'not-an-id', '123456789012345678901'),
);

describe('FieldTemplates', () => {
  it('gives what presenceFields gives, as the same JSON, for any status, platforms and account', () => {
    const templates = new FieldTemplates(OPTIONS);
    fc.assert(
      fc.property(userId, status, clientStatus, (id, s, platforms) => {
        const raw = { status: s, activities: [], client_status: platforms } as unknown as RawPresence;
        const made = templates.of(id, raw, null);
        const expected = presenceFields({ userId: id, raw, profile: null }, OPTIONS);
        expect(made?.fields).toEqual(expected);
        expect(made?.json).toBe(JSON.stringify(expected));
      }),
      { numRuns: 500 },
    );
  });

  it('makes nothing for a presence with an activity or with a profile', () => {
    const templates = new FieldTemplates(OPTIONS);
    const id = '123456789012345678';
    const raw: RawPresence = { status: 'online', activities: [], client_status: { desktop: 'online' } };
    expect(templates.of(id, { ...raw, activities: [customStatusActivity({ text: 'hi' })] }, null)).toBeNull();
    expect(templates.of(id, raw, { banner: null, accent_color: 0xff0000 })).toBeNull();
  });

  it('hands out fields a caller may change without changing the next ones', () => {
    const templates = new FieldTemplates(OPTIONS);
    const raw: RawPresence = { status: 'idle', activities: [], client_status: { mobile: 'idle' } };
    const first = templates.of('123456789012345678', raw, null);
    if (!first) throw new Error('expected fields');
    first.fields.discord_status = 'dnd';
    expect(templates.of('223456789012345678', raw, null)?.fields.discord_status).toBe('idle');
    // The activities are shared between them, and none can change them.
    expect(() => first.fields.activities.push(customStatusActivity({ text: 'hi' }))).toThrow(TypeError);
    expect(templates.of('323456789012345678', raw, null)?.fields.activities).toEqual([]);
  });
});
