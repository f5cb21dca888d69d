import { escapeXml } from '../../card/escape.js';

/** Markup that is safe to put in a page as it is: built by `html`, never from a plain string. */
export class Html {
  constructor(readonly markup: string) {}
}

/** What a page's holes take: markup as it is; text and numbers escaped. */
export type HtmlValue = Html | string | number | readonly Html[];

function markupOf(value: HtmlValue): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map((item: Html) => item.markup).join('');
  return escapeXml(String(value));
}

/**
 * A template literal whose values are escaped unless they are `Html` already: whatever a request brings
 * (an id, the Host header) can only ever be text in the page.
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let markup = strings[0] ?? '';
  values.forEach((value, i) => {
    markup += markupOf(value) + (strings[i + 1] ?? '');
  });
  return new Html(markup);
}

const SLOT = /\{\{(\w+)\}\}/g;

/** Fills each `{{name}}` with its value, escaped as `html` escapes; a slot without a value is a bug. */
export function fillTemplate(template: string, values: Readonly<Record<string, HtmlValue>>): string {
  return template.replace(SLOT, (_slot, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`the page template has no value for {{${name}}}`);
    return markupOf(value);
  });
}
