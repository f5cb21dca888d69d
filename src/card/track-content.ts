import {
  TOP_TRACKS_MIN_PLAYS,
  type TopTrack,
  type TopTracksPeriod,
  type TrackEntry,
  trackIdentity,
} from '../model/history.js';
import type { MusicSource, NowPlaying, PresenceSummary } from '../presence/model.js';
import { type CardContent, cardContent } from './content.js';
import { cleanText } from './escape.js';
import { DEFAULT_CARD_OPTIONS } from './options.js';
import type { TrackCardKind } from './track-options.js';

/**
 * What a track card shows, decided before anything is drawn: whose plays (drawn as the status card draws
 * the user), what the list is, and its rows, their texts cleaned but not yet cut to fit.
 */
export interface TrackCardContent {
  kind: TrackCardKind;
  /** The user as the status card's header has them; for an unknown or malformed id, the card saying so. */
  user: CardContent;
  /** What the list is: "Recently played", "Top tracks · last 7 days"… */
  heading: string;
  rows: TrackRow[];
  /** What the card says in place of rows when it has none. */
  empty: string;
}

export interface TrackRow {
  song: string;
  artist: string | null;
  source: MusicSource;
  artUrl: string | null;
  /** The recent card's: when the play started, and whether it plays now. */
  playedAt: number | null;
  nowPlaying: boolean;
  /** The top card's: the plays counted. */
  plays: number | null;
}

export const RECENT_HEADING = 'Recently played';
const TOP_HEADING = 'Top tracks';
/** The top card's heading after its title, by period. */
export const PERIOD_LABELS: Record<TopTracksPeriod, string> = {
  '7d': 'last 7 days',
  '30d': 'last 30 days',
  all: 'all time',
};

/** A track without a title is kept in the history; its row needs a title all the same. */
const UNTITLED = 'Untitled track';

/** The header of a monitored user: their name, handle, avatar and status, no tag or decoration. */
function userOf(presence: PresenceSummary, cdnUrl: string): CardContent {
  return cardContent(
    presence,
    { ...DEFAULT_CARD_OPTIONS, hideStatus: true, hideTag: true, hideDecoration: true, hideActivity: true },
    cdnUrl,
  );
}

const text = (value: string | null): string | null => {
  if (value === null) return null;
  const cleaned = cleanText(value);
  return cleaned === '' ? null : cleaned;
};

function rowOf(track: NowPlaying): Omit<TrackRow, 'playedAt' | 'nowPlaying' | 'plays'> {
  return {
    song: text(track.song) ?? text(track.album) ?? UNTITLED,
    // Spotify joins several artists with "; "; a reader expects commas.
    artist: text(track.artist)?.replaceAll('; ', ', ') ?? null,
    source: track.source,
    artUrl: track.album_art_url,
  };
}

/**
 * The recent card of a monitored user: the latest plays, the first marked if it is what plays now. A stale
 * presence does not know what plays now: nothing is marked.
 */
export function recentContent(
  presence: PresenceSummary,
  tracks: TrackEntry[],
  cdnUrl: string,
): TrackCardContent {
  const playing = presence.stale === true ? null : presence.now_playing;
  const current = playing === null ? null : trackIdentity(playing);
  return {
    kind: 'recent',
    user: userOf(presence, cdnUrl),
    heading: RECENT_HEADING,
    rows: tracks.map((track, i) => ({
      ...rowOf(track),
      playedAt: track.ts,
      nowPlaying: i === 0 && current !== null && trackIdentity(track) === current,
      plays: null,
    })),
    empty: 'Nothing played yet',
  };
}

/** The top card of a monitored user: the most played tracks of `period`, with their plays. */
export function topContent(
  presence: PresenceSummary,
  tracks: TopTrack[],
  period: TopTracksPeriod,
  cdnUrl: string,
): TrackCardContent {
  const times = TOP_TRACKS_MIN_PLAYS === 2 ? 'twice' : `${TOP_TRACKS_MIN_PLAYS} times`;
  return {
    kind: 'top',
    user: userOf(presence, cdnUrl),
    heading: `${TOP_HEADING} · ${PERIOD_LABELS[period]}`,
    rows: tracks.map((track) => ({
      ...rowOf(track),
      playedAt: null,
      nowPlaying: false,
      plays: track.play_count,
    })),
    empty:
      period === 'all'
        ? `No track played ${times} yet`
        : `No track played ${times} in the ${PERIOD_LABELS[period]}`,
  };
}

/**
 * The card of a user it cannot show (an id that is not one, a user nobody monitors, a private one): the
 * status card's content for them, its message in place of the rows.
 */
export function withoutPlays(
  kind: TrackCardKind,
  user: CardContent,
  period: TopTracksPeriod,
): TrackCardContent {
  return {
    kind,
    user,
    heading: kind === 'recent' ? RECENT_HEADING : `${TOP_HEADING} · ${PERIOD_LABELS[period]}`,
    rows: [],
    empty: user.main?.kind === 'idle' ? user.main.message : '',
  };
}
