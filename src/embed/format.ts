import type { DiscordUser, MusicSource, Presence } from '../client/types.js';

/** A presence's words, as the element shows them. No DOM here. */

/** Discord's activity types the element treats apart (Discord's ActivityType values). */
export const ACTIVITY_TYPE = { playing: 0, listening: 2, custom: 4 } as const;

const VERBS: Record<number, string> = {
  0: 'Playing',
  1: 'Streaming',
  2: 'Listening to',
  3: 'Watching',
  5: 'Competing in',
};

const STATUS_LABELS: Record<string, string> = {
  online: 'Online',
  idle: 'Idle',
  dnd: 'Do not disturb',
  offline: 'Offline',
};

const SOURCES: Record<MusicSource, string | null> = {
  spotify: 'Spotify',
  youtube_music: 'YouTube Music',
  apple_music: 'Apple Music',
  tidal: 'TIDAL',
  deezer: 'Deezer',
  soundcloud: 'SoundCloud',
  amazon_music: 'Amazon Music',
  other: null,
};

/** What a status is drawn as: Discord's four, and `unknown` for a stale presence. */
export type StatusKind = 'online' | 'idle' | 'dnd' | 'offline' | 'unknown';

/** Stale: Discord has not told the service about the user since a session was lost. */
export function statusOf(presence: Presence): StatusKind {
  if (presence.stale) return 'unknown';
  return presence.discord_status in STATUS_LABELS ? presence.discord_status : 'offline';
}

export function statusLabel(kind: StatusKind): string {
  return STATUS_LABELS[kind] ?? 'Status unknown';
}

export function displayName(user: DiscordUser): string {
  return user.global_name || user.username || user.id;
}

export function activityVerb(type: number): string {
  return VERBS[type] ?? 'Playing';
}

/** "Spotify", or null for music from a player the service names no service for. */
export function musicSourceName(source: MusicSource): string | null {
  return SOURCES[source] ?? null;
}

/** `m:ss`, or `h:mm:ss` from an hour; never negative. */
export function clockText(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
}

/** How far into a track `now` is, 0 to 1. */
export function progressAt(start: number, end: number, now: number): number {
  if (end <= start) return 0;
  return Math.min(1, Math.max(0, (now - start) / (end - start)));
}

/** The custom status as one line: its emoji (`:name:` for a server's own) and its text. */
export function customStatusText(presence: Presence): string | null {
  const custom = presence.custom_status;
  if (!custom) return null;
  const emoji = custom.emoji ? (custom.emoji.id ? `:${custom.emoji.name}:` : custom.emoji.name) : null;
  const text = [emoji, custom.text].filter((part) => part).join(' ');
  return text === '' ? null : text;
}

/** Only a web address opens from the element: anything else a presence carries stays text. */
export function webLink(url: string | null | undefined): string | null {
  return typeof url === 'string' && /^https?:\/\//i.test(url) ? url : null;
}
