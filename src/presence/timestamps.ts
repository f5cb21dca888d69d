import type { Timestamps } from './model.js';
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
