/*
 * The landing page's live viewer: a presence over Presently's Lanyard-protocol socket, the status card
 * refreshed when it changes, and the snippets filled in for the id. Everything a user or Discord wrote
 * goes into the page as text (textContent, append of strings), never as markup.
 */

const SNOWFLAKE = /^[0-9]{1,20}$/;
const SNOWFLAKE_LIMIT = 2n ** 64n;
const RECONNECT_FIRST_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;
/** Discord sends a few updates in a row (one per shared server); the card is fetched once for them. */
const CARD_REFRESH_DELAY_MS = 250;
const COPIED_FOR_MS = 2_000;

const STATUS_LABELS = { online: 'Online', idle: 'Idle', dnd: 'Do not disturb', offline: 'Offline' };
const PLATFORMS = [
  ['desktop', 'desktop'],
  ['mobile', 'phone'],
  ['web', 'web'],
  ['embedded', 'console'],
  ['vr', 'VR'],
];
const SOURCES = { spotify: 'Spotify', youtube_music: 'YouTube Music' };
const ACTIVITY_VERBS = ['Playing', 'Streaming', 'Listening to', 'Watching', null, 'Competing in'];
const LISTENING = 2;
const CUSTOM_STATUS = 4;

/**
 * One socket for the page, subscribed to the id shown. It heartbeats at the interval the Hello gives, and
 * when it drops it reconnects with growing pauses and subscribes again.
 */
class PresenceSocket {
  #url;
  #handlers;
  #socket = null;
  #heartbeat = null;
  #attempts = 0;
  #ready = false;
  #id = null;
  /** Ids subscribed and not yet answered: each op 2 gets one INIT_STATE, in order. */
  #pending = [];

  constructor(url, handlers) {
    this.#url = url;
    this.#handlers = handlers;
  }

