import type { DiscordStatus, MusicSource, NowPlaying } from '../presence/model.js';
import { GUILD_COPY_TOLERANCE_MS } from '../presence/normalize/guild-copy.js';
import { statusFrom } from '../presence/normalize/raw.js';

/** Each history list keeps this many of the most recent entries. */
export const HISTORY_LIMIT = 100;
/** A track counts in top tracks from this many plays. */
export const TOP_TRACKS_MIN_PLAYS = 2;
export const TOP_TRACKS_DEFAULT_LIMIT = 10;
export const TOP_TRACKS_MAX_LIMIT = 50;
/** `/recent`'s `limit`: how many of the latest plays, by default and at most. */
export const RECENT_DEFAULT_LIMIT = 5;
export const RECENT_MAX_LIMIT = 10;
/**
 * Top tracks' `period`: the plays of today and the UTC days before it, this many days in all; `all`:
 * every play counted.
 */
export const TOP_TRACKS_PERIODS = { '7d': 7, '30d': 30, all: null } as const;
export type TopTracksPeriod = keyof typeof TOP_TRACKS_PERIODS;
export const TOP_TRACKS_DEFAULT_PERIOD: TopTracksPeriod = 'all';
/** UTC days whose plays a store counts per track, for the longest period. */
export const PLAY_DAYS_KEPT = TOP_TRACKS_PERIODS['30d'];
/** Distinct tracks whose play counts one user keeps; past it the least played (then oldest) go. */
export const TRACKED_TRACKS_PER_USER = 1000;
/**
 * A replay is the same track starting again at or after its previous play's end. Discord's timestamps
 * wobble by the same jitter as per-guild copies, so "at" allows that much.
 */
export const REPLAY_TOLERANCE_MS = GUILD_COPY_TOLERANCE_MS;
/**
 * After a pause, the start moves past the old end once the pause outlasts the rest of the song, so a
 * resume looks like a replay. After a pause a replay must also be seen starting over: within this long of
 * its start.
 */
export const RESUME_FROM_TOP_MS = 10_000;
const DAY_MS = 86_400_000;

export interface StatusEntry {
  status: DiscordStatus;
  ts: number;
}

export type TrackEntry = NowPlaying & { ts: number };

/** A track of the top-tracks list: its latest metadata, when it was last played, and how often. */
export type TopTrack = NowPlaying & { last_played: number; play_count: number };

/** The last play, as the rules need it to tell a replay from a seek or a pause. */
export interface LastPlay {
  identity: string;
  start: number | null;
  end: number | null;
  /** Seen paused or gone since its last timestamps: the next timestamps may be a resume. */
  paused: boolean;
}

/** What the rules remember of a user between observations. */
export interface HistoryMemory {
  status: DiscordStatus | null;
  play: LastPlay | null;
  /**
   * This process has seen the user's status since it started or since the user left: `status` is then
   * also their live status, the one a change to offline comes from (see `Observation.previousLiveStatus`).
   */
  live: boolean;
}

export const EMPTY_MEMORY: HistoryMemory = Object.freeze({ status: null, play: null, live: false });

/**
 * Most users play nothing, and what the rules remember of them is their status alone: one shared, frozen
 * memory per status (seen live or not), rather than an object per user for each of a million users.
 */
const STATUS_ONLY = (live: boolean): Record<DiscordStatus, HistoryMemory> => ({
  online: Object.freeze({ status: 'online', play: null, live }),
  idle: Object.freeze({ status: 'idle', play: null, live }),
  dnd: Object.freeze({ status: 'dnd', play: null, live }),
  offline: Object.freeze({ status: 'offline', play: null, live }),
});
const STATUS_ONLY_LIVE = STATUS_ONLY(true);
const STATUS_ONLY_STORED = STATUS_ONLY(false);

/** The memory of a status and a play: shared and frozen when there is no play (a user's seen live or not). */
export function memoryOf(status: DiscordStatus | null, play: LastPlay | null, live: boolean): HistoryMemory {
  if (play !== null) return { status, play, live };
  if (status === null) return EMPTY_MEMORY;
  return (live ? STATUS_ONLY_LIVE : STATUS_ONLY_STORED)[status];
}

