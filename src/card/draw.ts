import type { CardContent } from './content.js';
import { DEFAULT_AVATAR_COLOURS } from './default-avatar.js';
import { escapeXml, isolate, userText } from './escape.js';
import { FONT_FAMILY } from './font.js';
import type { CardOptions } from './options.js';
import { num } from './svg.js';
import { STATUS_COLOURS, type Theme } from './theme.js';
import { type FontSpec, graphemes, textWidth, truncate } from './truncate.js';

/**
 * Drawing pieces every card shares: the root element, the background, the avatar, album art and its
 * placeholder, the equalizer. Each returns markup; user text in it has passed `userText`.
 */

/**
 * The cards' own font first (font.ts), then fonts with the same metrics (Liberation Sans and Arimo are
 * Arial's), so the layout holds where the embedded font is not read (librsvg). No emoji font: those
 * draw spaces and digits too; emoji get EMOJI_STACK where they occur (see `userText`).
 */
export const FONT_STACK = `'${FONT_FAMILY}','Liberation Sans',Arimo,Arial,Helvetica,sans-serif`;
export const EMOJI_STACK =
  "'Noto Color Emoji','Apple Color Emoji','Segoe UI Emoji','Twemoji Mozilla',sans-serif";

/** Material Design's music note (Apache 2.0), 24×24. */
export const MUSIC_NOTE_PATH =
  'M12 3v10.55c-.59-.34-1.27-.55-2-.55-2.21 0-4 1.79-4 4s1.79 4 4 4 4-1.79 4-4V7h4V3h-6z';

/** The equalizer's stylesheet rules: its bars (`.eq`) bounce, unless the viewer asks for less motion. */
export const EQUALIZER_CSS = [
  '.eq rect{transform-box:fill-box;transform-origin:50% 100%;animation:eq .8s ease-in-out infinite alternate}',
  '.eq rect:nth-child(2){animation-duration:.62s;animation-delay:-.3s}',
  '.eq rect:nth-child(3){animation-duration:.95s;animation-delay:-.5s}',
  '.eq rect:nth-child(4){animation-duration:.7s;animation-delay:-.15s}',
  '@keyframes eq{from{transform:scaleY(.25)}to{transform:scaleY(1)}}',
  '@media (prefers-reduced-motion:reduce){.eq rect{animation:none}}',
].join('');

const DATA_URI = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]*={0,2}$/;

/** An image goes into an attribute as it is, so anything but a base64 raster data: URI is dropped. */
export function safeImage(uri: string | null | undefined): string | null {
  return typeof uri === 'string' && DATA_URI.test(uri) ? uri : null;
}

/**
 * A drawn card as the markup before its font and after it: `openSvg` and the rest. The font's @font-face
 * rules (`fontFaceFor`, most of a card's bytes) follow from the text after, so they are bytes made once
 * for a set of characters, the ETag is over the text alone, and the PNG renderer, which reads no
 * @font-face, goes without them.
 */
export interface CardParts {
  before: string;
  after: string;
}

