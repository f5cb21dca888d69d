import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RawPresence } from '../../../src/presence/model.js';
import { activitiesFrom } from '../../../src/presence/normalize/activities.js';
import { isGuildCopy } from '../../../src/presence/normalize/guild-copy.js';
import { activityFingerprint } from '../../../src/presence/registry/activity-fingerprint.js';
import { customStatusActivity, gameActivity } from '../../../src/simulator/activities.js';
import { CDN } from '../payloads.js';

const T = 1_700_000_000_000;

function presence(activities: RawPresence['activities']): RawPresence {
  return { status: 'online', client_status: { desktop: 'online' }, activities };
}

function playing(game: string, status: string, start: number): RawPresence['activities'] {
  return [
    customStatusActivity({ text: status }),
    { ...gameActivity({ name: game, applicationId: '123', start }), created_at: start },
  ];
}

describe('activityFingerprint', () => {
  it('is the same for a guild copy as for the current activities, normalized', () => {
    const current = activitiesFrom(playing('Celeste', 'hi 🎧', T), CDN);
    const copy = playing('Celeste', 'hi 🎧', T + 400);
    expect(isGuildCopy(presence(current), presence(copy))).toBe(true);
    expect(activityFingerprint(copy)).toBe(activityFingerprint(current));
  });

  it('differs for another game, another status text or one activity fewer', () => {
    const current = activityFingerprint(activitiesFrom(playing('Celeste', 'day 5', T), CDN));
    expect(activityFingerprint(playing('Hades', 'day 5', T))).not.toBe(current);
    expect(activityFingerprint(playing('Celeste', 'day 6', T))).not.toBe(current);
    expect(activityFingerprint(playing('Celeste', 'day 5', T).slice(1))).not.toBe(current);
  });

  it('is the same for any guild copy of normalized activities', () => {
    const text = fc.option(fc.string({ unit: 'grapheme' }), { nil: undefined });
    const activity = fc.record({
      name: fc.string(),
      type: fc.integer({ min: 0, max: 6 }),
      details: text,
      state: text,
      created_at: fc.integer({ min: T, max: T + 10_000 }),
    });
    fc.assert(
      fc.property(
        fc.array(activity, { maxLength: 4 }),
        fc.integer({ min: -500, max: 500 }),
        (list, jitter) => {
          const raw = list.map((a) => JSON.parse(JSON.stringify(a)));
          const copy = raw.map((a) => ({ ...a, created_at: a.created_at + jitter }));
          const current = activitiesFrom(raw, CDN);
          expect(isGuildCopy(presence(current), presence(copy))).toBe(true);
          expect(activityFingerprint(copy)).toBe(activityFingerprint(current));
        },
      ),
    );
  });
});
