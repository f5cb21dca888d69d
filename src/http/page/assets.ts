import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { browserScript, VIEWER_SCRIPT } from '../browser-scripts.js';

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
  /** The viewer: src/viewer/, bundled as embed.js is. */
  script: PageAsset;
}

export const PAGE_ASSET_PREFIX = '/page/';

/**
 * Beside this module: src/http/page/static when run from source, dist/http/page/static after
 * `npm run build`, which copies the folder there (tsc compiles TypeScript only). The script is not there:
 * it is bundled from src/viewer/.
 */
const STATIC_DIR = new URL('./static/', import.meta.url);
const HASH_LENGTH = 12;

function assetOf(file: string, contentType: string, body: Buffer): PageAsset {
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, HASH_LENGTH);
  const dot = file.lastIndexOf('.');
  return { path: `${PAGE_ASSET_PREFIX}${file.slice(0, dot)}.${hash}${file.slice(dot)}`, contentType, body };
}

/** Read once at start-up: the page costs no disk reads per request. */
export function loadPageAssets(): PageAssets {
  return {
    template: readFileSync(new URL('index.html', STATIC_DIR), 'utf8'),
    legal: readFileSync(new URL('legal.html', STATIC_DIR), 'utf8'),
    stylesheet: assetOf('page.css', 'text/css; charset=utf-8', readFileSync(new URL('page.css', STATIC_DIR))),
    script: assetOf('viewer.js', 'text/javascript; charset=utf-8', browserScript(VIEWER_SCRIPT)),
  };
}
