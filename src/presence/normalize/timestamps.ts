import type { Timestamps } from '../model.js';
import { field, timestampOrNull } from './values.js';

/**
 * `timestamps` of a music object, from the activity's `timestamps`:
 *
 * | field   | from                          |
 * |---------|-------------------------------|
 * | `start` | `timestamps.start` (epoch ms) |
 * | `end`   | `timestamps.end` (epoch ms)   |
 *
 * Each is null when absent or not a timestamp (a paused player sends none).
 */
export function timestampsFrom(activity: unknown): Timestamps {
  const timestamps = field(activity, 'timestamps');
  return {
    start: timestampOrNull(field(timestamps, 'start')),
    end: timestampOrNull(field(timestamps, 'end')),
  };
}

/** end − start when both are known and end > start, else null. */
export function durationMs(timestamps: Timestamps): number | null {
  const { start, end } = timestamps;
  if (typeof start !== 'number' || typeof end !== 'number') return null;
  if (!Number.isFinite(start) || !Number.isFinite(end) || end <= start) return null;
  return end - start;
}
