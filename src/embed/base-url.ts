import { SCRIPT_NAME } from './options.js';

/**
 * Where embed.js was loaded from, without the file name: the instance elements read unless `base` says
 * otherwise. A classic script is `document.currentScript` while it runs; a module script has none, so the
 * page's `<script>` that loads embed.js names it. Read once, as the script runs.
 */
function scriptFolder(): string {
  const current = document.currentScript;
  let src = current instanceof HTMLScriptElement ? current.src : '';
  if (src === '') {
    const loaders = [...document.querySelectorAll<HTMLScriptElement>('script[src]')].filter((script) =>
      new URL(script.src, location.href).pathname.endsWith(`/${SCRIPT_NAME}`),
    );
    src = loaders.at(-1)?.src ?? '';
  }
  return src === '' ? location.origin : (baseOf(new URL('.', src).href) ?? location.origin);
}

/** An instance's address as the client takes it (no trailing slash), if `value` is a web address. */
export function baseOf(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value, location.href);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

export const DEFAULT_BASE = scriptFolder();
