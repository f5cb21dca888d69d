import {
  HISTORY_LIMIT,
  periodStart,
  playKeyOf,
  type Stats,
  type StatusEntry,
  type StoredStats,
  statsFrom,
  statusHistoryWith,
  TOP_TRACKS_MIN_PLAYS,
  type TopTrack,
  type TopTracksPeriod,
  TRACKED_TRACKS_PER_USER,
  type TrackEntry,
  utcDay,
} from '../model/history.js';
import type { MusicSource, Snowflake } from '../presence/model.js';
import { DEFAULT_MUSIC_APPS, type MusicApps } from '../presence/normalize/music-apps.js';
import { hiddenMusicSources, isPaused, type PrivacySettings } from '../presence/privacy.js';
import type { PresenceView } from '../presence/registry/registry.js';
import type { HistoryStore } from '../store/ports.js';
import type { RecentStatuses } from './recent-status.js';

/** A user's status changes and plays, newest first. */
export interface UserHistory {
  status_history: StatusEntry[];
  track_history: TrackEntry[];
}

export interface HistoryReadsDeps {
  history: HistoryStore;
  /**
   * Status changes the view saw that history may not have stored yet; absent: the store alone. Given the
   * recorder's `records`, so that it holds nothing history does not record.
   */
  recent?: Pick<RecentStatuses, 'get'>;
  /** The user's privacy settings, undefined for one who set none; absent: nobody hides anything. */
  settingsOf?: (userId: Snowflake) => PrivacySettings | undefined;
  /** Which service a hidden application plays, so its past plays are hidden too; DEFAULT_MUSIC_APPS if absent. */
  musicApps?: MusicApps;
  now?: () => number;
}

/** What the store answers for a user it knows nothing of. */
const NOTHING_STORED: StoredStats = Object.freeze({
  lastStatus: null,
  lastSeen: null,
  trackHistoryCount: 0,
  playsDay: null,
  plays: 0,
});

const NO_SOURCES: ReadonlySet<MusicSource> = new Set();

type Hidden = 'all' | ReadonlySet<MusicSource>;

const shows = (hidden: Hidden, track: { source: MusicSource }): boolean =>
  hidden !== 'all' && !hidden.has(track.source);

/** The user's track history without what their settings hide. */
function shownTracks(tracks: TrackEntry[], hidden: Hidden): TrackEntry[] {
  if (hidden === 'all') return [];
  return hidden.size === 0 ? tracks : tracks.filter((track) => shows(hidden, track));
}

/**
 * A read of the store made only to be thrown away: a user answered as an unknown id is answered after the
 * same work as one, so the time an answer takes does not tell them apart either.
 */
async function askedAsForAnyone(read: Promise<unknown>): Promise<void> {
  await read.catch(() => undefined);
}

/**
 * History, stats, the latest plays and top tracks of a user as the world may see them: what their privacy
 * settings hide left out. The REST routes and the agent endpoint answer from these alike. Each takes the
 * view the reader reads the user from, or null for a user to be answered exactly as an unknown id.
 */
export class HistoryReads {
  private readonly now: () => number;
  private readonly musicApps: MusicApps;

  constructor(private readonly deps: HistoryReadsDeps) {
    this.now = deps.now ?? Date.now;
    this.musicApps = deps.musicApps ?? DEFAULT_MUSIC_APPS;
  }

  /** Status changes (an entry only when `discord_status` changes) and plays, the HISTORY_LIMIT newest of each. */
  async history(id: Snowflake, view: PresenceView | null): Promise<UserHistory> {
    if (view === null) {
      await askedAsForAnyone(this.deps.history.history(id, HISTORY_LIMIT));
      return { status_history: [], track_history: [] };
    }
    // A pending member is rendered by this, and its first status recorded as recent.
    view.get(id);
    const hidden = this.hiddenOf(id, this.now());
    const { status, tracks } = await this.deps.history.history(id, HISTORY_LIMIT);
    return {
      status_history: statusHistoryWith(status, this.deps.recent?.get(id)),
      track_history: shownTracks(tracks, hidden),
    };
  }

