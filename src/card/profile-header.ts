import type { CardContent } from './content.js';
import { avatar, prefixed, statusColour } from './draw.js';
import { escapeXml, userText } from './escape.js';
import type { CardImages } from './images.js';
import { statusLabel } from './labels.js';
import { AVATAR_SIZE, FONTS, PADDING, TEXT_RIGHT, TEXT_X } from './layout.js';
import type { CardOptions } from './options.js';
import { serverTag, TAG_GAP } from './server-tag.js';
import type { Theme } from './theme.js';
import { textWidth, truncate } from './truncate.js';

const RING_WIDTH = 3;

/**
 * The full card's header, what `hideProfile` hides: the avatar, the name and server tag, the status and
 * @handle, and the custom status. Its text is clipped by the card's `header-text` clip path.
 */
export function profileHeader(
  content: CardContent,
  images: CardImages,
  theme: Theme,
  options: CardOptions,
  now: number,
): string {
  const parts: string[] = [avatar(content, images, PADDING, AVATAR_SIZE, RING_WIDTH, 34)];

  const hasCustomStatus = content.customStatus !== null;
  const nameY = hasCustomStatus ? 44 : 53;
  const statusY = nameY + 23;
  const textRoom = TEXT_RIGHT - TEXT_X;
  const tag = content.tag === null ? null : serverTag(content.tag, images.badge, theme, options);
  const name = truncate(content.displayName, textRoom - (tag === null ? 0 : tag.width + TAG_GAP), FONTS.name);
  const texts: string[] = [`<text x="${TEXT_X}" y="${nameY}" class="name">${userText(name)}</text>`];
  if (tag !== null) texts.push(tag.svg(TEXT_X + textWidth(name, FONTS.name) + TAG_GAP, nameY));

  // The second line: a status dot, the status, and the @handle (or the id of an unmonitored user).
  const dotX = TEXT_X + 4;
  const label = statusLabel(content, now);
  texts.push(`<circle cx="${dotX}" cy="${statusY - 5}" r="4" fill="${statusColour(content)}"/>`);
  const statusX = TEXT_X + 13;
  const separator = ' · ';
  let statusLine: string;
  if (!content.monitored) {
    statusLine = `<tspan>ID ${userText(truncate(content.userId, TEXT_RIGHT - statusX - 20, FONTS.sub))}</tspan>`;
  } else {
    // An unknown status is muted, as the handle is.
    const labelClass = content.unknownSince === null ? ' class="st"' : '';
    statusLine = `<tspan${labelClass}>${escapeXml(label)}</tspan>`;
    if (content.username !== null) {
      const room = TEXT_RIGHT - statusX - textWidth(label, { ...FONTS.sub, bold: true });
      statusLine += `<tspan>${prefixed(`${separator}@`, content.username, room, FONTS.sub)}</tspan>`;
    }
  }
  texts.push(`<text x="${statusX}" y="${statusY}" class="sub">${statusLine}</text>`);

  const customStatus = content.customStatus;
  if (customStatus !== null) {
    const y = statusY + 24;
    let x = TEXT_X;
    let prefix = '';
    if (customStatus.emoji !== null && customStatus.emoji.url !== null && images.emoji !== null) {
      texts.push(`<image href="${images.emoji}" x="${x}" y="${y - 15}" width="18" height="18"/>`);
      x += 24;
    } else if (customStatus.emoji !== null && customStatus.emoji.url === null) {
      prefix = `${customStatus.emoji.name} `;
    } else if (customStatus.emoji !== null && customStatus.text === null) {
      // A custom emoji whose image failed and no text: its name says something, an empty line nothing.
      prefix = `:${customStatus.emoji.name}:`;
    }
    const line = truncate(`${prefix}${customStatus.text ?? ''}`, TEXT_RIGHT - x, FONTS.status);
    if (line !== '') texts.push(`<text x="${x}" y="${y}" class="cs">${userText(line)}</text>`);
  }
  parts.push(`<g clip-path="url(#header-text)">${texts.join('')}</g>`);
  return parts.join('');
}
