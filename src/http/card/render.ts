import { clockSvg, formatAgo, formatClock } from './clock.js';
import type { CardActivity, CardContent, CardIdle, CardMusic } from './content.js';
import {
  artTile,
  avatar,
  cardBackground,
  colour,
  EMOJI_STACK,
  EQUALIZER_CSS,
  equalizer,
  FONT_STACK,
  initial,
  musicNote,
  openSvg,
  prefixed,
  safeImage,
  statusColour,
} from './draw.js';
import { escapeXml, userText } from './escape.js';
import { fontFaceFor } from './font.js';
import type { CardOptions } from './options.js';
import { num } from './svg.js';
import { ACCENT, SOURCE_COLOURS, SOURCE_LABELS, STATUS_LABELS, THEMES, type Theme } from './theme.js';
import { type FontSpec, textWidth, truncate } from './truncate.js';

/**
 * The card as SVG, built as a string from what `cardContent` decided and the images already fetched: no
 * I/O, no clock but `now`. Every user string passes through `cleanText` (in content.ts), `truncate` and
 * `userText` (isolated and escaped); everything else in the markup is ours.
 */

/** The images of one card as `data:` URIs; null draws a placeholder. */
export interface CardImages {
  avatar: string | null;
  emoji: string | null;
  /** The album art or the activity's image. */
  art: string | null;
  /** The server tag's badge. */
  badge: string | null;
  decoration: string | null;
  /** The images of the activities in panels below the main one, in their order; absent: placeholders. */
  more?: readonly (string | null)[];
}

export const CARD_WIDTH = 480;
const PAD = 20;
const AVATAR = 80;
const RING_WIDTH = 3;
const HEADER_HEIGHT = 120;
const TEXT_X = PAD + AVATAR + 22;
const TEXT_RIGHT = CARD_WIDTH - PAD;

const PANEL_X = 12;
const PANEL_WIDTH = CARD_WIDTH - 2 * PANEL_X;
const PANEL_HEIGHT = 100;
/** Between stacked panels. */
const PANEL_GAP = 8;
const IDLE_PANEL_HEIGHT = 52;
const BOTTOM = 12;
const ART = 72;
const ART_X = PANEL_X + 12;
const PANEL_TEXT_X = ART_X + ART + 16;
const PANEL_TEXT_RIGHT = PANEL_X + PANEL_WIDTH - 16;
const BAR_HEIGHT = 4;
/** Between a time and the progress bar. */
const TIME_GAP = 10;

export const COMPACT_WIDTH = 400;
const COMPACT_HEIGHT = 80;
const COMPACT_PAD = 16;
const COMPACT_AVATAR = 48;
const COMPACT_FONTS = {
  name: { size: 17, bold: true },
  line: { size: 13 },
} satisfies Record<string, FontSpec>;
/** Between the name and the server tag. */
const TAG_GAP = 8;
const TAG_HEIGHT = 20;
const TAG_BADGE = 14;
const TAG_PADDING = 6;

const FONTS = {
  name: { size: 22, bold: true },
  sub: { size: 14 },
  status: { size: 14 },
  label: { size: 11, bold: true },
  tag: { size: 12, bold: true },
  title: { size: 16, bold: true },
  line: { size: 13 },
  time: { size: 11 },
  idle: { size: 14 },
} satisfies Record<string, FontSpec>;
/** Labels are spaced out; the estimate has to know. */
const LABEL_SPACING = 0.08;

/** Material Design's clock face (Apache 2.0), 24×24. */
const CLOCK_PATH =
  'M11.99 2C6.47 2 2 6.48 2 12s4.47 10 9.99 10C17.52 22 22 17.52 22 12S17.52 2 11.99 2zM12 20c-4.42 0-8-3.58-8-8s3.58-8 8-8 8 3.58 8 8-3.58 8-8 8zm.5-13H11v6l5.25 3.15.75-1.23-4.5-2.67z';

const ACTIVITY_LABELS: Record<number, string> = {
  0: 'Playing',
  1: 'Streaming',
  2: 'Listening to',
  3: 'Watching',
  5: 'Competing in',
};

/** Where the panel starts: below the header, or at the card's top margin without one. */
function panelTop(options: CardOptions): number {
  return options.hideProfile ? PANEL_X : HEADER_HEIGHT;
}

