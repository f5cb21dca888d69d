import type { GatewayActivity } from 'discord-api-types/v10';

/**
 * A number made from the fields of a list of activities that a guild copy must match exactly (count,
 * type, name, details, state: see guild-copy.ts). Equal lists always have equal sketches, so an update
 * whose sketch differs from the held presence's is a change, found without reading the held activities
 * back. Equal sketches say nothing: those updates are compared in full.
 */
export function activitySketch(activities: readonly GatewayActivity[]): number {
  let sketch = activities.length;
  for (const activity of activities) {
    sketch = mix(sketch, valueSketch(activity.type));
    sketch = mix(sketch, valueSketch(activity.name));
    sketch = mix(sketch, valueSketch(activity.details));
    sketch = mix(sketch, valueSketch(activity.state));
  }
  return sketch;
}

/** A few characters and the length stand for a string: a new track or status text moves one of them. */
function valueSketch(value: unknown): number {
  if (typeof value === 'string') {
    const { length } = value;
    if (length === 0) return 1;
    const ends = mix(value.charCodeAt(0), value.charCodeAt(length - 1));
    return mix(mix(length, ends), value.charCodeAt(length >> 1));
  }
  if (typeof value === 'number') return mix(2, value | 0);
  return value === undefined ? 3 : 4;
}

function mix(sketch: number, value: number): number {
  return Math.imul(sketch ^ value, 0x9e3779b1) ^ (sketch >>> 15);
}
