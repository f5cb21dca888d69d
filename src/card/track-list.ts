import { formatAgo } from './clock.js';
import {
  artTile,
  avatar,
  type CardParts,
  cardBackground,
  EMOJI_STACK,
  EQUALIZER_CSS,
  EQUALIZER_WIDTH,
  equalizer,
  FONT_STACK,
  musicNote,
  openSvg,
  safeImage,
} from './draw.js';
import { escapeXml, userText } from './escape.js';
import { CARD_WIDTH } from './layout.js';
import type { CardOptions } from './options.js';
import { num } from './svg.js';
import { SOURCE_COLOURS, SOURCE_LABELS, THEMES, type Theme } from './theme.js';
import type { TrackCardContent, TrackRow } from './track-content.js';
import { type FontSpec, textWidth, truncate } from './truncate.js';

/**
 * The track cards as SVG: a header with the user (or, with `hideProfile`, the list's name alone), then a
 * row per track: its art, title and artist, and on the right when it was played (or how often) over
 * where it was played. Built as the status card is (status-card.ts): no I/O, no clock but `now`, every user
 * string cleaned, cut to fit and passed through `userText`.
 */

/** The images of one track card as `data:` URIs; null draws a placeholder. */
export interface TrackImages {
  avatar: string | null;
  /** Each row's art, in the rows' order. */
  art: readonly (string | null)[];
}

const WIDTH = CARD_WIDTH;
const PAD = 20;
const RIGHT = WIDTH - PAD;
const HEADER_HEIGHT = 68;
/** The header without the user: the list's name alone. */
const BARE_HEADER_HEIGHT = 44;
const AVATAR = 36;
const RING_WIDTH = 2;
const NAME_X = PAD + AVATAR + 14;
const ROW_HEIGHT = 56;
const ART = 44;
const ART_RADIUS = 6;
/** The top card's rank numbers, before the art. */
const RANK_WIDTH = 24;
const TEXT_GAP = 12;
/** Between the title and artist and the column on the right. */
const COLUMN_GAP = 16;
/** The source's badge: a disc in its colour with a note, before its name. */
const SOURCE_ICON = 12;
const ICON_GAP = 5;
/** Between the equalizer and "Now playing". */
const NOW_GAP = 6;
const EMPTY_PANEL_X = 12;
const EMPTY_PANEL_HEIGHT = 52;
const BOTTOM = 10;
/** Labels are spaced out by this much of an em. */
const LABEL_SPACING = 0.08;

const FONTS = {
  name: { size: 16, bold: true },
  heading: { size: 12.5 },
  label: { size: 11, bold: true },
  song: { size: 14, bold: true },
  artist: { size: 12.5 },
  meta: { size: 11.5 },
  now: { size: 11.5, bold: true },
  rank: { size: 13, bold: true },
  empty: { size: 14 },
} satisfies Record<string, FontSpec>;

const NOW_PLAYING = 'Now playing';

/** Where the rows start. */
function headerHeight(options: CardOptions): number {
  return options.hideProfile ? BARE_HEADER_HEIGHT : HEADER_HEIGHT;
}

export function trackCardHeight(content: TrackCardContent, options: CardOptions): number {
  const rows = content.rows.length;
  return headerHeight(options) + (rows > 0 ? rows * ROW_HEIGHT + BOTTOM : EMPTY_PANEL_HEIGHT + 12);
}

/** The card as the markup before its font and after it, as `renderCardParts` makes the status card. */
export function renderTrackCardParts(
  content: TrackCardContent,
  options: CardOptions,
  given: TrackImages,
  now: number,
): CardParts {
  const theme = THEMES[options.theme];
  const height = trackCardHeight(content, options);
  const top = headerHeight(options);
  const body =
    content.rows.length > 0
      ? rows(content, options, theme, given, top, now)
      : emptyPanel(content.empty, theme, top, options.borderRadius);
  return {
    before: openSvg(WIDTH, height, titleOf(content, options, now)),
    after: [
      `${css(theme, options.animated)}</style>`,
      cardBackground(WIDTH, height, options, theme),
      header(content, options, safeImage(given.avatar)),
      body,
      '</svg>',
    ].join(''),
  };
}