export function cardHeight(content: CardContent, options: CardOptions): number {
  if (options.layout === 'compact') return COMPACT_HEIGHT;
  if (content.main === null) return HEADER_HEIGHT;
  const panel = content.main.kind === 'idle' ? IDLE_PANEL_HEIGHT : PANEL_HEIGHT;
  return panelTop(options) + panel + content.more.length * (PANEL_HEIGHT + PANEL_GAP) + BOTTOM;
}

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
 * The card as the markup before its font and after it: the font's @font-face rules (`fontFaceFor`, most
 * of a card's bytes) follow from the text after, so the route sends them as bytes made once for a set of
 * characters and hashes the text alone for the ETag, and the PNG renderer, which reads no @font-face,
 * goes without them.
 */
export function renderCardParts(
  content: CardContent,
  options: CardOptions,
  given: CardImages,
  now: number,
): { before: string; after: string } {
  const images: CardImages = {
    avatar: safeImage(given.avatar),
    emoji: safeImage(given.emoji),
    art: safeImage(given.art),
    badge: safeImage(given.badge),
    decoration: safeImage(given.decoration),
  };
  const theme = THEMES[options.theme];
  if (options.layout === 'compact') return compactParts(content, options, images, theme, now);
  const moreArt = content.more.map((_, i) => safeImage(given.more?.[i]));
  const height = cardHeight(content, options);
  const top = panelTop(options);
  const radius = options.borderRadius;
  const panelRadius = radius === 0 ? 0 : Math.min(28, Math.max(6, radius - 8));

  const main = content.main;
  // A stale presence's activities are what was last known of them.
  const lastKnown = content.unknownSince !== null;
  const panel =
    main === null
      ? ''
      : main.kind === 'music'
        ? musicPanel(main, options, theme, images.art, top, panelRadius, now, lastKnown)
        : main.kind === 'activity'
          ? activityPanel(main, options, theme, images.art, top, panelRadius, now, lastKnown)
          : idlePanel(main, theme, top, panelRadius);
  const more = content.more.map((activity, i) =>
    activityPanel(
      activity,
      options,
      theme,
      moreArt[i] ?? null,
      top + (i + 1) * (PANEL_HEIGHT + PANEL_GAP),
      panelRadius,
      now,
      lastKnown,
    ),
  );

  const before = openSvg(CARD_WIDTH, height, titleOf(content, now));
  const after = [
    `${css(theme, options.animated)}</style>`,
    '<defs>',
    `<clipPath id="header-text"><rect x="${TEXT_X - 2}" y="0" width="${TEXT_RIGHT - TEXT_X + 4}" height="${HEADER_HEIGHT}"/></clipPath>`,
    '</defs>',
    cardBackground(CARD_WIDTH, height, options, theme),
    options.hideProfile ? '' : header(content, images, theme, options, now),
    panel,
    ...more,
    '</svg>',
  ].join('');
  return { before, after };
}

/** The status in words: never a confident one while the presence is stale. */
function statusLabel(content: CardContent, now: number): string {
  return content.unknownSince === null
    ? STATUS_LABELS[content.status]
    : `Status unknown since ${formatAgo(now - content.unknownSince)}`;
}

/**
 * The compact card: one row, the avatar (ringed, decorated) beside the name and one line of what the user
 * is doing (the music, the main activity, the custom status or the idle message), and for music a thin bar
 * along the bottom that fills as the track plays.
 */
