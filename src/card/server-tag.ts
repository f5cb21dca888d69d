import { colour } from './draw.js';
import { userText } from './escape.js';
import { FONTS } from './layout.js';
import type { CardOptions } from './options.js';
import { num } from './svg.js';
import type { Theme } from './theme.js';
import { textWidth } from './truncate.js';

/** Between the name and the server tag. */
export const TAG_GAP = 8;
const TAG_HEIGHT = 20;
const BADGE_SIZE = 14;
const TAG_PADDING = 6;

/**
 * The server tag's pill: the badge and the tag, on the theme's tag colour (or `clanBackgroundColor`).
 * Placed after the name, whose width the pill's is taken from first.
 */
export function serverTag(
  tag: { text: string },
  badge: string | null,
  theme: Theme,
  options: CardOptions,
): { width: number; svg: (x: number, baseline: number) => string } {
  const badgeRoom = badge === null ? 0 : BADGE_SIZE + 4;
  const width = TAG_PADDING + badgeRoom + textWidth(tag.text, FONTS.tag) + TAG_PADDING;
  const fill = colour(options.tagBackground ?? theme.tag);
  return {
    width,
    svg: (x, baseline) => {
      const y = baseline - 16;
      const parts = [
        `<rect x="${num(x)}" y="${y}" width="${num(width)}" height="${TAG_HEIGHT}" rx="5" fill="${fill.hex}"${fill.opacity}/>`,
      ];
      if (badge !== null) {
        parts.push(
          `<image href="${badge}" x="${num(x + TAG_PADDING)}" y="${y + (TAG_HEIGHT - BADGE_SIZE) / 2}" width="${BADGE_SIZE}" height="${BADGE_SIZE}"/>`,
        );
      }
      parts.push(
        `<text x="${num(x + TAG_PADDING + badgeRoom)}" y="${y + 14}" class="tag">${userText(tag.text)}</text>`,
      );
      return `<g class="server-tag">${parts.join('')}</g>`;
    },
  };
}