/** A card's root element, its title (for screen readers and as the tooltip), and the start of its stylesheet. */
export function openSvg(width: number, height: number, title: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="card-title" xml:space="preserve">` +
    `<title id="card-title">${escapeXml(isolate(title))}</title><style>`
  );
}

/** `#rrggbb` plus a fill-opacity for `#rrggbbaa`: older renderers do not read eight-digit hex. */
export function colour(hex: string): { hex: string; opacity: string } {
  if (hex.length !== 9) return { hex, opacity: '' };
  const alpha = Number.parseInt(hex.slice(7), 16) / 255;
  return { hex: hex.slice(0, 7), opacity: ` fill-opacity="${num(alpha, 3)}"` };
}

/** The background: rounded, in the option's colour or the theme's, with the theme's outline. */
export function cardBackground(width: number, height: number, options: CardOptions, theme: Theme): string {
  const fill = colour(options.background ?? theme.background);
  return `<rect class="card" x="0.5" y="0.5" width="${width - 1}" height="${height - 1}" rx="${num(options.borderRadius)}" fill="${fill.hex}"${fill.opacity} stroke="${theme.border}" stroke-opacity="${theme.borderOpacity}"/>`;
}

/** The status dot's and the avatar ring's colour: muted while the presence is stale. */
export function statusColour(content: CardContent): string {
  return STATUS_COLOURS[content.unknownSince === null ? content.status : 'offline'];
}

/** The first character of a name, large and white: the placeholder of a missing image. */
export function initial(name: string, cx: number, cy: number, size: number): string {
  const first = graphemes(name)[0]?.toUpperCase() ?? '?';
  return `<text x="${num(cx)}" y="${num(cy + size * 0.36)}" class="initial" font-size="${size}" text-anchor="middle">${userText(first)}</text>`;
}

/**
 * Our words before user text (`by `, `@`): only the user's part is isolated, so an RTL artist or handle
 * does not carry our prefix over to its side.
 */
export function prefixed(prefix: string, text: string, room: number, font: FontSpec): string {
  return escapeXml(prefix) + userText(truncate(text, room - textWidth(prefix, font), font));
}

/** The avatar decoration is drawn this much larger than the avatar, centred on it, as Discord draws it. */
const DECORATION_SCALE = 1.2;

/**
 * The avatar, `size` across with its top left at (`at`, `at`): ringed in the status colour (`ring` px wide,
 * as far from it), the image or the default avatar's colour and initial, and the decoration over it.
 */
export function avatar(
  content: CardContent,
  images: { avatar: string | null; decoration: string | null },
  at: number,
  size: number,
  ring: number,
  initialSize: number,
): string {
  const centre = at + size / 2;
  const parts = [
    `<circle cx="${centre}" cy="${centre}" r="${num(size / 2 + ring * 1.5)}" fill="none" stroke="${statusColour(content)}" stroke-width="${ring}"/>`,
  ];
  if (images.avatar !== null) {
    parts.push(
      `<clipPath id="avatar-clip"><circle cx="${centre}" cy="${centre}" r="${size / 2}"/></clipPath>`,
      `<image href="${images.avatar}" x="${at}" y="${at}" width="${size}" height="${size}" preserveAspectRatio="xMidYMid slice" clip-path="url(#avatar-clip)"/>`,
    );
  } else {
    const fill = DEFAULT_AVATAR_COLOURS[content.defaultAvatar] ?? DEFAULT_AVATAR_COLOURS[0];
    parts.push(
      `<circle cx="${centre}" cy="${centre}" r="${size / 2}" fill="${fill}"/>`,
      initial(content.monitored ? content.displayName : '?', centre, centre, initialSize),
    );
  }
  if (content.decorationUrl !== null && images.decoration !== null) {
    const decorated = size * DECORATION_SCALE;
    parts.push(
      `<image href="${images.decoration}" x="${num(centre - decorated / 2)}" y="${num(centre - decorated / 2)}" width="${num(decorated)}" height="${num(decorated)}"/>`,
    );
  }
  return parts.join('');
}

/** Where an art tile goes, and the id its clip path and gradient take (unique in the card). */
export interface TileSpec {
  id: string;
  x: number;
  y: number;
  size: number;
  radius: number;
}

/**
 * Album art or an activity's image in a rounded square, or, without one, a tile in `fill` fading to its
 * lighter self with `glyph` drawn on it.
 */
export function artTile(image: string | null, tile: TileSpec, fill: string, glyph: string): string {
  const { id, x, y, size } = tile;
  const r = num(tile.radius);
  if (image !== null) {
    return (
      `<clipPath id="art-clip-${id}"><rect x="${x}" y="${y}" width="${size}" height="${size}" rx="${r}"/></clipPath>` +
      `<image href="${image}" x="${x}" y="${y}" width="${size}" height="${size}" preserveAspectRatio="xMidYMid slice" clip-path="url(#art-clip-${id})"/>`
    );
  }
  return (
    `<linearGradient id="art-fill-${id}" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${fill}"/><stop offset="1" stop-color="${fill}" stop-opacity=".55"/></linearGradient>` +
    `<rect x="${x}" y="${y}" width="${size}" height="${size}" rx="${r}" fill="url(#art-fill-${id})"/>` +
    glyph
  );
}

/** The music note in white, `size` across, its top left at (`x`, `y`). */
export function musicNote(x: number, y: number, size: number): string {
  return `<path d="${MUSIC_NOTE_PATH}" fill="#fff" transform="translate(${num(x)} ${num(y)}) scale(${num(size / 24, 4)})"/>`;
}

/** The equalizer's bars at rest, their width and the gap between them. */
const EQ_HEIGHTS = [7, 12, 5, 10];
const EQ_BAR = 3;
const EQ_GAP = 2;
/** Moving bars are drawn this tall and scaled by the stylesheet. */
const EQ_MOVING_HEIGHT = 12;
export const EQUALIZER_WIDTH = EQ_HEIGHTS.length * EQ_BAR + (EQ_HEIGHTS.length - 1) * EQ_GAP;

/** Four bars in the source's colour, bottoms on `baseline`, right edge at `right`; moving while music plays. */
export function equalizer(right: number, baseline: number, fill: string, moving: boolean): string {
  const left = right - EQUALIZER_WIDTH;
  const rects = EQ_HEIGHTS.map((h, i) => {
    const height = moving ? EQ_MOVING_HEIGHT : h;
    return `<rect x="${num(left + i * (EQ_BAR + EQ_GAP))}" y="${num(baseline - height)}" width="${EQ_BAR}" height="${height}" rx="1"/>`;
  });
  // Only `.eq` bars are animated by the stylesheet; resting ones get another class.
  return `<g class="${moving ? 'eq' : 'bars'}" fill="${fill}">${rects.join('')}</g>`;
}