function compactParts(
  content: CardContent,
  options: CardOptions,
  images: CardImages,
  theme: Theme,
  now: number,
): { before: string; after: string } {
  const size = COMPACT_AVATAR;
  const x = COMPACT_PAD + size + 14;
  const right = COMPACT_WIDTH - COMPACT_PAD;
  const parts: string[] = [
    cardBackground(COMPACT_WIDTH, COMPACT_HEIGHT, options, theme),
    avatar(content, images, COMPACT_PAD, size, 2, 22),
  ];

  const tag = content.tag === null ? null : serverTag(content.tag, images.badge, theme, options);
  const nameRoom = right - x - (tag === null ? 0 : tag.width + TAG_GAP);
  const name = truncate(content.displayName, nameRoom, COMPACT_FONTS.name);
  const texts = [`<text x="${x}" y="36" class="cname">${userText(name)}</text>`];
  if (tag !== null) texts.push(tag.svg(x + textWidth(name, COMPACT_FONTS.name) + TAG_GAP, 36));

  const main = content.main;
  const line = (prefix: string, text: string) =>
    `<text x="${x}" y="58" class="cline">${escapeXml(prefix)}${userText(truncate(text, right - x - textWidth(prefix, COMPACT_FONTS.line), COMPACT_FONTS.line))}</text>`;
  if (main?.kind === 'music') {
    const by = main.artist === null ? '' : ` · ${main.artist}`;
    texts.push(line(`${SOURCE_LABELS[main.source]}: `, `${main.song}${by}`));
    if (main.start !== null && main.end !== null) {
      const duration = main.end - main.start;
      const elapsed = Math.min(Math.max(0, now - main.start), duration);
      const width = right - x;
      const filled = (width * elapsed) / duration;
      const remaining = (duration - elapsed) / 1000;
      parts.push(
        `<rect x="${x}" y="66" width="${width}" height="3" rx="1.5" fill="${theme.text}" fill-opacity="${theme.trackOpacity}"/>`,
        `<rect x="${x}" y="66" width="${num(filled)}" height="3" rx="1.5" fill="${SOURCE_COLOURS[main.source]}">` +
          (options.animated && remaining > 0
            ? `<animate attributeName="width" from="${num(filled)}" to="${width}" dur="${num(remaining, 3)}s" fill="freeze"/>`
            : '') +
          '</rect>',
      );
    }
  } else if (main?.kind === 'activity') {
    texts.push(line(`${ACTIVITY_LABELS[main.type] ?? 'Playing'} `, main.name));
  } else if (content.customStatus?.text) {
    texts.push(line('', content.customStatus.text));
  } else if (main?.kind === 'idle') {
    texts.push(line('', main.message));
  }
  parts.push(
    `<clipPath id="compact-text"><rect x="${x - 2}" y="0" width="${right - x + 4}" height="${COMPACT_HEIGHT}"/></clipPath>`,
    `<g clip-path="url(#compact-text)">${texts.join('')}</g>`,
    '</svg>',
  );
  const style = [
    `text{font-family:${FONT_STACK}}`,
    `.emoji{font-family:${EMOJI_STACK}}`,
    `.cname{font-size:${COMPACT_FONTS.name.size}px;font-weight:700;fill:${theme.text}}`,
    `.cline{font-size:${COMPACT_FONTS.line.size}px;fill:${theme.muted}}`,
    `.tag{font-size:${FONTS.tag.size}px;font-weight:700;fill:${theme.text}}`,
    '.initial{font-weight:700;fill:#fff}',
  ].join('');
  return {
    before: openSvg(COMPACT_WIDTH, COMPACT_HEIGHT, titleOf(content, now)),
    after: `${style}</style>${parts.join('')}`,
  };
}

/** The stylesheet after the @font-face rules. */
function css(theme: Theme, animated: boolean): string {
  const rules = [
    `text{font-family:${FONT_STACK}}`,
    `.emoji{font-family:${EMOJI_STACK}}`,
    `.name{font-size:${FONTS.name.size}px;font-weight:700;fill:${theme.text}}`,
    `.sub{font-size:${FONTS.sub.size}px;fill:${theme.muted}}`,
    `.sub .st{font-weight:600;fill:${theme.text}}`,
    `.cs{font-size:${FONTS.status.size}px;fill:${theme.text}}`,
    `.tag{font-size:${FONTS.tag.size}px;font-weight:700;fill:${theme.text}}`,
    `.label{font-size:${FONTS.label.size}px;font-weight:700;letter-spacing:${LABEL_SPACING}em;fill:${theme.muted}}`,
    `.title{font-size:${FONTS.title.size}px;font-weight:700;fill:${theme.text}}`,
    `.line{font-size:${FONTS.line.size}px;fill:${theme.text}}`,
    `.faint{font-size:${FONTS.line.size}px;fill:${theme.muted}}`,
    `.time{font-size:${FONTS.time.size}px;fill:${theme.muted};font-variant-numeric:tabular-nums}`,
    `.idle{font-size:${FONTS.idle.size}px;font-style:italic;fill:${theme.muted}}`,
    '.initial{font-weight:700;fill:#fff}',
  ];
  if (animated) rules.push(EQUALIZER_CSS);
  return rules.join('');
}

