import type { CardContent } from './content.js';
import { type CardParts, cardBackground, EMOJI_STACK, EQUALIZER_CSS, FONT_STACK, openSvg } from './draw.js';
import type { CardImages } from './images.js';
import { cardTitle } from './labels.js';
import {
  CARD_WIDTH,
  cardHeight,
  FONTS,
  HEADER_HEIGHT,
  LABEL_SPACING,
  PANEL_GAP,
  PANEL_HEIGHT,
  panelTop,
  TEXT_RIGHT,
  TEXT_X,
} from './layout.js';
import type { CardOptions } from './options.js';
import { activityPanel, idlePanel, musicPanel } from './panels.js';
import { profileHeader } from './profile-header.js';
import type { Theme } from './theme.js';

/**
 * The full card: the profile header (unless `hideProfile`), then the main panel (the music, an activity
 * or the idle message) and the panels of the activities after it. `moreArt` holds those panels' images.
 */
export function fullCardParts(
  content: CardContent,
  options: CardOptions,
  images: CardImages,
  moreArt: readonly (string | null)[],
  theme: Theme,
  now: number,
): CardParts {
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

  const before = openSvg(CARD_WIDTH, height, cardTitle(content, now));
  const after = [
    `${fullCardStyle(theme, options.animated)}</style>`,
    '<defs>',
    `<clipPath id="header-text"><rect x="${TEXT_X - 2}" y="0" width="${TEXT_RIGHT - TEXT_X + 4}" height="${HEADER_HEIGHT}"/></clipPath>`,
    '</defs>',
    cardBackground(CARD_WIDTH, height, options, theme),
    options.hideProfile ? '' : profileHeader(content, images, theme, options, now),
    panel,
    ...more,
    '</svg>',
  ].join('');
  return { before, after };
}

/** The stylesheet after the @font-face rules. */
function fullCardStyle(theme: Theme, animated: boolean): string {
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
