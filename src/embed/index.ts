/**
 * embed.js: defines `<presently-presence>` (element.ts). Bundled for browsers by esbuild
 * (src/http/browser-scripts.ts); a page that loads it twice keeps the first definition.
 */
import { PresentlyPresence } from './element.js';
import { ELEMENT_NAME } from './options.js';

if (!customElements.get(ELEMENT_NAME)) customElements.define(ELEMENT_NAME, PresentlyPresence);