function header(
  content: CardContent,
  images: CardImages,
  theme: Theme,
  options: CardOptions,
  now: number,
): string {
  const parts: string[] = [avatar(content, images, PAD, AVATAR, RING_WIDTH, 34)];

  const hasStatusLine = content.customStatus !== null;
  const nameY = hasStatusLine ? 44 : 53;
  const subY = nameY + 23;
  const textWidthAvailable = TEXT_RIGHT - TEXT_X;
  const tag = content.tag === null ? null : serverTag(content.tag, images.badge, theme, options);
  const name = truncate(
    content.displayName,
    textWidthAvailable - (tag === null ? 0 : tag.width + TAG_GAP),
    FONTS.name,
  );
  const texts: string[] = [`<text x="${TEXT_X}" y="${nameY}" class="name">${userText(name)}</text>`];
  if (tag !== null) texts.push(tag.svg(TEXT_X + textWidth(name, FONTS.name) + TAG_GAP, nameY));

  // The second line: a status dot, the status, and the @handle (or the id of an unmonitored user).
  const dotX = TEXT_X + 4;
  const label = statusLabel(content, now);
  texts.push(`<circle cx="${dotX}" cy="${subY - 5}" r="4" fill="${statusColour(content)}"/>`);
  const subX = TEXT_X + 13;
  const separator = ' · ';
  let sub: string;
  if (!content.monitored) {
    sub = `<tspan>ID ${userText(truncate(content.userId, TEXT_RIGHT - subX - 20, FONTS.sub))}</tspan>`;
  } else {
    // An unknown status is muted, as the handle is.
    const labelClass = content.unknownSince === null ? ' class="st"' : '';
    sub = `<tspan${labelClass}>${escapeXml(label)}</tspan>`;
    if (content.username !== null) {
      const room = TEXT_RIGHT - subX - textWidth(label, { ...FONTS.sub, bold: true });
      sub += `<tspan>${prefixed(`${separator}@`, content.username, room, FONTS.sub)}</tspan>`;
    }
  }
  texts.push(`<text x="${subX}" y="${subY}" class="sub">${sub}</text>`);

  const status = content.customStatus;
  if (status !== null) {
    const y = subY + 24;
    let x = TEXT_X;
    let prefix = '';
    if (status.emoji !== null && status.emoji.url !== null && images.emoji !== null) {
      texts.push(`<image href="${images.emoji}" x="${x}" y="${y - 15}" width="18" height="18"/>`);
      x += 24;
    } else if (status.emoji !== null && status.emoji.url === null) {
      prefix = `${status.emoji.name} `;
    } else if (status.emoji !== null && status.text === null) {
      // A custom emoji whose image failed and no text: its name says something, an empty line nothing.
      prefix = `:${status.emoji.name}:`;
    }
    const line = truncate(`${prefix}${status.text ?? ''}`, TEXT_RIGHT - x, FONTS.status);
    if (line !== '') texts.push(`<text x="${x}" y="${y}" class="cs">${userText(line)}</text>`);
  }
  parts.push(`<g clip-path="url(#header-text)">${texts.join('')}</g>`);
  return parts.join('');
}

/**
 * The server tag's pill: the badge and the tag, on the theme's tag colour (or `clanBackgroundColor`).
 * Placed after the name, whose width the pill's is taken from first.
 */
function serverTag(
  tag: { text: string },
  badge: string | null,
  theme: Theme,
  options: CardOptions,
): { width: number; svg: (x: number, baseline: number) => string } {
  const badgeRoom = badge === null ? 0 : TAG_BADGE + 4;
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
          `<image href="${badge}" x="${num(x + TAG_PADDING)}" y="${y + (TAG_HEIGHT - TAG_BADGE) / 2}" width="${TAG_BADGE}" height="${TAG_BADGE}"/>`,
        );
      }
      parts.push(
        `<text x="${num(x + TAG_PADDING + badgeRoom)}" y="${y + 14}" class="tag">${userText(tag.text)}</text>`,
      );
      return `<g class="server-tag">${parts.join('')}</g>`;
    },
  };
}

function panelBackground(theme: Theme, top: number, height: number, radius: number): string {
  return `<rect x="${PANEL_X}" y="${top}" width="${PANEL_WIDTH}" height="${height}" rx="${num(radius)}" fill="${theme.panel}" fill-opacity="${theme.panelOpacity}"/>`;
}

