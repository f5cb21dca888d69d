import {
  RECENT_DEFAULT_LIMIT,
  RECENT_MAX_LIMIT,
  recentLimit,
  TOP_TRACKS_DEFAULT_PERIOD,
  TOP_TRACKS_PERIODS,
  type TopTracksPeriod,
} from '../model/history.js';
import { lastQueryValue } from '../query-value.js';
import { CARD_QUERY_OPTIONS, type CardOptions, parseCardOptions } from './options.js';

/** The two track cards: the latest plays, and the most played tracks. */
export type TrackCardKind = 'recent' | 'top';

/** The top card's `limit`: rows by default and at most. Longer, a card is a page. */
export const TOP_CARD_DEFAULT_LIMIT = 5;
export const TOP_CARD_MAX_LIMIT = 10;

/** The status card's options that the track cards take, as the status card reads them. */
const SHARED_OPTIONS = ['theme', 'bg', 'borderRadius', 'hideProfile', 'hideTimestamp', 'animated'] as const;

/** The top card's `limit`: TOP_CARD_DEFAULT_LIMIT without one, clamped to 1–TOP_CARD_MAX_LIMIT. */
export function topCardLimit(requested: number | undefined): number {
  if (requested === undefined) return TOP_CARD_DEFAULT_LIMIT;
  return Math.min(TOP_CARD_MAX_LIMIT, Math.max(1, Math.trunc(requested)));
}

/** Each card's `limit`: the recent card's is `/recent`'s. */
const LIMITS: Record<TrackCardKind, { byDefault: number; max: number; of: (n?: number) => number }> = {
  recent: { byDefault: RECENT_DEFAULT_LIMIT, max: RECENT_MAX_LIMIT, of: recentLimit },
  top: { byDefault: TOP_CARD_DEFAULT_LIMIT, max: TOP_CARD_MAX_LIMIT, of: topCardLimit },
};

const PERIODS = Object.keys(TOP_TRACKS_PERIODS) as TopTracksPeriod[];

function periodMeaning(period: TopTracksPeriod): string {
  const days = TOP_TRACKS_PERIODS[period];
  return days === null
    ? `${period}: every play counted`
    : `${period}: the plays of today and the ${days - 1} UTC days before it`;
}

/** Every option of a track card, with the description its schema (and so the OpenAPI document) carries. */
export function trackCardQueryOptions(kind: TrackCardKind): Record<string, string> {
  const { byDefault, max } = LIMITS[kind];
  return {
    limit: `how many tracks: an integer, default ${byDefault}, clamped to 1–${max}`,
    ...(kind === 'top'
      ? {
          period: `${PERIODS.map(periodMeaning).join('; ')} (default ${TOP_TRACKS_DEFAULT_PERIOD})`,
        }
      : {}),
    theme: CARD_QUERY_OPTIONS.theme,
    bg: CARD_QUERY_OPTIONS.bg,
    borderRadius: CARD_QUERY_OPTIONS.borderRadius,
    hideProfile: 'hide the avatar and the name, leaving what the card lists: true or false',
    hideTimestamp:
      kind === 'recent'
        ? 'hide when each track was played: true or false'
        : 'hide the play counts: true or false',
    animated: CARD_QUERY_OPTIONS.animated,
  };
}

/** What a track card's query sets, resolved. */
export interface TrackCardOptions {
  /** The status card's options: those of SHARED_OPTIONS as given, the others their defaults. */
  card: CardOptions;
  limit: number;
  /** The top card's; the recent card's is always the default. */
  period: TopTracksPeriod;
}

const INTEGER = /^[+-]?[0-9]{1,15}$/;

/**
 * The options of a track card request: the status card's rules for the options it shares with it, and
 * for `limit` and `period` the same: a value outside its rule falls back to the default, and is listed
 * among the problems. Options of the status card that a track card has no use for are ignored, as
 * unknown ones are.
 */
export function parseTrackCardOptions(
  kind: TrackCardKind,
  query: unknown,
): { options: TrackCardOptions; problems: string[] } {
  const given = typeof query === 'object' && query !== null ? (query as Record<string, unknown>) : {};
  const shared = Object.fromEntries(SHARED_OPTIONS.map((name) => [name, given[name]]));
  const { options: card, problems } = parseCardOptions(shared);

  const { max, of } = LIMITS[kind];
  let limit = of(undefined);
  const rawLimit = lastQueryValue(given, 'limit');
  if (rawLimit !== undefined) {
    if (INTEGER.test(rawLimit)) limit = of(Number(rawLimit));
    else
      problems.push(
        `limit: ${JSON.stringify(rawLimit.slice(0, 40))} is not valid; use an integer (1–${max})`,
      );
  }

  let period = TOP_TRACKS_DEFAULT_PERIOD;
  const rawPeriod = kind === 'top' ? lastQueryValue(given, 'period') : undefined;
  if (rawPeriod !== undefined) {
    const value = rawPeriod.toLowerCase();
    if ((PERIODS as string[]).includes(value)) period = value as TopTracksPeriod;
    else
      problems.push(
        `period: ${JSON.stringify(rawPeriod.slice(0, 40))} is not valid; use ${PERIODS.join(', ')}`,
      );
  }
  return { options: { card, limit, period }, problems };
}
