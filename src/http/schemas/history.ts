import {
  HISTORY_LIMIT,
  RECENT_MAX_LIMIT,
  TOP_TRACKS_MAX_LIMIT,
  TOP_TRACKS_MIN_PLAYS,
} from '../../model/history.js';
import { discordStatusSchema, epochMs, nowPlayingSchema, nullableEpochMs } from './presence.js';

/**
 * What `/history`, `/stats` and `/top-tracks` answer (docs/api.md, "History, stats and top
 * tracks"), as JSON Schema for the OpenAPI document.
 */

/** `now_playing` plus fields of its own. */
export function nowPlayingWith<P extends Record<string, object>>(properties: P) {
  return {
    type: 'object',
    properties: { ...nowPlayingSchema.properties, ...properties },
    required: [...nowPlayingSchema.required, ...Object.keys(properties)],
    additionalProperties: false,
  } as const;
}

export const historySchema = {
  type: 'object',
  properties: {
    status_history: {
      type: 'array',
      description: `status changes, newest first, at most ${HISTORY_LIMIT}`,
      maxItems: HISTORY_LIMIT,
      items: {
        type: 'object',
        properties: { status: discordStatusSchema, ts: epochMs },
        required: ['status', 'ts'],
        additionalProperties: false,
      },
    },
    track_history: {
      type: 'array',
      description: `tracks played (\`now_playing\` and when it started), newest first, at most ${HISTORY_LIMIT}`,
      maxItems: HISTORY_LIMIT,
      items: nowPlayingWith({ ts: epochMs }),
    },
  },
  required: ['status_history', 'track_history'],
  additionalProperties: false,
} as const;

export const statsSchema = {
  type: 'object',
  properties: {
    current_status: {
      ...discordStatusSchema,
      description: 'live, else the last recorded, else offline; offline while the user pauses their presence',
    },
    last_seen: {
      ...nullableEpochMs,
      description:
        'last time seen with a status other than offline (the read time while online); null if never, while the user pauses their presence, or when they hide it (`show_last_seen: false`)',
    },
    tracks_today: {
      type: 'integer',
      minimum: 0,
      description: 'plays since 00:00 UTC, of the music sources the user does not hide',
    },
    track_history_count: {
      type: 'integer',
      minimum: 0,
      description: 'entries in the stored track history, of the music sources the user does not hide',
    },
    is_monitored: { type: 'boolean' },
  },
  required: ['current_status', 'last_seen', 'tracks_today', 'track_history_count', 'is_monitored'],
  additionalProperties: false,
} as const;

export const topTracksSchema = {
  type: 'object',
  properties: {
    top_tracks: {
      type: 'array',
      description: `tracks played at least ${TOP_TRACKS_MIN_PLAYS} times, most played first, then most recently played`,
      maxItems: TOP_TRACKS_MAX_LIMIT,
      items: nowPlayingWith({
        last_played: epochMs,
        play_count: { type: 'integer', minimum: TOP_TRACKS_MIN_PLAYS },
      }),
    },
  },
  required: ['top_tracks'],
  additionalProperties: false,
} as const;

export const recentSchema = {
  type: 'object',
  properties: {
    recent_tracks: {
      type: 'array',
      description: `the latest plays (\`now_playing\` and when it started), newest first, at most ${RECENT_MAX_LIMIT}`,
      maxItems: RECENT_MAX_LIMIT,
      items: nowPlayingWith({ ts: epochMs }),
    },
  },
  required: ['recent_tracks'],
  additionalProperties: false,
} as const;