/** A panel's text, clipped to the panel; its id names the panel by its top, unique in the card. */
function panelText(top: number, radius: number, texts: readonly string[]): string {
  return (
    `<clipPath id="panel-text-${top}"><rect x="${PANEL_X}" y="${top}" width="${PANEL_WIDTH}" height="${PANEL_HEIGHT}" rx="${num(radius)}"/></clipPath>` +
    `<g clip-path="url(#panel-text-${top})">${texts.join('')}</g>`
  );
}

/** The panel's album art or activity image, or a placeholder tile in `fill` with `glyph` on it. */
function artwork(image: string | null, top: number, radius: number, fill: string, glyph: string): string {
  const tile = {
    id: String(top),
    x: ART_X,
    y: top + (PANEL_HEIGHT - ART) / 2,
    size: ART,
    radius: Math.min(8, radius),
  };
  return artTile(image, tile, fill, glyph);
}

function labelText(text: string, x: number, y: number): string {
  return `<text x="${x}" y="${y}" class="label">${escapeXml(text.toUpperCase())}</text>`;
}

function musicPanel(
  music: CardMusic,
  options: CardOptions,
  theme: Theme,
  art: string | null,
  top: number,
  radius: number,
  now: number,
  lastKnown: boolean,
): string {
  const colour = SOURCE_COLOURS[music.source];
  const artY = top + (PANEL_HEIGHT - ART) / 2;
  const note = musicNote(ART_X + 18, artY + 18, 36);
  const right = PANEL_TEXT_RIGHT;
  const width = right - PANEL_TEXT_X;

  const start = music.start;
  const end = music.end;
  const duration = start !== null && end !== null ? end - start : null;
  const elapsed = start === null ? null : now - start;
  // Without timestamps the player may be paused (Pear Desktop sends none then): the equalizer rests.
  const playing = elapsed !== null && (duration === null || elapsed < duration);

  const parts: string[] = [
    panelBackground(theme, top, PANEL_HEIGHT, radius),
    artwork(art, top, radius, colour, note),
    labelText(
      `${lastKnown ? 'Last heard' : 'Listening'} on ${SOURCE_LABELS[music.source]}`,
      PANEL_TEXT_X,
      top + 28,
    ),
    equalizer(right, top + 28, colour, options.animated && playing && !lastKnown),
  ];
  const texts: string[] = [
    `<text x="${PANEL_TEXT_X}" y="${top + 50}" class="title">${userText(truncate(music.song, width, FONTS.title))}</text>`,
  ];
  if (music.artist !== null) {
    texts.push(
      `<text x="${PANEL_TEXT_X}" y="${top + 69}" class="faint">${prefixed('by ', music.artist, width, FONTS.line)}</text>`,
    );
  }

  if (duration !== null && elapsed !== null) {
    texts.push(progress(Math.max(0, elapsed), duration, options, theme, colour, top + 84));
  } else if (music.album !== null) {
    texts.push(
      `<text x="${PANEL_TEXT_X}" y="${top + 87}" class="faint">${prefixed('on ', music.album, width, FONTS.line)}</text>`,
    );
  }
  parts.push(panelText(top, radius, texts));
  return parts.join('');
}

/**
 * The progress bar at `centreY`: filled to where the track is now, and (animated) filling the rest over
 * the time the track has left, so it reaches the end when the song does.
 */
function progress(
  elapsed: number,
  duration: number,
  options: CardOptions,
  theme: Theme,
  colour: string,
  centreY: number,
): string {
  const showTimes = !options.hideTimestamp;
  const total = formatClock(duration);
  // Both times are as wide as the longer one (the total); the bar takes the rest.
  const timeRoom = showTimes ? textWidth(total, FONTS.time) + TIME_GAP : 0;
  const barX = PANEL_TEXT_X + timeRoom;
  const barWidth = PANEL_TEXT_RIGHT - timeRoom - barX;
  const barY = centreY - BAR_HEIGHT / 2;
  const fraction = Math.min(1, elapsed / duration);
  const filled = barWidth * fraction;
  const remaining = (duration - Math.min(elapsed, duration)) / 1000;
  const animate = options.animated && remaining > 0;

  const parts = [
    `<rect x="${num(barX)}" y="${num(barY)}" width="${num(barWidth)}" height="${BAR_HEIGHT}" rx="${BAR_HEIGHT / 2}" fill="${theme.text}" fill-opacity="${theme.trackOpacity}"/>`,
    `<rect x="${num(barX)}" y="${num(barY)}" width="${num(filled)}" height="${BAR_HEIGHT}" rx="${BAR_HEIGHT / 2}" fill="${colour}">` +
      (animate
        ? `<animate attributeName="width" from="${num(filled)}" to="${num(barWidth)}" dur="${num(remaining, 3)}s" fill="freeze"/>`
        : '') +
      '</rect>',
  ];
  if (showTimes) {
    const y = centreY + 4;
    parts.push(
      clockSvg({
        x: PANEL_TEXT_X,
        y,
        anchor: 'start',
        fontSize: FONTS.time.size,
        className: 'time',
        elapsedMs: elapsed,
        stopMs: duration,
        animated: options.animated,
      }).svg,
      `<text x="${PANEL_TEXT_RIGHT}" y="${y}" class="time" text-anchor="end">${total}</text>`,
    );
  }
  return parts.join('');
}

