import type { CardContent } from './content.js';
import type { CardOptions } from './options.js';
import type { FontSpec } from './truncate.js';

/**
 * The status card's measurements, in px: both layouts' sizes, where the full card's header and panels
 * go, and the fonts its text is set in (the compact card's server tag too).
 */

export const CARD_WIDTH = 480;
export const COMPACT_WIDTH = 400;
export const COMPACT_HEIGHT = 80;

export const PADDING = 20;
export const AVATAR_SIZE = 80;
export const HEADER_HEIGHT = 120;
/** Where the header's name and status lines start and end. */
export const TEXT_X = PADDING + AVATAR_SIZE + 22;
export const TEXT_RIGHT = CARD_WIDTH - PADDING;

export const PANEL_X = 12;
export const PANEL_WIDTH = CARD_WIDTH - 2 * PANEL_X;
export const PANEL_HEIGHT = 100;
/** Between stacked panels. */
export const PANEL_GAP = 8;
export const IDLE_PANEL_HEIGHT = 52;
/** Below the last panel. */
const BOTTOM_MARGIN = 12;

export const FONTS = {
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
export const LABEL_SPACING = 0.08;

/** Where the panel starts: below the header, or at the card's top margin without one. */
export function panelTop(options: CardOptions): number {
  return options.hideProfile ? PANEL_X : HEADER_HEIGHT;
}

export function cardHeight(content: CardContent, options: CardOptions): number {
  if (options.layout === 'compact') return COMPACT_HEIGHT;
  if (content.main === null) return HEADER_HEIGHT;
  const panel = content.main.kind === 'idle' ? IDLE_PANEL_HEIGHT : PANEL_HEIGHT;
  return panelTop(options) + panel + content.more.length * (PANEL_HEIGHT + PANEL_GAP) + BOTTOM_MARGIN;
}
