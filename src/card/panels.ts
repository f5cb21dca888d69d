import { clockSvg, formatClock } from './clock.js';
import type { CardActivity, CardIdle, CardMusic } from './content.js';
import { artTile, equalizer, initial, musicNote, prefixed } from './draw.js';
import { escapeXml, userText } from './escape.js';
import { activityLabel } from './labels.js';
import { FONTS, IDLE_PANEL_HEIGHT, LABEL_SPACING, PANEL_HEIGHT, PANEL_WIDTH, PANEL_X } from './layout.js';
import type { CardOptions } from './options.js';
import { num } from './svg.js';
import { ACCENT, SOURCE_COLOURS, SOURCE_LABELS, type Theme } from './theme.js';
import { textWidth, truncate } from './truncate.js';

/**
 * The full card's panels, each `top` px down the card: the music (with its progress bar), an activity,
 * and the idle message. A panel's text is clipped to the panel.
 */

const ART_SIZE = 72;
const ART_X = PANEL_X + 12;
const PANEL_TEXT_X = ART_X + ART_SIZE + 16;
const PANEL_TEXT_RIGHT = PANEL_X + PANEL_WIDTH - 16;
const BAR_HEIGHT = 4;
/** Between a time and the progress bar. */
const TIME_GAP = 10;

/** Material Design's clock face (Apache 2.0), 24×24. */
const CLOCK_PATH =
  'M11.99 2C6.47 2 2 6.48 2 12s4.47 10 9.99 10C17.52 22 22 17.52 22 12S17.52 2 11.99 2zM12 20c-4.42 0-8-3.58-8-8s3.58-8 8-8 8 3.58 8 8-3.58 8-8 8zm.5-13H11v6l5.25 3.15.75-1.23-4.5-2.67z';

function panelBackground(theme: Theme, top: number, height: number, radius: number): string {
  return `<rect x="${PANEL_X}" y="${top}" width="${PANEL_WIDTH}" height="${height}" rx="${num(radius)}" fill="${theme.panel}" fill-opacity="${theme.panelOpacity}"/>`;
}

/** A panel's text, clipped to the panel; its id names the panel by its top, unique in the card. */
function clippedText(top: number, radius: number, texts: readonly string[]): string {
  return (
    `<clipPath id="panel-text-${top}"><rect x="${PANEL_X}" y="${top}" width="${PANEL_WIDTH}" height="${PANEL_HEIGHT}" rx="${num(radius)}"/></clipPath>` +
    `<g clip-path="url(#panel-text-${top})">${texts.join('')}</g>`
  );
}

/** The panel's album art or activity image, or a placeholder tile in `fill` with `glyph` on it. */
function panelArt(image: string | null, top: number, radius: number, fill: string, glyph: string): string {
  const tile = {
    id: String(top),
    x: ART_X,
    y: top + (PANEL_HEIGHT - ART_SIZE) / 2,
    size: ART_SIZE,
    radius: Math.min(8, radius),
  };
  return artTile(image, tile, fill, glyph);
}

/** The panel's first line, in spaced-out capitals: what the user is doing. */
function panelLabel(text: string, x: number, y: number): string {
  return `<text x="${x}" y="${y}" class="label">${escapeXml(text.toUpperCase())}</text>`;
}

export function musicPanel(
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
  const artY = top + (PANEL_HEIGHT - ART_SIZE) / 2;
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
    panelArt(art, top, radius, colour, note),
    panelLabel(
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
    texts.push(progressBar(Math.max(0, elapsed), duration, options, theme, colour, top + 84));
  } else if (music.album !== null) {
    texts.push(
      `<text x="${PANEL_TEXT_X}" y="${top + 87}" class="faint">${prefixed('on ', music.album, width, FONTS.line)}</text>`,
    );
  }
  parts.push(clippedText(top, radius, texts));
  return parts.join('');
}

/**
 * The progress bar at `centreY`: filled to where the track is now, and (animated) filling the rest over
 * the time the track has left, so it reaches the end when the song does.
 */
function progressBar(
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

export function activityPanel(
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
  const artY = top + (PANEL_HEIGHT - ART_SIZE) / 2;
  const parts: string[] = [
    panelBackground(theme, top, PANEL_HEIGHT, radius),
    panelArt(
      image,
      top,
      radius,
      ACCENT,
      initial(activity.name, ART_X + ART_SIZE / 2, artY + ART_SIZE / 2, 32),
    ),
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
  const doing = activityLabel(activity.type);
  const label = lastKnown ? `Last seen ${doing.toLowerCase()}` : doing;
  const labelWidth = textWidth(label.toUpperCase(), FONTS.label) * (1 + LABEL_SPACING);
  texts.push(labelWidth <= labelRoom ? panelLabel(label, PANEL_TEXT_X, top + 28) : '');

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
  parts.push(clippedText(top, radius, texts));
  return parts.join('');
}

export function idlePanel(idle: CardIdle, theme: Theme, top: number, radius: number): string {
  const x = PANEL_X + 16;
  const text = truncate(idle.message, PANEL_X + PANEL_WIDTH - 16 - x, FONTS.idle);
  return (
    panelBackground(theme, top, IDLE_PANEL_HEIGHT, radius) +
    `<text x="${x}" y="${top + IDLE_PANEL_HEIGHT / 2 + 5}" class="idle">${userText(text)}</text>`
  );
}