function activityPanel(
  activity: CardActivity,
  options: CardOptions,
  theme: Theme,
  image: string | null,
  top: number,
  radius: number,
  now: number,
  lastKnown: boolean,
): string {
  const right = PANEL_TEXT_RIGHT;
  const artY = top + (PANEL_HEIGHT - ART) / 2;
  const parts: string[] = [
    panelBackground(theme, top, PANEL_HEIGHT, radius),
    artwork(image, top, radius, ACCENT, initial(activity.name, ART_X + ART / 2, artY + ART / 2, 32)),
  ];

  const texts: string[] = [];
  let labelRoom = right - PANEL_TEXT_X;
  if (activity.start !== null && !options.hideTimestamp && now >= activity.start) {
    const clock = clockSvg({
      x: right,
      y: top + 28,
      anchor: 'end',
      fontSize: FONTS.time.size,
      className: 'time',
      elapsedMs: now - activity.start,
      stopMs: null,
      animated: options.animated,
    });
    const iconSize = 11;
    const iconX = right - clock.width - iconSize - 4;
    texts.push(
      `<path d="${CLOCK_PATH}" fill="${theme.muted}" transform="translate(${num(iconX)} ${top + 28 - iconSize + 1}) scale(${num(iconSize / 24, 4)})"/>`,
      clock.svg,
    );
    labelRoom = iconX - 8 - PANEL_TEXT_X;
  }
  const doing = ACTIVITY_LABELS[activity.type] ?? 'Playing';
  const label = lastKnown ? `Last seen ${doing.toLowerCase()}` : doing;
  const labelWidth = textWidth(label.toUpperCase(), FONTS.label) * (1 + LABEL_SPACING);
  texts.push(labelWidth <= labelRoom ? labelText(label, PANEL_TEXT_X, top + 28) : '');

  const width = right - PANEL_TEXT_X;
  texts.push(
    `<text x="${PANEL_TEXT_X}" y="${top + 50}" class="title">${userText(truncate(activity.name, width, FONTS.title))}</text>`,
  );
  const lines = [
    activity.details === null ? null : { text: activity.details, className: 'line' },
    activity.state === null ? null : { text: activity.state, className: 'faint' },
  ].filter((line) => line !== null);
  lines.forEach((line, i) => {
    texts.push(
      `<text x="${PANEL_TEXT_X}" y="${top + 69 + i * 18}" class="${line.className}">${userText(truncate(line.text, width, FONTS.line))}</text>`,
    );
  });
  parts.push(panelText(top, radius, texts));
  return parts.join('');
}

function idlePanel(idle: CardIdle, theme: Theme, top: number, radius: number): string {
  const x = PANEL_X + 16;
  const text = truncate(idle.message, PANEL_X + PANEL_WIDTH - 16 - x, FONTS.idle);
  return (
    panelBackground(theme, top, IDLE_PANEL_HEIGHT, radius) +
    `<text x="${x}" y="${top + IDLE_PANEL_HEIGHT / 2 + 5}" class="idle">${userText(text)}</text>`
  );
}

/** The card in words, for screen readers and as the tooltip. */
function titleOf(content: CardContent, now: number): string {
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
    parts.push(`${(ACTIVITY_LABELS[main.type] ?? 'Playing').toLowerCase()} ${main.name}`);
  }
  return parts.join(' · ');
}
