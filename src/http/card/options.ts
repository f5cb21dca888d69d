import { ApiError } from '../errors.js';
import { type ThemeName, themeForBackground } from './theme.js';

/** What the card's query string may set, resolved to values the renderer uses as they are. */
export interface CardOptions {
  theme: ThemeName;
  /** `#rrggbb` or `#rrggbbaa`; null: the theme's background. */
  background: string | null;
  borderRadius: number;
  /** Hides the custom status (text and emoji). */
  hideStatus: boolean;
  /** Hides the elapsed time of an activity and the times beside the music progress bar. */
  hideTimestamp: boolean;
  /** Hides the game or app the user is in. */
  hideActivity: boolean;
  /** Hides Spotify / YouTube Music. */
  hideMusic: boolean;
  /** Shown when nothing else is: no music or activity (or both hidden). */
  idleMessage: string;
  /** false: a still card, no SMIL or CSS animation. */
  animated: boolean;
}

export const DEFAULT_BORDER_RADIUS = 12;
/** Beyond this the corners eat into the avatar and the text. */
export const MAX_BORDER_RADIUS = 40;
export const DEFAULT_IDLE_MESSAGE = 'Not doing anything right now';
/** Characters (code points) of `idleMessage`; one line of the card holds about this many. */
export const MAX_IDLE_MESSAGE_LENGTH = 100;

export const DEFAULT_CARD_OPTIONS: Readonly<CardOptions> = {
  theme: 'dark',
  background: null,
  borderRadius: DEFAULT_BORDER_RADIUS,
  hideStatus: false,
  hideTimestamp: false,
  hideActivity: false,
  hideMusic: false,
  idleMessage: DEFAULT_IDLE_MESSAGE,
  animated: true,
};

const BOOLEAN_VALUES = 'true, false, 1 or 0 (a bare `?name` means true)';

/**
 * Every query option with the description the schema (and so the OpenAPI description) carries. The names
 * are lanyard-profile-readme's, so links made for it keep working.
 */
export const CARD_QUERY_OPTIONS = {
  theme: 'dark or light (default dark; with `bg` and no theme: whichever reads on that background)',
  bg: 'background colour, hex: rgb, rgba, rrggbb or rrggbbaa, with or without # (encode # as %23)',
  borderRadius: `corner radius in px, 0 to ${MAX_BORDER_RADIUS} (default ${DEFAULT_BORDER_RADIUS}); "px" may follow`,
  hideStatus: `hide the custom status: ${BOOLEAN_VALUES}`,
  hideTimestamp: `hide the elapsed time and the track times: ${BOOLEAN_VALUES}`,
  hideActivity: `hide the game or app: ${BOOLEAN_VALUES}`,
  hideMusic: `hide Spotify and YouTube Music: ${BOOLEAN_VALUES}`,
  idleMessage: `shown when nothing else is, 1 to ${MAX_IDLE_MESSAGE_LENGTH} characters (default "${DEFAULT_IDLE_MESSAGE}")`,
  animated: `false for a still card: ${BOOLEAN_VALUES}`,
} as const;

export type CardQueryOption = keyof typeof CARD_QUERY_OPTIONS;

/**
 * The querystring schema: every option a string. The rules live in `parseCardOptions`, whose messages say
 * what is allowed; a schema-level enum or pattern would answer with the validator's wording instead.
 */
export const cardQuerySchema = {
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(CARD_QUERY_OPTIONS).map(([name, description]) => [name, { type: 'string', description }]),
  ),
} as const;

const HEX_COLOUR = /^#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
const RADIUS = /^(\d{1,3}(?:\.\d{1,2})?)(?:px)?$/i;

const invalid = (option: CardQueryOption, value: string, rule: string): ApiError =>
  new ApiError('invalid_query', `${option}: ${JSON.stringify(value.slice(0, 40))} is not valid; ${rule}`);

function booleanOption(name: CardQueryOption, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  switch (value.toLowerCase()) {
    case '':
    case 'true':
    case '1':
      return true;
    case 'false':
    case '0':
      return false;
    default:
      throw invalid(name, value, `use ${BOOLEAN_VALUES}`);
  }
}

/** `#rrggbb` / `#rrggbbaa` in lower case from any of the accepted spellings. */
function colourOption(value: string): string {
  const match = HEX_COLOUR.exec(value);
  if (!match?.[1]) throw invalid('bg', value, CARD_QUERY_OPTIONS.bg);
  const digits = match[1].toLowerCase();
  const full = digits.length <= 4 ? [...digits].map((digit) => digit + digit).join('') : digits;
  return `#${full}`;
}

/**
 * The options of a card request. Unknown parameters are ignored (README links often carry a cache-busting
 * `?v=2`); a known one with a value outside its rule is `400 invalid_query` naming the option and the rule.
 */
export function parseCardOptions(query: unknown): CardOptions {
  const raw: Partial<Record<CardQueryOption, string>> = {};
  if (typeof query === 'object' && query !== null) {
    for (const name of Object.keys(CARD_QUERY_OPTIONS) as CardQueryOption[]) {
      const value = (query as Record<string, unknown>)[name];
      if (value === undefined) continue;
      if (typeof value !== 'string') {
        throw new ApiError('invalid_query', `${name}: give it once, as one value`);
      }
      raw[name] = value;
    }
  }

  const background = raw.bg === undefined ? null : colourOption(raw.bg);
  let theme: ThemeName = DEFAULT_CARD_OPTIONS.theme;
  if (raw.theme !== undefined) {
    const value = raw.theme.toLowerCase();
    if (value !== 'dark' && value !== 'light') throw invalid('theme', raw.theme, 'use dark or light');
    theme = value;
  } else if (background !== null) {
    theme = themeForBackground(background);
  }

  let borderRadius = DEFAULT_BORDER_RADIUS;
  if (raw.borderRadius !== undefined) {
    const match = RADIUS.exec(raw.borderRadius);
    const value = match?.[1] === undefined ? Number.NaN : Number(match[1]);
    if (!(value >= 0 && value <= MAX_BORDER_RADIUS)) {
      throw invalid('borderRadius', raw.borderRadius, `use a number of px from 0 to ${MAX_BORDER_RADIUS}`);
    }
    borderRadius = value;
  }

  let idleMessage = DEFAULT_IDLE_MESSAGE;
  if (raw.idleMessage !== undefined) {
    const length = [...raw.idleMessage].length;
    if (raw.idleMessage.trim() === '' || length > MAX_IDLE_MESSAGE_LENGTH) {
      throw invalid('idleMessage', raw.idleMessage, `use 1 to ${MAX_IDLE_MESSAGE_LENGTH} characters`);
    }
    idleMessage = raw.idleMessage;
  }

  return {
    theme,
    background,
    borderRadius,
    hideStatus: booleanOption('hideStatus', raw.hideStatus, DEFAULT_CARD_OPTIONS.hideStatus),
    hideTimestamp: booleanOption('hideTimestamp', raw.hideTimestamp, DEFAULT_CARD_OPTIONS.hideTimestamp),
    hideActivity: booleanOption('hideActivity', raw.hideActivity, DEFAULT_CARD_OPTIONS.hideActivity),
    hideMusic: booleanOption('hideMusic', raw.hideMusic, DEFAULT_CARD_OPTIONS.hideMusic),
    idleMessage,
    animated: booleanOption('animated', raw.animated, DEFAULT_CARD_OPTIONS.animated),
  };
}
