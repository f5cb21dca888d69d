import { lastQueryValue } from '../query-value.js';
import { type ThemeName, themeForBackground } from './theme.js';

/** What the card's query string may set, resolved to values the renderer uses as they are. */
export interface CardOptions {
  theme: ThemeName;
  /** `#rrggbb` or `#rrggbbaa`; null: the theme's background. */
  background: string | null;
  borderRadius: number;
  /** Hides the avatar, the name and the status: the card is the activity panel alone. */
  hideProfile: boolean;
  /** Hides the custom status (text and emoji). */
  hideStatus: boolean;
  /** Hides the elapsed time of an activity and the times beside the music progress bar. */
  hideTimestamp: boolean;
  /** Hides the game or app the user is in. */
  hideActivity: boolean;
  /** Leaves the panel out when it would show only the idle message. */
  hideIdle: boolean;
  /** Hides the music (every source). */
  hideMusic: boolean;
  /** Hides the server tag beside the name. */
  hideTag: boolean;
  /** Hides the avatar decoration. */
  hideDecoration: boolean;
  /** Activities of these applications are passed over. */
  ignoreAppIds: readonly string[];
  /** `#rrggbb` or `#rrggbbaa` behind the server tag; null: the theme's. */
  tagBackground: string | null;
  /** Shown when nothing else is: no music or activity (or both hidden). */
  idleMessage: string;
  /** false: a still card, no SMIL or CSS animation. */
  animated: boolean;
  /** Panels shown at most: the music, then activities, each in its own panel. */
  maxActivities: number;
  /** `compact`: one row, the avatar beside the name and one line of what the user is doing. */
  layout: 'full' | 'compact';
}

export const DEFAULT_BORDER_RADIUS = 12;
/** Beyond this the corners eat into the avatar and the text. */
export const MAX_BORDER_RADIUS = 40;
export const DEFAULT_IDLE_MESSAGE = 'Not doing anything right now';
/** Characters (code points) of `idleMessage`; one line of the card holds about this many. */
export const MAX_IDLE_MESSAGE_LENGTH = 100;
/** Application ids `ignoreAppId` may name: more than a card ever shows activities. */
export const MAX_IGNORED_APPS = 20;
/** Panels a card may stack: past a few, it is no longer a card. */
export const MAX_ACTIVITIES = 4;

export const DEFAULT_CARD_OPTIONS: Readonly<CardOptions> = {
  theme: 'dark',
  background: null,
  borderRadius: DEFAULT_BORDER_RADIUS,
  hideProfile: false,
  hideStatus: false,
  hideTimestamp: false,
  hideActivity: false,
  hideIdle: false,
  hideMusic: false,
  hideTag: false,
  hideDecoration: false,
  ignoreAppIds: [],
  tagBackground: null,
  idleMessage: DEFAULT_IDLE_MESSAGE,
  animated: true,
  maxActivities: 1,
  layout: 'full',
};

const BOOLEAN_VALUES = 'true or false (also 1/0, yes/no, on/off; a bare `?name` means true)';
const HEX = 'hex rgb, rgba, rrggbb or rrggbbaa, with or without # (encode # as %23)';
const NO_EFFECT = "accepted for lanyard-profile-readme's links; nothing to change here";

/**
 * Every query option with the description the schema (and so the OpenAPI description) carries. The names
 * are lanyard-profile-readme's, so links made for it work with the host changed.
 */
