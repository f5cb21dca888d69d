import type { CardContent } from './content.js';
import { avatar, type CardParts, cardBackground, EMOJI_STACK, FONT_STACK, openSvg } from './draw.js';
import { escapeXml, userText } from './escape.js';
import type { CardImages } from './images.js';
import { activityLabel, cardTitle } from './labels.js';
import { COMPACT_HEIGHT, COMPACT_WIDTH, FONTS } from './layout.js';
import type { CardOptions } from './options.js';
import { serverTag, TAG_GAP } from './server-tag.js';
import { num } from './svg.js';
import { SOURCE_COLOURS, SOURCE_LABELS, type Theme } from './theme.js';
import { type FontSpec, textWidth, truncate } from './truncate.js';

const COMPACT_PADDING = 16;
const COMPACT_AVATAR_SIZE = 48;
const COMPACT_FONTS = {
  name: { size: 17, bold: true },
  line: { size: 13 },
} satisfies Record<string, FontSpec>;

/**
 * The compact card: one row, the avatar (ringed, decorated) beside the name and one line of what the user
 * is doing (the music, the main activity, the custom status or the idle message), and for music a thin bar
 * along the bottom that fills as the track plays.
 */
export function compactCardParts(
  content: CardContent,
  options: CardOptions,
  images: CardImages,
  theme: Theme,
  now: number,
): CardParts {
  const size = COMPACT_AVATAR_SIZE;
  const x = COMPACT_PADDING + size + 14;
  const right = COMPACT_WIDTH - COMPACT_PADDING;
  const parts: string[] = [
    cardBackground(COMPACT_WIDTH, COMPACT_HEIGHT, options, theme),
    avatar(content, images, COMPACT_PADDING, size, 2, 22),
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
    texts.push(line(`${activityLabel(main.type)} `, main.name));
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
    before: openSvg(COMPACT_WIDTH, COMPACT_HEIGHT, cardTitle(content, now)),
    after: `${style}</style>${parts.join('')}`,
  };
}
