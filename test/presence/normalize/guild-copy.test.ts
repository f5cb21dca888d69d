import { describe, expect, it } from 'vitest';
import type { RawPresence } from '../../../src/presence/model.js';
import { GUILD_COPY_TOLERANCE_MS, isGuildCopy } from '../../../src/presence/normalize/guild-copy.js';
import { customStatusActivity, gameActivity } from '../../../src/simulator/activities.js';

const T = 1_700_000_000_000;

function playing(start: number, createdAt = start): RawPresence {
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [
      customStatusActivity({ text: 'hi' }),
      { ...gameActivity({ name: 'Celeste', applicationId: '123', start }), created_at: createdAt },
    ],
  };
}

describe('isGuildCopy', () => {
  it('sees per-guild copies that differ only in timing jitter as one presence', () => {
    expect(isGuildCopy(playing(T), playing(T + 350, T + 410))).toBe(true);
    expect(isGuildCopy(playing(T), playing(T - GUILD_COPY_TOLERANCE_MS))).toBe(true);
  });

  it('sees a start that moved by more than the tolerance as a change', () => {
    expect(isGuildCopy(playing(T), playing(T + GUILD_COPY_TOLERANCE_MS + 1))).toBe(false);
  });

  it('sees any other difference as a change', () => {
    const base = playing(T);
    expect(isGuildCopy(base, { ...base, status: 'idle' })).toBe(false);
    expect(isGuildCopy(base, { ...base, client_status: { desktop: 'online', mobile: 'online' } })).toBe(
      false,
    );
    expect(isGuildCopy(base, { ...base, client_status: { web: 'online' } })).toBe(false);
    expect(isGuildCopy(base, { ...base, activities: base.activities.slice(1) })).toBe(false);
    expect(
      isGuildCopy(base, {
        ...base,
        activities: [customStatusActivity({ text: 'bye' }), ...base.activities.slice(1)],
      }),
    ).toBe(false);
  });

  it('does not mistake a missing timestamp for jitter', () => {
    const base = playing(T);
    const [custom, game] = base.activities;
    if (!custom || !game) throw new Error('fixture');
    const { timestamps: _t, ...noTimestamps } = game;
    expect(isGuildCopy(base, { ...base, activities: [custom, noTimestamps] })).toBe(false);
  });
});