export const CARD_QUERY_OPTIONS = {
  theme: 'dark or light (default dark; with `bg` and no theme: whichever reads on that background)',
  bg: `background colour, ${HEX}`,
  borderRadius: `corner radius in px, 0 to ${MAX_BORDER_RADIUS} (default ${DEFAULT_BORDER_RADIUS}); "px" may follow`,
  hideProfile: `hide the avatar, name and status, leaving the activity: ${BOOLEAN_VALUES}`,
  hideStatus: `hide the custom status: ${BOOLEAN_VALUES}`,
  hideTimestamp: `hide the elapsed time and the track times: ${BOOLEAN_VALUES}`,
  hideActivity: `hide the game or app: ${BOOLEAN_VALUES}; whenNotUsed: leave the panel out when nothing plays`,
  hideMusic: `hide the music, whatever the app: ${BOOLEAN_VALUES}`,
  hideSpotify: 'the same as hideMusic (its name in lanyard-profile-readme)',
  hideTag: `hide the server tag: ${BOOLEAN_VALUES}`,
  hideDecoration: `hide the avatar decoration: ${BOOLEAN_VALUES}`,
  ignoreAppId: `application ids whose activities are passed over, comma-separated (at most ${MAX_IGNORED_APPS})`,
  clanBackgroundColor: `background of the server tag, ${HEX}`,
  idleMessage: `shown when nothing else is, 1 to ${MAX_IDLE_MESSAGE_LENGTH} characters (default "${DEFAULT_IDLE_MESSAGE}")`,
  animated: `false for a still card: ${BOOLEAN_VALUES}`,
  layout:
    'full (default) or compact: one row with the avatar, the name and one line of what the user is doing',
  maxActivities: `panels shown at most, 1 to ${MAX_ACTIVITIES} (default 1): the music, then the activities by kind`,
  showDisplayName: `${NO_EFFECT}: the card shows the display name and the @username`,
  hideBadges: `${NO_EFFECT}: the card shows no profile badges`,
  hideDiscrim: `${NO_EFFECT}: Discord has no discriminators any more`,
  animatedDecoration: `${NO_EFFECT}: the decoration is drawn still`,
} as const;

export type CardQueryOption = keyof typeof CARD_QUERY_OPTIONS;

/**
 * The querystring schema: every option a string (or repeated). The rules live in `parseCardOptions`, which
 * falls back where a value breaks one: a card is an image, and a README shows a refusal as a broken one.
 */
export const cardQuerySchema = {
  type: 'object',
  properties: Object.fromEntries(
    Object.entries(CARD_QUERY_OPTIONS).map(([name, description]) => [
      name,
      { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description },
    ]),
  ),
} as const;

/** The options, and what was wrong with the query: each problem names the option, its value and the rule. */
export interface ParsedCardOptions {
  options: CardOptions;
  problems: string[];
}

const HEX_COLOUR = /^#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;
const RADIUS = /^(\d{1,3}(?:\.\d{1,2})?)(?:px)?$/i;
const APPLICATION_ID = /^\d{17,20}$/;

