import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  parseTrackCardOptions,
  TOP_CARD_DEFAULT_LIMIT,
  TOP_CARD_MAX_LIMIT,
} from '../../src/card/track-options.js';
import {
  PLAY_DAYS_KEPT,
  RECENT_DEFAULT_LIMIT,
  RECENT_MAX_LIMIT,
  TOP_TRACKS_DEFAULT_PERIOD,
  TOP_TRACKS_PERIODS,
} from '../../src/model/history.js';

const cards = readFileSync(new URL('../../docs/cards.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');

/** The track cards' limits, periods and days kept, as docs/cards.md gives them, are the code's. */
describe('docs/cards.md on the track cards', () => {
  it("gives the top card's limit, and the recent card's as /recent's, which it is", () => {
    expect(cards).toContain(
      `\`top.svg\`'s \`limit\` defaults to ${TOP_CARD_DEFAULT_LIMIT} and is clamped to 1–${TOP_CARD_MAX_LIMIT}.`,
    );
    expect(cards).toContain(
      "`recent.svg`'s `limit` is that of `GET /v1/users/:id/recent`, its default and its bounds",
    );
    const limitOf = (query: object) => parseTrackCardOptions('recent', query).options.limit;
    expect([limitOf({}), limitOf({ limit: '1000' }), limitOf({ limit: '0' })]).toEqual([
      RECENT_DEFAULT_LIMIT,
      RECENT_MAX_LIMIT,
      1,
    ]);
  });

  it('names every period, its default, the days each counts and the days kept', () => {
    const names = Object.keys(TOP_TRACKS_PERIODS).map(
      (period) => `\`${period}\`${period === TOP_TRACKS_DEFAULT_PERIOD ? ' (the default)' : ''}`,
    );
    expect(cards).toContain(
      `\`top.svg\`'s \`period\` is ${names.slice(0, -1).join(', ')} or ${names.at(-1)}.`,
    );
    const [week, month] = Object.entries(TOP_TRACKS_PERIODS).flatMap(([period, days]) =>
      days === null ? [] : [[period, days] as const],
    );
    expect(cards).toContain(
      `\`${week?.[0]}\` counts the plays of today and the ${(week?.[1] ?? 0) - 1} days before it, \`${month?.[0]}\` of today and the ${(month?.[1] ?? 0) - 1} days before it.`,
    );
    expect(cards).toContain(`Each track's plays are kept per day for ${PLAY_DAYS_KEPT} days.`);
  });
});
