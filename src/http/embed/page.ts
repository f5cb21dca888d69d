import { createHash } from 'node:crypto';
import { ELEMENT_NAME, type EmbedOptions, SCRIPT_NAME } from '../../embed/options.js';
import { Html, html } from '../page/html.js';

/**
 * `/v1/users/:id/embed`: `<presently-presence>` alone on a page, for an `<iframe>` where a site may run no
 * script of its own. The page is transparent and has no margin, so the frame shows the site behind the card.
 */

/** The page's one rule, allowed by its hash: nothing around the element, no background of its own. */
const PAGE_STYLE = 'html,body{margin:0;padding:0;background:transparent}';
const PAGE_STYLE_HASH = `'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'`;

/**
 * Where the element's images come from: the avatar link of this service (`'self'`), which redirects to
 * Discord's CDN (`DISCORD_CDN_URL`, named only when it is not HTTPS already), and album art and activity
 * images, which are the players' own HTTPS addresses.
 */
export function embedImageSources(cdnUrl: string): string[] {
  const cdn = new URL(cdnUrl);
  return ["'self'", ...(cdn.protocol === 'https:' ? [] : [cdn.origin]), 'https:'];
}

/**
 * The page's policy: embed.js and its reads of this service, its images, its one style; nothing else.
 * Any site may frame it (`frame-ancestors *`), which is what it is for.
 */
export function embedPagePolicy(cdnUrl: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "connect-src 'self'",
    `img-src ${embedImageSources(cdnUrl).join(' ')}`,
    `style-src ${PAGE_STYLE_HASH}`,
    "base-uri 'none'",
    "form-action 'none'",
    'frame-ancestors *',
  ].join('; ');
}

/**
 * The page for user `id`. The script is named relative to this page (`/v1/users/:id/embed`), so it is this
 * instance's under whatever path a proxy serves it, and the element reads the instance it came from.
 */
export function renderEmbedPage(id: string, options: EmbedOptions): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Discord presence of ${id}</title>
<style>${new Html(PAGE_STYLE)}</style>
<script src="../../../${SCRIPT_NAME}" defer></script>
</head>
<body>
<${ELEMENT_NAME} user="${id}" theme="${options.theme}" layout="${options.layout}" fields="${options.fields.join(',')}"></${ELEMENT_NAME}>
</body>
</html>
`.markup;
}
