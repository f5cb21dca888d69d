import { isKvKey } from '../kv/rules.js';

/**
 * What `<presently-presence>` takes: its attributes, and the same as the query of the iframe page
 * (`/v1/users/:id/embed`). No DOM here: the server reads these rules too.
 */

/** The script a page loads, `<base>/embed.js`: its folder is the instance it reads. */
export const SCRIPT_NAME = 'embed.js';

/** The element it defines. */
export const ELEMENT_NAME = 'presently-presence';

/** `theme`: `auto` follows the reader's system setting (prefers-color-scheme). */
export const THEMES = ['auto', 'light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];
export const DEFAULT_THEME: Theme = 'auto';

/** `layout`: a card with everything, one row, or a pill that sits in a line of text. */
export const LAYOUTS = ['full', 'compact', 'badge'] as const;
export type Layout = (typeof LAYOUTS)[number];
export const DEFAULT_LAYOUT: Layout = 'full';

/** The element's attributes; the iframe page takes all but `base` (it is its instance's own). */
export const ELEMENT_ATTRIBUTES = ['user', 'theme', 'layout', 'fields', 'base'] as const;

export interface EmbedOptions {
  theme: Theme;
  layout: Layout;
  /** KV keys to show, in the order given. */
  fields: string[];
}

/**
 * One of `allowed`, as HTML reads an enumerated attribute (case and surrounding spaces ignored): absent or
 * empty is the default; anything else is null.
 */
function choiceOf<T extends string>(
  allowed: readonly T[],
  fallback: T,
  value: string | null | undefined,
): T | null {
  const given = (value ?? '').trim().toLowerCase();
  if (given === '') return fallback;
  return allowed.find((choice) => choice === given) ?? null;
}

export const themeOf = (value: string | null | undefined): Theme | null =>
  choiceOf(THEMES, DEFAULT_THEME, value);

export const layoutOf = (value: string | null | undefined): Layout | null =>
  choiceOf(LAYOUTS, DEFAULT_LAYOUT, value);

/** KV fields one element shows at most: a card's worth. */
export const MAX_FIELDS = 20;

/**
 * `fields="mood, location"`: the KV keys named, each once, the first MAX_FIELDS of them; the items that
 * cannot be a key, and how many keys were past the cap.
 */
export function fieldsOf(value: string | null | undefined): {
  fields: string[];
  invalid: string[];
  extra: number;
} {
  const fields = new Set<string>();
  const invalid: string[] = [];
  let extra = 0;
  for (const item of (value ?? '').split(',')) {
    const key = item.trim();
    if (key === '') continue;
    if (!isKvKey(key)) invalid.push(key);
    else if (fields.has(key)) continue;
    else if (fields.size < MAX_FIELDS) fields.add(key);
    else extra++;
  }
  return { fields: [...fields], invalid, extra };
}
