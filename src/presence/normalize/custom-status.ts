import { ActivityType } from 'discord-api-types/v10';
import type { CustomStatus, CustomStatusEmoji } from '../model.js';
import { arrayOf, field, isRecord, snowflakeString, textOrNull } from './values.js';

/**
 * `custom_status`, from the Custom (type 4) activity:
 *
 * | field            | from                                                     |
 * |------------------|----------------------------------------------------------|
 * | `text`           | `state`, null when absent or blank                       |
 * | `emoji.name`     | `emoji.name` (the character, or the custom emoji's name) |
 * | `emoji.id`       | `emoji.id` as a string; null for a unicode emoji         |
 * | `emoji.animated` | `emoji.animated`, false when absent                      |
 *
 * Null without a Custom activity, or when it has neither text nor emoji.
 */
export function customStatusFrom(activities: unknown): CustomStatus | null {
  const activity = arrayOf(activities).find((candidate) => field(candidate, 'type') === ActivityType.Custom);
  if (activity === undefined) return null;
  const text = textOrNull(field(activity, 'state'));
  const emoji = emojiFrom(field(activity, 'emoji'));
  if (text === null && emoji === null) return null;
  return { text, emoji };
}

function emojiFrom(emoji: unknown): CustomStatusEmoji | null {
  if (!isRecord(emoji)) return null;
  const name = textOrNull(emoji.name);
  if (name === null) return null;
  return { name, id: snowflakeString(emoji.id), animated: emoji.animated === true };
}