  async stats(id: Snowflake, view: PresenceView | null): Promise<Stats> {
    if (view === null) {
      await askedAsForAnyone(this.deps.history.stats(id));
      return statsFrom(undefined, NOTHING_STORED, this.now());
    }
    const at = this.now();
    const settings = this.deps.settingsOf?.(id);
    const stored = await this.deps.history.stats(id);
    const stats = statsFrom(view.get(id)?.status, stored, at, this.deps.recent?.get(id));
    return settings === undefined ? stats : await this.shownStats(id, stats, settings, at);
  }

  /** The `limit` latest plays, newest first (`limit` already clamped: recentLimit). */
  async recent(id: Snowflake, view: PresenceView | null, limit: number): Promise<TrackEntry[]> {
    if (view === null) {
      await askedAsForAnyone(this.deps.history.history(id, HISTORY_LIMIT));
      return [];
    }
    const hidden = this.hiddenOf(id, this.now());
    const { tracks } = await this.deps.history.history(id, HISTORY_LIMIT);
    return shownTracks(tracks, hidden).slice(0, limit);
  }

  /**
   * The `limit` most played tracks (`limit` already clamped: topTracksLimit), counting the plays of
   * `period` (every play by default).
   */
  async topTracks(
    id: Snowflake,
    view: PresenceView | null,
    limit: number,
    period: TopTracksPeriod = 'all',
  ): Promise<TopTrack[]> {
    const at = this.now();
    const since = periodStart(period, at) ?? undefined;
    if (view === null) {
      await askedAsForAnyone(this.deps.history.topTracks(id, TOP_TRACKS_MIN_PLAYS, limit, since));
      return [];
    }
    const hidden = this.hiddenOf(id, at);
    if (hidden === 'all') return [];
    const top = await this.deps.history.topTracks(id, TOP_TRACKS_MIN_PLAYS, limit, since);
    if (hidden.size === 0) return top;
    const shown = top.filter((track) => shows(hidden, track));
    if (shown.length === limit || top.length < limit) return shown;
    // Hidden tracks took places: the rest of the ranking is read, once, to fill them.
    const all = await this.deps.history.topTracks(id, TOP_TRACKS_MIN_PLAYS, TRACKED_TRACKS_PER_USER, since);
    return all.filter((track) => shows(hidden, track)).slice(0, limit);
  }

  private hiddenOf(id: Snowflake, at: number): Hidden {
    const settings = this.deps.settingsOf?.(id);
    return settings === undefined ? NO_SOURCES : hiddenMusicSources(settings, at, this.musicApps);
  }

  /**
   * Stats under the user's settings. Hidden music: neither count includes a hidden play; with every
   * source hidden both are 0, with some, both are counted in the stored track history (which holds every
   * entry `track_history_count` counts), `tracks_today` as the plays of today shown there, at most what
   * the store counted today. A pause shows the user offline, and when they were last seen is not told
   * while it lasts: the moment it began would be, and the presence itself says no more than offline.
   */
  private async shownStats(
    id: Snowflake,
    stats: Stats,
    settings: PrivacySettings,
    at: number,
  ): Promise<Stats> {
    const shown = { ...stats };
    const hidden = hiddenMusicSources(settings, at, this.musicApps);
    if (hidden === 'all') {
      shown.tracks_today = 0;
      shown.track_history_count = 0;
    } else if (hidden.size > 0) {
      const { tracks } = await this.deps.history.history(id, HISTORY_LIMIT);
      const visible = shownTracks(tracks, hidden);
      const today = utcDay(at);
      const playsToday = visible.filter((track) => utcDay(track.ts) === today && playKeyOf(track) !== null);
      shown.track_history_count = visible.length;
      shown.tracks_today = Math.min(stats.tracks_today, playsToday.length);
    }
    if (isPaused(settings, at)) {
      shown.current_status = 'offline';
      shown.last_seen = null;
    }
    if (!settings.show_last_seen) shown.last_seen = null;
    return shown;
  }
}