function css(theme: Theme, animated: boolean): string {
  const size = (font: FontSpec) => `font-size:${font.size}px`;
  return [
    `text{font-family:${FONT_STACK}}`,
    `.emoji{font-family:${EMOJI_STACK}}`,
    `.name{${size(FONTS.name)};font-weight:700;fill:${theme.text}}`,
    `.heading{${size(FONTS.heading)};fill:${theme.muted}}`,
    `.label{${size(FONTS.label)};font-weight:700;letter-spacing:${LABEL_SPACING}em;fill:${theme.muted}}`,
    `.song{${size(FONTS.song)};font-weight:700;fill:${theme.text}}`,
    `.artist{${size(FONTS.artist)};fill:${theme.muted}}`,
    `.meta{${size(FONTS.meta)};fill:${theme.muted};font-variant-numeric:tabular-nums}`,
    // Placed after its badge by its measured width, which knows no kerning.
    `.source{${size(FONTS.meta)};fill:${theme.muted};font-kerning:none}`,
    `.now{${size(FONTS.now)};font-weight:700}`,
    `.rank{${size(FONTS.rank)};font-weight:700;fill:${theme.muted};font-variant-numeric:tabular-nums}`,
    `.empty{${size(FONTS.empty)};font-style:italic;fill:${theme.muted}}`,
    '.initial{font-weight:700;fill:#fff}',
    animated ? EQUALIZER_CSS : '',
  ].join('');
}

/** The user's avatar, name and the list's name; or, with `hideProfile`, the list's name alone. */
function header(content: TrackCardContent, options: CardOptions, image: string | null): string {
  if (options.hideProfile) {
    return `<text x="${PAD}" y="28" class="label">${escapeXml(content.heading.toUpperCase())}</text>`;
  }
  const room = RIGHT - NAME_X;
  return [
    avatar(content.user, { avatar: image, decoration: null }, PAD, AVATAR, RING_WIDTH, 16),
    `<text x="${NAME_X}" y="35" class="name">${userText(truncate(content.user.displayName, room, FONTS.name))}</text>`,
    `<text x="${NAME_X}" y="54" class="heading">${escapeXml(truncate(content.heading, room, FONTS.heading))}</text>`,
  ].join('');
}

/** What the right column says on a row's first line, and how wide it is. */
function detailOf(
  content: TrackCardContent,
  row: TrackRow,
  options: CardOptions,
  now: number,
): { text: string; width: number; nowPlaying: boolean } | null {
  if (row.nowPlaying) {
    return {
      text: NOW_PLAYING,
      width: EQUALIZER_WIDTH + NOW_GAP + textWidth(NOW_PLAYING, FONTS.now),
      nowPlaying: true,
    };
  }
  if (options.hideTimestamp) return null;
  const text =
    content.kind === 'top'
      ? `${row.plays} ${row.plays === 1 ? 'play' : 'plays'}`
      : row.playedAt === null
        ? null
        : formatAgo(now - row.playedAt);
  return text === null ? null : { text, width: textWidth(text, FONTS.meta), nowPlaying: false };
}

function sourceWidth(row: TrackRow): number {
  return SOURCE_ICON + ICON_GAP + textWidth(SOURCE_LABELS[row.source], FONTS.meta);
}

/**
 * The rows. The right column is as wide as its widest text on any row, so every title is cut at the same
 * place and the column reads as one.
 */
