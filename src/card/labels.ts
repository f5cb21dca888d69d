import { formatAgo } from './clock.js';
import type { CardContent } from './content.js';
import { SOURCE_LABELS, STATUS_LABELS } from './theme.js';

/** The status card's words: what an activity's type and the status read as, and the card as a sentence. */

const ACTIVITY_LABELS: Record<number, string> = {
  0: 'Playing',
  1: 'Streaming',
  2: 'Listening to',
  3: 'Watching',
  5: 'Competing in',
};

/** What the user is doing, by Discord's activity type: `Playing` for a type the card has no word for. */
export function activityLabel(type: number): string {
  return ACTIVITY_LABELS[type] ?? 'Playing';
}

/** The status in words: never a confident one while the presence is stale. */
export function statusLabel(content: CardContent, now: number): string {
  return content.unknownSince === null
    ? STATUS_LABELS[content.status]
    : `Status unknown since ${formatAgo(now - content.unknownSince)}`;
}

/** The card in words, for screen readers and as the tooltip. */
export function cardTitle(content: CardContent, now: number): string {
  if (!content.monitored) return `${content.userId}: ${content.displayName.toLowerCase()}`;
  const who =
    content.username === null ? content.displayName : `${content.displayName} (@${content.username})`;
  const parts = [`${who}: ${statusLabel(content, now)}`];
  if (content.customStatus?.text) parts.push(content.customStatus.text);
  const main = content.main;
  if (main?.kind === 'music') {
    const by = main.artist === null ? '' : ` by ${main.artist}`;
    parts.push(`listening to ${main.song}${by} on ${SOURCE_LABELS[main.source]}`);
  } else if (main?.kind === 'activity') {
    parts.push(`${activityLabel(main.type).toLowerCase()} ${main.name}`);
  }
  return parts.join(' · ');
}
