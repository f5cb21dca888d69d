import { ARENA_ROOM_INTS, BodyArena } from '../../src/collections/body-arena.js';
import { SnowflakeSlots } from '../../src/collections/snowflake-slots.js';

/** An arena and the slots it writes for, as the registry pairs them: its records kept beside their keys. */
export function arenaWithSlots(): { arena: BodyArena; slots: SnowflakeSlots } {
  const slots = new SnowflakeSlots(ARENA_ROOM_INTS);
  return { arena: new BodyArena(slots), slots };
}

/** An arena with slots 0 to `count` - 1 in use. */
export function arenaOf(count: number): BodyArena {
  const { arena, slots } = arenaWithSlots();
  for (let n = 0; n < count; n++) slots.add(String(n + 1));
  return arena;
}