const TRUE = new Set(['', 'true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/**
 * The options of a card request. Unknown parameters are ignored (README links often carry a cache-busting
 * `?v=2`); a repeated one counts once, its last value (as lanyard-profile-readme reads it); a value outside
 * its rule falls back to the default, and is listed among the problems.
 */
export function parseCardOptions(query: unknown): ParsedCardOptions {
  const raw: Partial<Record<CardQueryOption, string>> = {};
  for (const name of Object.keys(CARD_QUERY_OPTIONS) as CardQueryOption[]) {
    const value = lastQueryValue(query, name);
    if (value !== undefined) raw[name] = value;
  }
  const problems: string[] = [];
  const fallBack = (option: CardQueryOption, rule: string): void => {
    problems.push(`${option}: ${JSON.stringify((raw[option] ?? '').slice(0, 40))} is not valid; ${rule}`);
  };

  const bool = (option: CardQueryOption, fallback: boolean): boolean => {
    const value = raw[option]?.toLowerCase();
    if (value === undefined) return fallback;
    if (TRUE.has(value)) return true;
    if (FALSE.has(value)) return false;
    fallBack(option, `use ${BOOLEAN_VALUES}`);
    return fallback;
  };

  const colour = (option: 'bg' | 'clanBackgroundColor'): string | null => {
    const value = raw[option];
    if (value === undefined) return null;
    const digits = HEX_COLOUR.exec(value)?.[1]?.toLowerCase();
    if (digits === undefined) {
      fallBack(option, `use ${HEX}`);
      return null;
    }
    return `#${digits.length <= 4 ? [...digits].map((digit) => digit + digit).join('') : digits}`;
  };

  const background = colour('bg');
  let theme: ThemeName = background === null ? DEFAULT_CARD_OPTIONS.theme : themeForBackground(background);
  if (raw.theme !== undefined) {
    const value = raw.theme.toLowerCase();
    if (value === 'dark' || value === 'light') theme = value;
    else fallBack('theme', 'use dark or light');
  }

  let borderRadius = DEFAULT_BORDER_RADIUS;
  if (raw.borderRadius !== undefined) {
    const match = RADIUS.exec(raw.borderRadius);
    const value = match?.[1] === undefined ? Number.NaN : Number(match[1]);
    if (value >= 0 && value <= MAX_BORDER_RADIUS) borderRadius = value;
    else fallBack('borderRadius', `use a number of px from 0 to ${MAX_BORDER_RADIUS}`);
  }

  let idleMessage = DEFAULT_IDLE_MESSAGE;
  if (raw.idleMessage !== undefined) {
    const length = [...raw.idleMessage].length;
    if (raw.idleMessage.trim() !== '' && length <= MAX_IDLE_MESSAGE_LENGTH) idleMessage = raw.idleMessage;
    else fallBack('idleMessage', `use 1 to ${MAX_IDLE_MESSAGE_LENGTH} characters`);
  }

  let hideActivity = DEFAULT_CARD_OPTIONS.hideActivity;
  let hideIdle = DEFAULT_CARD_OPTIONS.hideIdle;
  if (raw.hideActivity?.toLowerCase() === 'whennotused') hideIdle = true;
  else hideActivity = bool('hideActivity', hideActivity);

  let maxActivities = DEFAULT_CARD_OPTIONS.maxActivities;
  if (raw.maxActivities !== undefined) {
    const value = /^\d$/.test(raw.maxActivities) ? Number(raw.maxActivities) : Number.NaN;
    if (value >= 1 && value <= MAX_ACTIVITIES) maxActivities = value;
    else fallBack('maxActivities', `use a whole number from 1 to ${MAX_ACTIVITIES}`);
  }

  let layout = DEFAULT_CARD_OPTIONS.layout;
  if (raw.layout !== undefined) {
    const value = raw.layout.toLowerCase();
    if (value === 'full' || value === 'compact') layout = value;
    else fallBack('layout', 'use full or compact');
  }

  let ignoreAppIds: string[] = [];
  if (raw.ignoreAppId !== undefined) {
    const ids = raw.ignoreAppId.split(',').map((id) => id.trim());
    if (ids.length <= MAX_IGNORED_APPS && ids.every((id) => APPLICATION_ID.test(id))) ignoreAppIds = ids;
    else
      fallBack('ignoreAppId', `use up to ${MAX_IGNORED_APPS} application ids (snowflakes), comma-separated`);
  }

  return {
    options: {
      theme,
      background,
      borderRadius,
      hideProfile: bool('hideProfile', DEFAULT_CARD_OPTIONS.hideProfile),
      hideStatus: bool('hideStatus', DEFAULT_CARD_OPTIONS.hideStatus),
      hideTimestamp: bool('hideTimestamp', DEFAULT_CARD_OPTIONS.hideTimestamp),
      hideActivity,
      hideIdle,
      // hideSpotify is lanyard-profile-readme's name: there, the only music is Spotify.
      hideMusic: bool('hideMusic', false) || bool('hideSpotify', false),
      hideTag: bool('hideTag', DEFAULT_CARD_OPTIONS.hideTag),
      hideDecoration: bool('hideDecoration', DEFAULT_CARD_OPTIONS.hideDecoration),
      ignoreAppIds,
      tagBackground: colour('clanBackgroundColor'),
      idleMessage,
      animated: bool('animated', DEFAULT_CARD_OPTIONS.animated),
      maxActivities,
      layout,
    },
    problems,
  };
}
