import type { InstallLinks } from '../../discord/install-links.js';
import { ELEMENT_NAME, SCRIPT_NAME } from '../../embed/options.js';
import type { PageAssets } from './assets.js';
import { fillTemplate, type Html, html } from './html.js';

/** A user the page offers as a one-click example (the demo's users). */
export interface PageExample {
  id: string;
  name: string;
  /** The page opens on this user when no `?id=` is asked for; the demo prints an API key of theirs. */
  featured?: boolean;
}

export interface PageModel {
  /** `http://host:port` as the request named it: the snippets' base when the page runs no script. */
  origin: string;
  /** The id asked for with `?id=`, when it is one; else the featured example's. */
  id: string | null;
  /** What `?id=` held when it is not an id, to show it back with the reason. */
  rejected: string | null;
  monitoredUserCount: number;
  version: string;
  examples: readonly PageExample[];
  /** Where to add the bot, once it has connected; null before. */
  install: InstallLinks | null;
  /** Demo mode: the "try the bot" panel. */
  tryBot: boolean;
}

/** What the snippets say until an id is chosen. */
export const PLACEHOLDER_ID = 'USER_ID';
/** A rejected `?id=` is shown back this long at most. */
const MAX_SHOWN_REJECTED = 40;

function examplesOf(examples: readonly PageExample[]): Html {
  if (examples.length === 0) return html``;
  const links = examples.map(
    (example) =>
      html`<li><a href="/?id=${example.id}" data-id="${example.id}">${example.name} <span class="id">${example.id}</span></a></li>`,
  );
  const featured = examples.find((example) => example.featured);
  const key = featured
    ? html`<p>The service's log shows an API key for ${featured.name}: with it, <code>PATCH /v1/users/@me/kv</code> changes ${featured.name}'s KV, and the viewer shows the change live.</p>`
    : html``;
  return html`<div class="examples"><p>Demo mode: a simulated Discord drives these users. Try one:</p><ul>${links}</ul>${key}</div>`;
}

function rejectionOf(rejected: string | null): Html {
  if (rejected === null) return html``;
  const shown = rejected.length > MAX_SHOWN_REJECTED ? `${rejected.slice(0, MAX_SHOWN_REJECTED)}…` : rejected;
  return html`<p id="id-error" class="error" role="alert">“${shown}” is not a Discord user id: an id is 1 to 20 digits, below 2^64.</p>`;
}

function installOf(links: InstallLinks | null): Html {
  if (links === null) return html``;
  return html`<p class="install">Add its bot <a href="${links.server}">to a server</a>, or <a href="${links.user}">install it for yourself</a> to use <code>/presently</code> anywhere.</p>`;
}

function tryBotOf(shown: boolean): Html {
  if (!shown) return html``;
  return html`<section id="try-bot" class="try-bot" aria-labelledby="try-bot-title" hidden>
    <h2 id="try-bot-title">Try the bot</h2>
    <p>Run <code>/presently</code> as the featured demo user, in a DM with the simulated bot. Answers are ephemeral: in Discord only you would see them.</p>
    <form id="bot-form" class="lookup">
      <label for="bot-command">/presently</label>
      <div class="field">
        <input id="bot-command" name="command" type="text" value="kv set key:mood value:calm" autocomplete="off" spellcheck="false" maxlength="2000">
        <button type="submit">Run</button>
      </div>
    </form>
    <p class="hint">Try <code>help</code>, <code>key</code>, <code>kv list</code>, <code>privacy hide thing:spotify</code>, <code>card</code> or <code>forget all:true</code>.</p>
    <div id="bot-answer" class="bot-answer" aria-live="polite"></div>
  </section>`;
}

/** The live `<presently-presence>` of the viewed user, as the "Put it on your site" snippet makes it. */
function embedPreviewOf(id: string | null): Html {
  if (id === null) return html``;
  return html`<${ELEMENT_NAME} id="embed-preview" user="${id}"></${ELEMENT_NAME}>`;
}

function cardOf(id: string | null): Html {
  if (id === null) return html``;
  return html`<img id="card" src="/v1/users/${id}/card.svg" alt="Status card of user ${id}">`;
}

/** The landing page, complete without script: the viewer's script only makes it live. */
export function renderPage(assets: PageAssets, model: PageModel): string {
  const count = model.monitoredUserCount;
  return fillTemplate(assets.template, {
    stylesheet: assets.stylesheet.path,
    script: assets.script.path,
    monitored: count === 1 ? '1 user' : `${count.toLocaleString('en')} users`,
    id: model.id ?? model.rejected?.slice(0, MAX_SHOWN_REJECTED) ?? '',
    idError: rejectionOf(model.rejected),
    demo: examplesOf(model.examples),
    card: cardOf(model.id),
    embedScript: `/${SCRIPT_NAME}`,
    embedPreview: embedPreviewOf(model.id),
    install: installOf(model.install),
    tryBot: tryBotOf(model.tryBot),
    origin: model.origin,
    socketOrigin: model.origin.replace(/^http/, 'ws'),
    snippetId: model.id ?? PLACEHOLDER_ID,
    version: model.version,
  });
}
