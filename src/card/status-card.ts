import { compactCardParts } from './compact-card.js';
import type { CardContent } from './content.js';
import { type CardParts, safeImage } from './draw.js';
import { fontFaceFor } from './font.js';
import { fullCardParts } from './full-card.js';
import type { CardImages } from './images.js';
import type { CardOptions } from './options.js';
import { THEMES } from './theme.js';

/**
 * The status card as SVG, in either layout, built as a string from what `cardContent` decided and the
 * images already fetched: no I/O, no clock but `now`. Every user string passes through `cleanText` (in
 * content.ts), `truncate` and `userText` (isolated and escaped); everything else in the markup is ours.
 */

export function renderCard(
  content: CardContent,
  options: CardOptions,
  given: CardImages,
  now: number,
): string {
  const { before, after } = renderCardParts(content, options, given, now);
  return before + fontFaceFor(after).toString() + after;
}

/**
 * The card as the markup before its font and after it (`CardParts`): the route sends the font as bytes
 * made once for a set of characters and hashes the text alone for the ETag, and the PNG renderer goes
 * without it.
 */
export function renderCardParts(
  content: CardContent,
  options: CardOptions,
  given: CardImages,
  now: number,
): CardParts {
  const images: CardImages = {
    avatar: safeImage(given.avatar),
    emoji: safeImage(given.emoji),
    art: safeImage(given.art),
    badge: safeImage(given.badge),
    decoration: safeImage(given.decoration),
  };
  const theme = THEMES[options.theme];
  if (options.layout === 'compact') return compactCardParts(content, options, images, theme, now);
  const moreArt = content.more.map((_, i) => safeImage(given.more?.[i]));
  return fullCardParts(content, options, images, moreArt, theme, now);
}
