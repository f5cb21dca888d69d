import { ActivityType } from 'discord-api-types/v10';
import { timestampsFrom } from './timestamps.js';
import { field, textOrNull } from './values.js';

/**
 * What music players write where something else is expected: markers and their own names where the album
 * goes, prefixes before the artist or title, pages being browsed published as activities. Each was found
 * in a player's source; docs/music.md lists them.
 */

/**
 * What players put in `assets.large_text` (the album) while paused: Pear Desktop sends "⏸︎" (U+23F8 with
 * the text variation selector U+FE0E); others send the emoji form or a word. Compared after removing
 * variation selectors, collapsing white space and lower-casing.
 */
export const PAUSE_MARKERS: readonly string[] = ['⏸', 'paused', '⏸ paused', 'paused ⏸'];

const PAUSE_MARKER_SET: ReadonlySet<string> = new Set(PAUSE_MARKERS);

/** True when `text` is a paused player's marker rather than an album name. */
export function isPauseMarker(text: string): boolean {
  const normalized = text
    .replace(/[\uFE0E\uFE0F]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
  return PAUSE_MARKER_SET.has(normalized);
}

/**
 * Text players put in `assets.large_text` when there is no album: their own name and version (PreMiD's
 * "PreMiD • v2.7.4", TIDAL Hi-Fi's "TIDAL Hi-Fi 5.16.0"). Matched on the start, lower-cased.
 */
const PLAYER_DEFAULT_TEXTS: readonly RegExp[] = [/^premid\b/i, /^tidal hi-fi\b/i];
/** Players write "by Artist" in `state` (Cider, Amazon-Music-Discord-RPC, many others). */
export const ARTIST_PREFIX = /^by\s+/i;
/**
 * TIDAL Hi-Fi writes "Listening to Title" in `details`. Only there: "Listening to You" is also a song.
 */
export const TITLE_PREFIX = /^listening to\s+/i;
export const TITLE_PREFIXED_APPLICATIONS: ReadonlySet<string> = new Set(['833617820704440341']);
/** A page being browsed, not a track: "Browsing Home", "Browsing Playlist", "Browsing Tidal". */
const BROWSING = /^browsing\b/i;

/**
 * Whether an activity from a music player shows a track. Listening activities do, unless they name a page
 * being browsed with nothing playing; a Playing activity (players that cannot set Listening) only with a
 * start or an end: PreMiD, for one, publishes Playing "Browsing Home" under its YouTube Music application.
 */
export function showsTrack(activity: unknown): boolean {
  const type = field(activity, 'type');
  if (type === ActivityType.Playing) {
    const { start, end } = timestampsFrom(activity);
    return start !== null || end !== null;
  }
  return type === ActivityType.Listening && !isBrowsing(activity);
}

/** True when `text` is a player's own name and version rather than an album name. */
export function isPlayerDefaultText(text: string): boolean {
  return PLAYER_DEFAULT_TEXTS.some((pattern) => pattern.test(text.trim()));
}

/** The album text, or null for a pause marker or a player's own name in its place. */
export function albumFrom(largeText: string | null): string | null {
  if (largeText === null || isPauseMarker(largeText) || isPlayerDefaultText(largeText)) return null;
  return largeText;
}

/** A page being browsed with nothing playing: details naming it, no timestamps. */
export function isBrowsing(activity: unknown): boolean {
  const { start, end } = timestampsFrom(activity);
  const details = textOrNull(field(activity, 'details'));
  return start === null && end === null && details !== null && BROWSING.test(details.trim());
}
