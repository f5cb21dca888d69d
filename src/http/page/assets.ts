import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** A file the page loads, under a name that changes with its content: it can be cached for good. */
export interface PageAsset {
  /** `/page/<name>.<hash>.<ext>` */
  path: string;
  contentType: string;
  body: Buffer;
}

export interface PageAssets {
  /** index.html, with `{{slot}}`s the renderer fills. */
  template: string;
  /** legal.html: `/privacy` and `/terms`, the landing page's header and footer around `{{content}}`. */
  legal: string;
  stylesheet: PageAsset;
  script: PageAsset;
}

export const PAGE_ASSET_PREFIX = '/page/';

/**
 * Beside this module: src/http/page/static when run from source, dist/http/page/static after
 * `npm run build`, which copies the folder there (tsc compiles TypeScript only).
 */
const STATIC_DIR = new URL('./static/', import.meta.url);
const HASH_LENGTH = 12;

function assetOf(file: string, contentType: string): PageAsset {
  const body = readFileSync(new URL(file, STATIC_DIR));
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, HASH_LENGTH);
  const dot = file.lastIndexOf('.');
  return { path: `${PAGE_ASSET_PREFIX}${file.slice(0, dot)}.${hash}${file.slice(dot)}`, contentType, body };
}

/** Read once at start-up: the page costs no disk reads per request. */
export function loadPageAssets(): PageAssets {
  return {
    template: readFileSync(new URL('index.html', STATIC_DIR), 'utf8'),
    legal: readFileSync(new URL('legal.html', STATIC_DIR), 'utf8'),
    stylesheet: assetOf('page.css', 'text/css; charset=utf-8'),
    script: assetOf('viewer.js', 'text/javascript; charset=utf-8'),
  };
}
