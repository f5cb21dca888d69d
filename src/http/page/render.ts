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
    origin: model.origin,
    socketOrigin: model.origin.replace(/^http/, 'ws'),
    snippetId: model.id ?? PLACEHOLDER_ID,
    version: model.version,
  });
}
