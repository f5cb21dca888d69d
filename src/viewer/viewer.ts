import type { UserId } from '../client/types.js';
import { checkedUserId } from '../client/user-id.js';
import { ELEMENT_NAME } from '../embed/options.js';
import { LiveCard } from './card.js';
import { byId, element } from './dom.js';
import { PresenceSocket } from './presence-socket.js';
import { connectionText, displayName, showPresence } from './render.js';
import { fillSnippets, setUpCopyButtons } from './snippets.js';

/**
 * The landing page's live viewer: the presence of the id asked for over the socket, the status card
 * refreshed when it changes, the snippets and the embed's preview following the id, which the address
 * follows too (back and forward work).
 */

/** A Discord id as the server takes it: 1–20 digits whose value fits in 64 bits. */
function isUserId(id: string): boolean {
  try {
    checkedUserId(id);
    return true;
  } catch {
    return false;
  }
}

function idFromLocation(): UserId | null {
  const id = new URLSearchParams(location.search).get('id')?.trim() ?? '';
  return isUserId(id) ? id : null;
}

/** The live `<presently-presence>` preview (embed.js, which the page loads too), following the id shown. */
function showEmbedPreview(id: UserId): void {
  let preview = document.getElementById('embed-preview');
  if (!preview) {
    preview = document.createElement(ELEMENT_NAME);
    preview.id = 'embed-preview';
    byId('embed-preview-box', HTMLElement).append(preview);
  }
  preview.setAttribute('user', id);
}

export function startViewer(): void {
  const form = byId('viewer-form', HTMLFormElement);
  const input = byId('user-id', HTMLInputElement);
  const live = byId('live', HTMLElement);
  const connection = byId('connection', HTMLElement);
  const box = byId('presence', HTMLElement);
  const card = new LiveCard(byId('card-figure', HTMLElement));
  const baseTitle = document.title;
  let shown: UserId | null = null;

  const socket = new PresenceSocket({
    state(state) {
      connection.dataset.state = state.kind;
      connection.textContent = connectionText(state);
    },
    presence(id, presence) {
      showPresence(box, id, presence);
      document.title = presence?.discord_user
        ? `${displayName(presence.discord_user)} · ${baseTitle}`
        : baseTitle;
      card.changed(id);
    },
  });

  const view = (id: UserId, { push }: { push: boolean }): void => {
    if (id === shown) return;
    shown = id;
    document.getElementById('id-error')?.remove();
    input.value = id;
    if (push) history.pushState(null, '', `/?id=${id}`);
    live.hidden = false;
    box.replaceChildren(element('p', {}, 'Loading…'));
    fillSnippets(id);
    showEmbedPreview(id);
    card.show(id);
    socket.watch(id);
  };

  form.addEventListener('submit', (event) => {
    const id = input.value.trim();
    // The server answers an id it cannot take with the page and a message saying why.
    if (!isUserId(id)) return;
    event.preventDefault();
    view(id, { push: true });
  });
  for (const link of document.querySelectorAll<HTMLAnchorElement>('a[data-id]')) {
    link.addEventListener('click', (event) => {
      event.preventDefault();
      view(link.dataset.id ?? '', { push: true });
    });
  }
  window.addEventListener('popstate', () => {
    const id = idFromLocation();
    // Back to the page without an id: the page as the server gives it (nobody, or the demo's featured user).
    if (id === null) location.reload();
    else view(id, { push: false });
  });

  setUpCopyButtons(byId('copy-status', HTMLElement));
  // Without ?id= the server may have filled the field in (the demo's featured user): that one is shown.
  const initial = idFromLocation() ?? (isUserId(input.value) ? input.value : null);
  if (initial !== null && document.getElementById('id-error') === null) view(initial, { push: false });
}