function rows(
  content: TrackCardContent,
  options: CardOptions,
  theme: Theme,
  images: TrackImages,
  top: number,
  now: number,
): string {
  const details = content.rows.map((row) => detailOf(content, row, options, now));
  const column = Math.max(
    ...content.rows.map((row, i) => Math.max(details[i]?.width ?? 0, sourceWidth(row))),
  );
  const artX = content.kind === 'top' ? PAD + RANK_WIDTH : PAD;
  const textX = artX + ART + TEXT_GAP;
  const textRight = RIGHT - column - COLUMN_GAP;
  const room = textRight - textX;
  const height = content.rows.length * ROW_HEIGHT;

  const parts: string[] = [
    `<clipPath id="track-text"><rect x="${textX - 2}" y="${top}" width="${num(room + 4)}" height="${height}"/></clipPath>`,
  ];
  const texts: string[] = [];
  content.rows.forEach((row, i) => {
    const y = top + i * ROW_HEIGHT;
    const colour = SOURCE_COLOURS[row.source];
    if (i > 0) {
      parts.push(
        `<rect x="${PAD}" y="${y}" width="${RIGHT - PAD}" height="1" fill="${theme.border}" fill-opacity="${theme.borderOpacity}"/>`,
      );
    }
    if (content.kind === 'top') {
      parts.push(
        `<text x="${PAD + RANK_WIDTH / 2 - 3}" y="${y + 33}" class="rank" text-anchor="middle">${i + 1}</text>`,
      );
    }
    const artY = y + (ROW_HEIGHT - ART) / 2;
    const tile = { id: `row-${i}`, x: artX, y: artY, size: ART, radius: ART_RADIUS };
    parts.push(artTile(safeImage(images.art[i]), tile, colour, musicNote(artX + 10, artY + 10, 24)));

    texts.push(
      `<text x="${textX}" y="${y + 24}" class="song">${userText(truncate(row.song, room, FONTS.song))}</text>`,
    );
    if (row.artist !== null) {
      texts.push(
        `<text x="${textX}" y="${y + 42}" class="artist">${userText(truncate(row.artist, room, FONTS.artist))}</text>`,
      );
    }

    const detail = details[i];
    if (detail?.nowPlaying) {
      const textStart = RIGHT - textWidth(NOW_PLAYING, FONTS.now);
      parts.push(
        equalizer(textStart - NOW_GAP, y + 23, colour, options.animated),
        `<text x="${RIGHT}" y="${y + 24}" class="now" fill="${colour}" text-anchor="end">${NOW_PLAYING}</text>`,
      );
    } else if (detail) {
      parts.push(
        `<text x="${RIGHT}" y="${y + 24}" class="meta" text-anchor="end">${escapeXml(detail.text)}</text>`,
      );
    }
    parts.push(sourceBadge(row, y + 42));
  });
  parts.push(`<g clip-path="url(#track-text)">${texts.join('')}</g>`);
  return parts.join('');
}

/** Where the track was played: a disc in the service's colour with a note on it, and the service's name. */
function sourceBadge(row: TrackRow, baseline: number): string {
  const label = SOURCE_LABELS[row.source];
  const centreX = RIGHT - textWidth(label, FONTS.meta) - ICON_GAP - SOURCE_ICON / 2;
  const centreY = baseline - 4;
  const note = SOURCE_ICON * 0.7;
  return (
    `<circle cx="${num(centreX)}" cy="${centreY}" r="${SOURCE_ICON / 2}" fill="${SOURCE_COLOURS[row.source]}"/>` +
    musicNote(centreX - note / 2, centreY - note / 2, note) +
    `<text x="${RIGHT}" y="${baseline}" class="source" text-anchor="end">${escapeXml(label)}</text>`
  );
}

/** The card without rows: its message in a panel, as the status card's idle panel. */
function emptyPanel(message: string, theme: Theme, top: number, borderRadius: number): string {
  const radius = borderRadius === 0 ? 0 : Math.min(28, Math.max(6, borderRadius - 8));
  const x = EMPTY_PANEL_X + 16;
  const text = truncate(message, WIDTH - EMPTY_PANEL_X - 16 - x, FONTS.empty);
  return (
    `<rect x="${EMPTY_PANEL_X}" y="${top}" width="${WIDTH - 2 * EMPTY_PANEL_X}" height="${EMPTY_PANEL_HEIGHT}" rx="${num(radius)}" fill="${theme.panel}" fill-opacity="${theme.panelOpacity}"/>` +
    `<text x="${x}" y="${top + EMPTY_PANEL_HEIGHT / 2 + 5}" class="empty">${userText(text)}</text>`
  );
}

/** The card in words, for screen readers and as the tooltip: what it shows, and no more. */
function titleOf(content: TrackCardContent, options: CardOptions, now: number): string {
  const user = content.user;
  if (!user.monitored) return `${user.userId}: ${user.displayName.toLowerCase()}`;
  const who = user.username === null ? user.displayName : `${user.displayName} (@${user.username})`;
  if (content.rows.length === 0) return `${who}: ${content.heading}: ${content.empty}`;
  const listed = content.rows.map((row) => {
    const by = row.artist === null ? '' : ` by ${row.artist}`;
    const when = row.nowPlaying
      ? ' (now playing)'
      : options.hideTimestamp
        ? ''
        : row.plays !== null
          ? ` (${row.plays} plays)`
          : row.playedAt !== null
            ? ` (${formatAgo(now - row.playedAt)})`
            : '';
    return `${row.song}${by} on ${SOURCE_LABELS[row.source]}${when}`;
  });
  return `${who}: ${content.heading}: ${listed.join('; ')}`;
}
