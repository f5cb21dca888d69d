import { cleanText, escapeXml } from '../card/escape.js';
import { SOURCE_LABELS } from '../card/theme.js';
import type { TrackEntry } from '../model/history.js';
import type { Snowflake } from '../presence/model.js';

/**
 * `/v1/users/:id/recent?format=rss`: the latest plays as an RSS 2.0 feed, newest first, for feed readers
 * and scripts. `name`: how the user is called, when known; `link`: the page the feed is about.
 */
export function recentFeed(
  userId: Snowflake,
  name: string | null,
  tracks: readonly TrackEntry[],
  link: string,
): string {
  const who = name ?? userId;
  const items = tracks.map((track) => {
    const title = [track.song, track.artist].filter(Boolean).join(' — ') || 'Unknown track';
    const played = new Date(track.ts).toUTCString();
    return [
      '<item>',
      `<title>${xmlText(title)}</title>`,
      track.track_url ? `<link>${xmlText(track.track_url)}</link>` : '',
      `<description>${xmlText(`Played on ${SOURCE_LABELS[track.source]}${track.album ? `, from ${track.album}` : ''}`)}</description>`,
      `<guid isPermaLink="false">${xmlText(`${userId}-${track.ts}`)}</guid>`,
      `<pubDate>${played}</pubDate>`,
      '</item>',
    ].join('');
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<rss version="2.0"><channel>',
    `<title>${xmlText(`${who}: recently played`)}</title>`,
    `<link>${xmlText(link)}</link>`,
    `<description>${xmlText(`What ${who} played lately, as Discord showed it`)}</description>`,
    ...items,
    '</channel></rss>',
    '',
  ].join('\n');
}

/** User text as XML text: what XML cannot hold dropped, markup escaped (as on the card). */
function xmlText(text: string): string {
  return escapeXml(cleanText(text));
}