/** The status last seen live, or null when this process has not seen it since it started or the user left. */
export function liveStatusOf(memory: HistoryMemory): DiscordStatus | null {
  return memory.live ? memory.status : null;
}

/** The same memory, once the user is no longer seen (they left every guild, or another node records them). */
export function notLive(memory: HistoryMemory): HistoryMemory {
  return memory.live ? memoryOf(memory.status, memory.play, false) : memory;
}

/** One change of a user's presence, as the recorder saw it. */
export interface Observation {
  status: DiscordStatus;
  nowPlaying: NowPlaying | null;
  ts: number;
  /** The status this process saw just before, if it saw the user at all. */
  previousLiveStatus: DiscordStatus | null;
}

/** What to write for one observation: nothing, or some of these. */
export interface HistoryDecision {
  status: StatusEntry | null;
  track: TrackEntry | null;
  /** The track entry is a play that counts (it has a play key: `playKeyOf`). */
  countsPlay: boolean;
  /** The user was seen going offline now. */
  lastSeen: number | null;
  memory: HistoryMemory;
}

/**
 * The recording rules. Status history: an entry only when `discord_status` changes. Track history: an
 * entry per play, where a play starts when now_playing moves to another track, or when the same track
 * starts again at or after its previous play's end. A seek (the start moves within the play), a pause
 * and resume, and the timing jitter of per-guild copies are the same play.
 */
export function recordObservation(memory: HistoryMemory, observation: Observation): HistoryDecision {
  const { status, nowPlaying, ts, previousLiveStatus } = observation;
  const statusEntry = status !== memory.status ? { status, ts } : null;
  const lastSeen =
    status === 'offline' && previousLiveStatus !== null && previousLiveStatus !== 'offline' ? ts : null;

  let play = memory.play;
  let track: TrackEntry | null = null;
  if (nowPlaying) {
    const identity = trackIdentity(nowPlaying);
    const { start, end } = nowPlaying.timestamps;
    if (isNewPlay(play, identity, start, ts)) {
      track = { ...nowPlaying, ts };
      play = { identity, start, end, paused: start === null };
    } else if (play && start !== null) {
      // A seek or a resume: the play goes on, and its end is where a replay would now start.
      play = { identity, start, end, paused: false };
    } else if (play) {
      play = { ...play, paused: true };
    }
  } else if (play) {
    play = { ...play, paused: true };
  }
  return {
    status: statusEntry,
    track,
    countsPlay: track !== null && playKeyOf(track) !== null,
    lastSeen,
    memory: memoryOf(status, play, true),
  };
}

function isNewPlay(last: LastPlay | null, identity: string, start: number | null, seenAt: number): boolean {
  if (!last || last.identity !== identity) return true;
  if (start === null || last.end === null || start < last.end - REPLAY_TOLERANCE_MS) return false;
  return !last.paused || seenAt - start <= RESUME_FROM_TOP_MS;
}

type TrackNames = Pick<NowPlaying, 'source' | 'track_id' | 'song' | 'artist' | 'album'>;

/**
 * The key a track's plays count under: the service's id for it, or, for a track without one (an unknown
 * player, a Spotify local file), its title and artist as a reader would tell them apart (case, width and
 * spacing aside). Null for a track without a title, which counts no play.
 */
export function playKeyOf(track: TrackNames): string | null {
  if (track.track_id !== null) return playKey(track.source, track.track_id);
  if (track.song === null) return null;
  return `${track.source}:~${comparable(track.song)}\u001f${comparable(track.artist ?? '')}`;
}

/** A track's identity: what its plays count under, or for one without a title what it shows. */
export function trackIdentity(track: TrackNames): string {
  return (
    playKeyOf(track) ?? `${track.source}:local:${JSON.stringify([track.song, track.artist, track.album])}`
  );
}

export function playKey(source: MusicSource, trackId: string): string {
  return `${source}:${trackId}`;
}

function comparable(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}

/**
 * The memory a user's stored history implies, for a process that has not seen them yet. Throws for a
 * status Discord has not (a store edited by hand), which the rules could not compare with.
 */
