import { trackIdentity } from '../model/history.js';
import type { WebhookEvent } from '../model/webhook.js';
import type { NowPlaying, Snowflake } from '../presence/model.js';
import type { PresenceChange } from '../presence/registry/registry.js';

/** An event for one user's webhooks: its type, and its `data` as JSON text. */
export interface EventData {
  type: WebhookEvent;
  data: string;
}

/**
 * The body of every delivery of an event: `{type, user_id, timestamp, data}`, `timestamp` in epoch ms.
 * The data's JSON goes in as it is: a presence is the text it was serialized to once.
 */
export function eventBody(type: WebhookEvent, userId: Snowflake, timestamp: number, data: string): string {
  return `{"type":"${type}","user_id":"${userId}","timestamp":${timestamp},"data":${data}}`;
}

/**
 * Whether `now_playing` changed as its webhooks count it: another track (its play identity, as history
 * counts plays), or music starting or stopping. A seek, a pause, a replay of the same track do not.
 */
export function nowPlayingChanged(previous: NowPlaying | null, current: NowPlaying | null): boolean {
  if (previous === null || current === null) return previous !== current;
  return trackIdentity(previous) !== trackIdentity(current);
}

/**
 * The events a presence change makes, of the types `wanted`: `presence` whenever the presence changed
 * (what a socket gets as PRESENCE_UPDATE), `now_playing` when it changed as above. A user no longer
 * monitored makes none, nor one taken back after a restart.
 */
export function eventsOfChange(change: PresenceChange, wanted: (type: WebhookEvent) => boolean): EventData[] {
  // A presence taken back after a restart is what was sent before it, not a change.
  if (change.kind === 'unmonitored' || (change.kind === 'monitored' && change.restored)) return [];
  const events: EventData[] = [];
  if (wanted('presence')) events.push({ type: 'presence', data: change.current.json });
  if (change.kind === 'updated' && wanted('now_playing')) {
    const current = change.current.summary().now_playing;
    if (nowPlayingChanged(change.previous.summary().now_playing, current)) {
      events.push({ type: 'now_playing', data: JSON.stringify(current) });
    }
  }
  return events;
}
