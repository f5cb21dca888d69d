import { h } from './dom.js';

/**
 * The element's stylesheet, in its shadow root: the page's rules cannot reach inside, and these cannot reach
 * out. `.card` starts from `all: initial`, so what a page sets on the element itself and would be inherited
 * (colour, font, sizes, visibility) stops there; sizes are in px, as a page may set the root font size too.
 * Colours are `--presently-*` custom properties, which do cross: the page's theming API (docs/embed.md).
 */

const LIGHT = [
  '--_bg:var(--presently-background,#ffffff)',
  '--_text:var(--presently-text,#1f2328)',
  '--_muted:var(--presently-muted,#59636e)',
  '--_border:var(--presently-border,#d1d9e0)',
  '--_accent:var(--presently-accent,#5865f2)',
  '--_track:var(--presently-track,#e6e8eb)',
].join(';');

const DARK = [
  '--_bg:var(--presently-background,#1e1f22)',
  '--_text:var(--presently-text,#f2f3f5)',
  '--_muted:var(--presently-muted,#b5bac1)',
  '--_border:var(--presently-border,#3f4147)',
  '--_accent:var(--presently-accent,#7983f5)',
  '--_track:var(--presently-track,#3f4147)',
].join(';');

export const CSS = [
  ':host{display:block}',
  ':host([layout="badge" i]){display:inline-block;vertical-align:middle}',
  ':host([hidden]){display:none}',
  `.card{all:initial;${LIGHT};--_online:var(--presently-online,#23a55a);--_idle:var(--presently-idle,#f0b232);--_dnd:var(--presently-dnd,#f23f43);--_offline:var(--presently-offline,#80848e);box-sizing:border-box;display:grid;gap:12px;max-width:var(--presently-max-width,440px);padding:16px;background:var(--_bg);color:var(--_text);border:1px solid var(--_border);border-radius:var(--presently-radius,12px);font-family:var(--presently-font,system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif);font-size:14px;line-height:20px;text-align:start;overflow:hidden;overflow-wrap:anywhere}`,
  `.card[data-theme=dark]{${DARK}}`,
  `@media (prefers-color-scheme:dark){.card[data-theme=auto]{${DARK}}}`,
  '.card *{box-sizing:border-box;margin:0;padding:0}',
  '.section+.section{border-top:1px solid var(--_border);padding-top:12px}',
  '.row{display:flex;gap:12px;align-items:center;min-width:0}',
  '.grow{flex:1;min-width:0}',
  '.avatar{position:relative;flex:none;width:56px;height:56px}',
  '.avatar img,.initial{display:block;width:100%;height:100%;border-radius:50%;object-fit:cover}',
  '.initial{display:flex;align-items:center;justify-content:center;background:var(--_accent);color:#fff;font-weight:600;font-size:22px}',
  '.dot{position:absolute;right:-2px;bottom:-2px;width:18px;height:18px;border-radius:50%;border:3px solid var(--_bg);background:var(--_offline)}',
  '.dot[data-status=online]{background:var(--_online)}',
  '.dot[data-status=idle]{background:var(--_idle)}',
  '.dot[data-status=dnd]{background:var(--_dnd)}',
  '.dot[data-status=unknown]{background:var(--_bg);border-color:var(--_offline);border-style:dashed}',
  '.name{font-size:16px;line-height:22px;font-weight:600}',
  '.line{display:block;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}',
  '.muted{color:var(--_muted)}',
  '.small{font-size:12px;line-height:16px}',
  '.label{font-size:12px;line-height:16px;font-weight:600;color:var(--_muted)}',
  '.strong{font-weight:600}',
  '.art{flex:none;width:56px;height:56px;border-radius:8px;object-fit:cover;background:var(--_track)}',
  '.glyph{display:flex;align-items:center;justify-content:center;color:var(--_muted);font-size:24px;font-weight:600}',
  '.times{display:flex;align-items:center;gap:8px;margin-top:6px;font-size:12px;line-height:16px;color:var(--_muted);font-variant-numeric:tabular-nums}',
  '.progress{flex:1;height:4px;border-radius:2px;background:var(--_track);overflow:hidden}',
  '.fill{height:100%;background:var(--_accent);transform-origin:0 50%;transform:scaleX(0)}',
  '@media (prefers-reduced-motion:no-preference){.fill{transition:transform 1s linear}}',
  '.fields{display:grid;grid-template-columns:fit-content(40%) 1fr;gap:4px 12px;font-size:13px;line-height:18px}',
  '.fields dt{color:var(--_muted);overflow:hidden;text-overflow:ellipsis;white-space:nowrap}',
  '.fields dd{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:3;overflow:hidden}',
  'a{color:inherit;text-decoration:none}',
  'a:hover{text-decoration:underline}',
  'a:focus-visible{outline:2px solid var(--_accent);outline-offset:2px;border-radius:2px}',
  '.message{color:var(--_muted)}',
  '.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}',
  '.card[data-layout=compact]{padding:10px 12px;gap:0}',
  '.card[data-layout=compact] .avatar{width:40px;height:40px}',
  '.card[data-layout=compact] .dot{width:14px;height:14px;border-width:2px}',
  '.card[data-layout=compact] .name{font-size:14px;line-height:20px}',
  '.card[data-layout=compact] .times{margin-top:4px}',
  '.card[data-layout=compact] .progress{height:3px}',
  '.card[data-layout=badge]{display:inline-block;max-width:100%;padding:3px 10px 3px 3px;border-radius:999px;font-size:13px;line-height:18px}',
  '.card[data-layout=badge] .row{gap:6px}',
  '.card[data-layout=badge] .avatar{width:22px;height:22px}',
  '.card[data-layout=badge] .initial{font-size:11px}',
  '.card[data-layout=badge] .dot{width:9px;height:9px;right:-1px;bottom:-1px;border-width:2px}',
  '.card[data-layout=badge] .message{padding-left:7px}',
].join('\n');

/** One sheet for every element of the page: a constructed sheet can be adopted by many shadow roots. */
let shared: CSSStyleSheet | null | undefined;

function constructedSheet(): CSSStyleSheet | null {
  if (!('adoptedStyleSheets' in ShadowRoot.prototype)) return null;
  try {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    return sheet;
  } catch {
    return null;
  }
}

/**
 * Styles `root`: through an adopted sheet, which a page's `style-src` does not govern; where a browser has
 * none, a `<style>` element (which a strict `style-src` may refuse: the content then shows unstyled).
 */
export function adoptStyles(root: ShadowRoot): void {
  if (shared === undefined) shared = constructedSheet();
  if (shared) root.adoptedStyleSheets = [...root.adoptedStyleSheets, shared];
  else root.append(h('style', {}, CSS));
}