export function memoryFromHistory(
  lastStatus: StatusEntry | null,
  lastTrack: TrackEntry | null,
): HistoryMemory {
  const status = lastStatus?.status ?? null;
  if (status !== null && statusFrom(status) !== status) {
    throw new TypeError(`no such status in stored history: ${String(status)}`);
  }
  return memoryOf(
    status,
    // Nobody watched between processes: the next sight of this track is not known to be a replay.
    lastTrack
      ? {
          identity: trackIdentity(lastTrack),
          start: lastTrack.timestamps.start,
          end: lastTrack.timestamps.end,
          paused: true,
        }
      : null,
    false,
  );
}

/** `limit` for top tracks: default 10, clamped to 1–50. */
export function topTracksLimit(requested: number | undefined): number {
  if (requested === undefined) return TOP_TRACKS_DEFAULT_LIMIT;
  return Math.min(TOP_TRACKS_MAX_LIMIT, Math.max(1, Math.trunc(requested)));
}

export function recentLimit(requested: number | undefined): number {
  if (requested === undefined) return RECENT_DEFAULT_LIMIT;
  return Math.min(RECENT_MAX_LIMIT, Math.max(1, Math.trunc(requested)));
}

/** The UTC day of a moment, e.g. "2026-11-22": `tracks_today` counts plays since its 00:00. */
export function utcDay(ts: number): string {
  return new Date(Math.floor(ts / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/** The first UTC day whose plays `period` counts at `now`; null: every play counts. */
export function periodStart(period: TopTracksPeriod, now: number): string | null {
  const days = TOP_TRACKS_PERIODS[period];
  return days === null ? null : utcDay(now - (days - 1) * DAY_MS);
}

/** The oldest UTC day whose plays a store still counts after a play at `ts`. */
export function oldestDayKept(ts: number): string {
  return utcDay(ts - (PLAY_DAYS_KEPT - 1) * DAY_MS);
}

export interface StoredStats {
  lastStatus: DiscordStatus | null;
  lastSeen: number | null;
  trackHistoryCount: number;
  /** Plays counted on `playsDay`. */
  playsDay: string | null;
  plays: number;
}

export interface Stats {
  current_status: DiscordStatus;
  last_seen: number | null;
  tracks_today: number;
  track_history_count: number;
  is_monitored: boolean;
}

/**
 * What was seen live lately that the store may not hold yet (history is written in batches): status changes,
 * newest first, stamped as the recorder stamps them, and when the user was last seen going offline.
 */
export interface RecentStatus {
  entries: StatusEntry[];
  lastSeen: number | null;
}

/**
 * The stored status history (newest first) with what was seen since its newest entry, as the recording
 * rules will store it: an entry only where the status changes.
 */
export function statusHistoryWith(stored: StatusEntry[], recent: RecentStatus | undefined): StatusEntry[] {
  if (!recent || recent.entries.length === 0) return stored;
  const newest = stored[0];
  let last = newest?.status ?? null;
  const added: StatusEntry[] = [];
  for (let i = recent.entries.length - 1; i >= 0; i--) {
    const entry = recent.entries[i] as StatusEntry;
    if ((newest && entry.ts <= newest.ts) || entry.status === last) continue;
    added.unshift(entry);
    last = entry.status;
  }
  return added.length === 0 ? stored : [...added, ...stored].slice(0, HISTORY_LIMIT);
}

/** Stats from the live status (if monitored), what was seen lately and what the store remembers, at `now`. */
export function statsFrom(
  liveStatus: DiscordStatus | undefined,
  stored: StoredStats,
  now: number,
  recent?: RecentStatus,
): Stats {
  const online = liveStatus !== undefined && liveStatus !== 'offline';
  const lastSeen = Math.max(stored.lastSeen ?? -1, recent?.lastSeen ?? -1);
  return {
    current_status: liveStatus ?? recent?.entries[0]?.status ?? stored.lastStatus ?? 'offline',
    last_seen: online ? now : lastSeen < 0 ? null : lastSeen,
    tracks_today: stored.playsDay === utcDay(now) ? stored.plays : 0,
    track_history_count: stored.trackHistoryCount,
    is_monitored: liveStatus !== undefined,
  };
}