  watch(id) {
    const previous = this.#id;
    this.#id = id;
    if (!this.#socket) {
      this.#connect();
      return;
    }
    if (!this.#ready) return;
    if (previous !== null) this.#send({ op: 4, d: { unsubscribe_from_id: previous } });
    this.#subscribe();
  }

  #connect() {
    this.#handlers.state('connecting');
    const socket = new WebSocket(this.#url);
    this.#socket = socket;
    socket.addEventListener('message', (event) => this.#receive(event.data));
    socket.addEventListener('close', () => this.#closed(socket));
  }

  #subscribe() {
    this.#pending.push(this.#id);
    this.#send({ op: 2, d: { subscribe_to_id: this.#id } });
  }

  #send(frame) {
    if (this.#socket?.readyState === WebSocket.OPEN) this.#socket.send(JSON.stringify(frame));
  }

  #receive(text) {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    if (frame.op === 1) {
      this.#ready = true;
      this.#attempts = 0;
      this.#heartbeat = setInterval(() => this.#send({ op: 3 }), frame.d.heartbeat_interval);
      this.#handlers.state('live');
      if (this.#id !== null) this.#subscribe();
      return;
    }
    if (frame.op !== 0) return;
    if (frame.t === 'INIT_STATE') {
      // The answer to an id the viewer has since left is not shown as the new one's.
      if (this.#pending.shift() === this.#id) this.#handlers.presence(this.#id, frame.d);
    } else if (frame.t === 'PRESENCE_UPDATE' && frame.d.user_id === this.#id) {
      this.#handlers.presence(this.#id, frame.d);
    }
  }

  #closed(socket) {
    if (socket !== this.#socket) return;
    clearInterval(this.#heartbeat);
    this.#ready = false;
    this.#pending = [];
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_FIRST_MS * 2 ** this.#attempts);
    this.#attempts++;
    this.#handlers.state('reconnecting', delay);
    setTimeout(() => this.#connect(), delay);
  }
}

/** An element with its children; strings become text nodes. */
function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

function displayName(user) {
  return user.global_name || user.username || user.id;
}

function nowPlayingLine(music) {
  const parts = [music.song ?? 'Unknown track'];
  if (music.artist) parts.push(`by ${music.artist}`);
  if (music.album) parts.push(`· ${music.album}`);
  return `${parts.join(' ')} (${SOURCES[music.source] ?? music.source})`;
}

function activityLine(activity) {
  const verb = ACTIVITY_VERBS[activity.type] ?? 'Playing';
  const extra = [activity.details, activity.state].filter(Boolean).join(' · ');
  return extra ? `${verb} ${activity.name}: ${extra}` : `${verb} ${activity.name}`;
}

/** The rows shown under the name: what the presence says, in words. */
function presenceRows(presence) {
  const rows = [];
  const status = presence.discord_status;
  // Discord has not told the service about this user since its session was lost: no confident status.
  const label = presence.stale
    ? `Unknown since ${new Date(presence.observed_at).toLocaleTimeString()}`
    : (STATUS_LABELS[status] ?? status);
  rows.push([
    'Status',
    element(
      'span',
      { class: 'status', 'data-status': presence.stale ? 'unknown' : status, id: 'presence-status' },
      label,
    ),
  ]);
  const platforms = PLATFORMS.filter(([key]) => presence[`active_on_discord_${key}`]).map(
    ([, label]) => label,
  );
  if (platforms.length > 0) rows.push(['Active on', platforms.join(', ')]);
  const custom = presence.custom_status;
  if (custom && (custom.text || custom.emoji)) {
    rows.push([
      'Custom status',
      [custom.emoji?.id ? `:${custom.emoji.name}:` : custom.emoji?.name, custom.text]
        .filter(Boolean)
        .join(' '),
    ]);
  }
  if (presence.now_playing) rows.push(['Listening to', nowPlayingLine(presence.now_playing)]);
  for (const activity of presence.activities ?? []) {
    // Music is the row above; the custom status has its own.
    if (activity.type === CUSTOM_STATUS || (activity.type === LISTENING && presence.now_playing)) continue;
    rows.push(['Activity', activityLine(activity)]);
  }
  const kv = Object.keys(presence.kv ?? {});
  if (kv.length > 0) rows.push(['KV keys', kv.join(', ')]);
  return rows;
}

function showPresence(box, id, presence) {
  if (!presence?.discord_user) {
    box.replaceChildren(
      element(
        'p',
        { id: 'presence-status', 'data-status': 'unmonitored' },
        `User ${id} is not monitored here: they share no server with this instance's bot.`,
      ),
    );
    return;
  }
  const user = presence.discord_user;
  const list = element('dl');
  for (const [term, value] of presenceRows(presence))
    list.append(element('dt', {}, term), element('dd', {}, value));
  box.replaceChildren(
    element('h3', {}, displayName(user)),
    element('p', { class: 'username' }, `@${user.username ?? user.id}`),
    list,
  );
}

function connectionText(state, delayMs) {
  if (state === 'live') return 'Live: updates as they happen';
  if (state === 'reconnecting') return `Connection lost; trying again in ${Math.round(delayMs / 1000)} s`;
  return 'Connecting…';
}

function cardUrl(id, revision) {
  return `/v1/users/${id}/card.svg${revision > 0 ? `?v=${revision}` : ''}`;
}

/** The card for `id`, swapped in once the new image has loaded, so it never flashes empty. */
function showCard(figure, id, revision) {
  const next = new Image();
  next.id = 'card';
  next.alt = `Status card of user ${id}`;
  next.addEventListener('load', () => {
    if (figure.dataset.id !== id) return;
    const current = figure.querySelector('#card');
    if (current) current.replaceWith(next);
    else figure.append(next);
  });
  figure.dataset.id = id;
  next.src = cardUrl(id, revision);
}

function fillSnippets(id) {
  const socketOrigin = location.origin.replace(/^http/, 'ws');
  for (const node of document.querySelectorAll('[data-fill]')) {
    const fill = node.dataset.fill;
    node.textContent = fill === 'id' ? id : fill === 'socket' ? socketOrigin : location.origin;
  }
  // A link's text is its address.
  for (const link of document.querySelectorAll('a.copy-link')) link.href = link.textContent;
}

/** The live `<presently-presence>` preview (embed.js), following the id shown. */
function showEmbedPreview(id) {
  let preview = document.getElementById('embed-preview');
  if (!preview) {
    preview = document.createElement('presently-presence');
    preview.id = 'embed-preview';
    document.getElementById('embed-preview-box').append(preview);
  }
  preview.setAttribute('user', id);
}

/** The Clipboard API needs a secure context; on plain HTTP the selection is copied the old way. */
async function copyText(source) {
  const text = source.textContent;
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(source);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  const copied = document.execCommand('copy');
  selection.removeAllRanges();
  if (!copied) throw new Error('copy refused');
}

function setUpCopyButtons(status) {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const source = document.getElementById(button.dataset.copy);
    const title = document.getElementById(`${button.dataset.copy}-title`);
    button.hidden = false;
    button.addEventListener('click', async () => {
      try {
        await copyText(source);
        button.textContent = 'Copied';
        status.textContent = `Copied: ${title.textContent}`;
      } catch {
        button.textContent = 'Select and copy';
        status.textContent = 'Copying was refused by the browser; select the text to copy it.';
      }
      setTimeout(() => {
        button.textContent = 'Copy';
      }, COPIED_FOR_MS);
    });
  }
}

/** A Discord id as the server takes it: 1–20 digits whose value fits in 64 bits. */
function isSnowflake(id) {
  return SNOWFLAKE.test(id) && BigInt(id) < SNOWFLAKE_LIMIT;
}

function idFromLocation() {
  const id = new URLSearchParams(location.search).get('id')?.trim() ?? '';
  return isSnowflake(id) ? id : null;
}

function start() {
  const form = document.getElementById('viewer-form');
  const input = document.getElementById('user-id');
  const live = document.getElementById('live');
  const connection = document.getElementById('connection');
  const box = document.getElementById('presence');
  const figure = document.getElementById('card-figure');
  const baseTitle = document.title;
  let shown = null;
  let revision = 0;
  let cardTimer = null;

  const socket = new PresenceSocket(`${location.origin.replace(/^http/, 'ws')}/socket`, {
    state(state, delayMs) {
      connection.dataset.state = state;
      connection.textContent = connectionText(state, delayMs);
    },
    presence(id, presence) {
      showPresence(box, id, presence);
      document.title = presence?.discord_user
        ? `${displayName(presence.discord_user)} · ${baseTitle}`
        : baseTitle;
      clearTimeout(cardTimer);
      cardTimer = setTimeout(() => showCard(figure, id, ++revision), CARD_REFRESH_DELAY_MS);
    },
  });

  const view = (id, { push }) => {
    if (id === shown) return;
    shown = id;
    document.getElementById('id-error')?.remove();
    input.value = id;
    if (push) history.pushState(null, '', `/?id=${id}`);
    live.hidden = false;
    box.replaceChildren(element('p', {}, 'Loading…'));
    fillSnippets(id);
    showEmbedPreview(id);
    showCard(figure, id, revision);
    socket.watch(id);
  };

  form.addEventListener('submit', (event) => {
    const id = input.value.trim();
    // The server answers an id it cannot take with the page and a message saying why.
    if (!isSnowflake(id)) return;
    event.preventDefault();
    view(id, { push: true });
  });
  for (const link of document.querySelectorAll('a[data-id]')) {
    link.addEventListener('click', (event) => {
      event.preventDefault();
      view(link.dataset.id, { push: true });
    });
  }
  window.addEventListener('popstate', () => {
    const id = idFromLocation();
    // Back to the page without an id: the page as the server gives it (nobody, or the demo's featured user).
    if (id === null) location.reload();
    else view(id, { push: false });
  });

  setUpCopyButtons(document.getElementById('copy-status'));
  // Without ?id= the server may have filled the field in (the demo's featured user): that one is shown.
  const initial = idFromLocation() ?? (isSnowflake(input.value) ? input.value : null);
  if (initial !== null && document.getElementById('id-error') === null) view(initial, { push: false });
}

/** The demo's "try the bot": `/presently …` through the simulated Discord, answers shown as Discord would. */
function startTryBot() {
  const panel = document.getElementById('try-bot');
  if (panel === null) return;
  panel.hidden = false;
  const form = document.getElementById('bot-form');
  const input = document.getElementById('bot-command');
  const out = document.getElementById('bot-answer');
  const show = (answer) => {
    const children = [element('pre', { class: 'bot-message' }, answer.content || ' ')];
    for (const file of answer.files)
      children.push(element('p', { class: 'hint' }, `📎 ${file.name} (${file.bytes} bytes)`));
    if (answer.ephemeral) children.push(element('p', { class: 'hint' }, 'Only you can see this.'));
    for (const button of answer.buttons) {
      const press = element('button', { type: 'button', class: 'danger' }, button.label);
      press.addEventListener('click', () =>
        send({ interaction: button.interaction, button: button.custom_id }),
      );
      children.push(press);
    }
    out.replaceChildren(...children);
  };
  const send = async (body) => {
    out.replaceChildren(element('p', {}, 'Presently is thinking…'));
    try {
      const response = await fetch('/demo/bot', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const envelope = await response.json();
      if (envelope.success) show(envelope.data);
      else out.replaceChildren(element('p', { class: 'error', role: 'alert' }, envelope.error.message));
    } catch {
      out.replaceChildren(element('p', { class: 'error', role: 'alert' }, 'The service did not answer.'));
    }
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    send({ command: input.value });
  });
}

start();
startTryBot();
