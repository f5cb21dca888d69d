import type { NowPlaying, Presence } from '../client/types.js';
import { type Child, h } from './dom.js';
import {
  ACTIVITY_TYPE,
  activityVerb,
  clockText,
  customStatusText,
  displayName,
  musicSourceName,
  type StatusKind,
  statusLabel,
  statusOf,
  webLink,
} from './format.js';
import type { EmbedOptions } from './options.js';

/**
 * A presence as the element's markup: one section per part of it (who and their status, the music, the
 * activity, the KV fields), each with a signature of what it shows, so that the element replaces only the
 * sections that changed and a screen reader is told of those alone. Clocks are left at their marks
 * (clock.ts sets them).
 */

export interface Section {
  key: string;
  /** What the section shows, whatever the time: equal signatures, equal sections. */
  signature: string;
  node: HTMLElement;
}

/** What the quick link is asked for: sharp at the largest avatar drawn (56 px) on a 2× screen. */
const AVATAR_SIZE = 128;

/** An activity as the API sends it: Discord's, with its images resolved to URLs. */
interface ShownActivity {
  type: number;
  name: string;
  details?: string | null;
  state?: string | null;
  timestamps?: { start?: number | null } | null;
  assets?: { large_image_url?: string | null; large_text?: string | null } | null;
}

function section(key: string, signature: unknown, ...children: Child[]): Section {
  return { key, signature: JSON.stringify(signature), node: h('div', { class: 'section' }, ...children) };
}

/** An image that gives way to `fallback` when it cannot be had (blocked, gone, offline). */
function image(attributes: Record<string, string | number>, fallback: () => HTMLElement): HTMLElement {
  const node = h('img', { ...attributes, decoding: 'async', referrerpolicy: 'no-referrer' });
  node.addEventListener('error', () => node.replaceWith(fallback()), { once: true });
  return node;
}

function avatar(presence: Presence, base: string, status: StatusKind): HTMLElement {
  const user = presence.discord_user;
  const alt = `Avatar of ${displayName(user)}`;
  const initial = () =>
    h('span', { class: 'initial', role: 'img', 'aria-label': alt }, [...displayName(user)][0] ?? '?');
  const url = `${base}/${user.id}.png?size=${AVATAR_SIZE}&v=${encodeURIComponent(user.avatar ?? 'default')}`;
  return h(
    'div',
    { class: 'avatar' },
    image({ src: url, alt }, initial),
    h('span', { class: 'dot', 'data-status': status, 'aria-hidden': 'true' }),
  );
}

/** `0:12 ▬▬── 0:40`: the track's position, its bar and its length, set going by clock.ts. */
function progress(start: number, end: number): HTMLElement {
  return h(
    'div',
    { class: 'times' },
    h('span', { role: 'timer', 'aria-live': 'off', 'data-start': start, 'data-end': end }, '0:00'),
    h(
      'div',
      {
        class: 'progress',
        role: 'progressbar',
        'aria-label': 'Track progress',
        'aria-valuemin': 0,
        'aria-valuemax': Math.round((end - start) / 1000),
        'data-start': start,
        'data-end': end,
      },
      h('div', { class: 'fill' }),
    ),
    h('span', {}, clockText(end - start)),
  );
}

function trackSpan(music: NowPlaying): { start: number; end: number } | null {
  const { start, end } = music.timestamps;
  return start !== null && end !== null && end > start ? { start, end } : null;
}

function musicLabel(music: NowPlaying): string {
  const source = musicSourceName(music.source);
  return source ? `Listening to ${source}` : 'Listening to music';
}

/** The activity shown: the first that is neither the custom status nor the music shown apart. */
function currentActivity(presence: Presence): ShownActivity | null {
  const activities = presence.activities as unknown as ShownActivity[];
  return (
    activities.find(
      (activity) =>
        activity.type !== ACTIVITY_TYPE.custom &&
        !(activity.type === ACTIVITY_TYPE.listening && presence.now_playing),
    ) ?? null
  );
}

function head(presence: Presence, base: string): Section {
  const user = presence.discord_user;
  const status = statusOf(presence);
  const custom = customStatusText(presence);
  return section(
    'head',
    [user.id, user.avatar, displayName(user), user.username, status, custom],
    h(
      'div',
      { class: 'row' },
      avatar(presence, base, status),
      h(
        'div',
        { class: 'grow' },
        h('p', { class: 'name line' }, displayName(user)),
        h(
          'p',
          { class: 'muted line' },
          user.username ? `@${user.username} · ` : null,
          h('span', { class: 'status' }, statusLabel(status)),
        ),
        custom ? h('p', { class: 'custom' }, custom) : null,
      ),
    ),
  );
}

function music(presence: Presence): Section | null {
  const playing = presence.now_playing;
  if (!playing) return null;
  const title = playing.song ?? 'Unknown track';
  const link = webLink(playing.track_url);
  const art = webLink(playing.album_art_url);
  const placeholder = () => h('span', { class: 'art glyph', 'aria-hidden': 'true' }, '♪');
  const span = trackSpan(playing);
  return section(
    'music',
    [playing.source, title, playing.artist, playing.album, link, art, span],
    h(
      'div',
      { class: 'row' },
      art
        ? image({ class: 'art', src: art, alt: `Album art of ${playing.album ?? title}` }, placeholder)
        : placeholder(),
      h(
        'div',
        { class: 'grow' },
        h('p', { class: 'label' }, musicLabel(playing)),
        h(
          'p',
          { class: 'strong line' },
          link ? h('a', { href: link, target: '_blank', rel: 'noopener noreferrer' }, title) : title,
        ),
        playing.artist ? h('p', { class: 'line' }, `by ${playing.artist}`) : null,
        playing.album ? h('p', { class: 'muted line' }, `on ${playing.album}`) : null,
        span ? progress(span.start, span.end) : null,
      ),
    ),
  );
}

function activity(presence: Presence): Section | null {
  const shown = currentActivity(presence);
  if (!shown) return null;
  const picture = webLink(shown.assets?.large_image_url);
  const placeholder = () =>
    h('span', { class: 'art glyph', 'aria-hidden': 'true' }, [...shown.name][0] ?? '?');
  const start = shown.timestamps?.start ?? null;
  return section(
    'activity',
    [shown.type, shown.name, shown.details, shown.state, picture, start],
    h(
      'div',
      { class: 'row' },
      picture
        ? image({ class: 'art', src: picture, alt: shown.assets?.large_text || shown.name }, placeholder)
        : placeholder(),
      h(
        'div',
        { class: 'grow' },
        h('p', { class: 'label' }, activityVerb(shown.type)),
        h('p', { class: 'strong line' }, shown.name),
        shown.details ? h('p', { class: 'line' }, shown.details) : null,
        shown.state ? h('p', { class: 'muted line' }, shown.state) : null,
        start !== null
          ? h(
              'p',
              { class: 'muted small' },
              h('span', { role: 'timer', 'aria-live': 'off', 'data-start': start }, '0:00'),
              ' elapsed',
            )
          : null,
      ),
    ),
  );
}

function fields(presence: Presence, names: readonly string[]): Section | null {
  const shown = names.filter((name) => Object.hasOwn(presence.kv, name));
  if (shown.length === 0) return null;
  const pairs = shown.map((name) => [name, presence.kv[name] ?? ''] as const);
  return section(
    'fields',
    pairs,
    h(
      'dl',
      { class: 'fields' },
      ...pairs.flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]),
    ),
  );
}

/** One line of what the user is doing, for the compact and badge layouts. */
function doing(presence: Presence): string {
  const playing = presence.now_playing;
  if (playing) {
    const title = playing.song ?? 'music';
    return playing.artist ? `Listening to ${title} by ${playing.artist}` : `Listening to ${title}`;
  }
  const shown = currentActivity(presence);
  if (shown) return `${activityVerb(shown.type)} ${shown.name}`;
  return customStatusText(presence) ?? '';
}

function compact(presence: Presence, base: string): Section {
  const user = presence.discord_user;
  const status = statusOf(presence);
  const line = doing(presence);
  const span = presence.now_playing ? trackSpan(presence.now_playing) : null;
  return section(
    'compact',
    [user.id, user.avatar, displayName(user), status, line, span],
    h(
      'div',
      { class: 'row' },
      avatar(presence, base, status),
      h(
        'div',
        { class: 'grow' },
        h(
          'div',
          { class: 'row' },
          h('p', { class: 'name line grow' }, displayName(user)),
          h('p', { class: 'muted small status' }, statusLabel(status)),
        ),
        line ? h('p', { class: 'muted line' }, line) : null,
        span ? progress(span.start, span.end) : null,
      ),
    ),
  );
}

/** The badge's few words: the song alone (a note says it is one), else what the other layouts say. */
function badgeLine(presence: Presence, status: StatusKind): Child[] {
  const song = presence.now_playing?.song;
  if (song)
    return [h('span', { 'aria-hidden': 'true' }, '♪ '), h('span', { class: 'vh' }, 'Listening to '), song];
  return [doing(presence) || statusLabel(status)];
}

function badge(presence: Presence, base: string): Section {
  const user = presence.discord_user;
  const status = statusOf(presence);
  const line = badgeLine(presence, status);
  // The status is in words for whoever does not see the dot, when the line does not say it already.
  const said = line.length === 1 && line[0] === statusLabel(status);
  return section(
    'badge',
    [user.id, user.avatar, displayName(user), status, presence.now_playing?.song, doing(presence)],
    h(
      'div',
      { class: 'row' },
      avatar(presence, base, status),
      h('span', { class: 'strong' }, displayName(user)),
      h('span', { class: 'muted line' }, ...line),
      said ? null : h('span', { class: 'vh status' }, statusLabel(status)),
    ),
  );
}

/** The sections of a presence in `options.layout`; `base` is the instance the avatar link is asked of. */
export function presenceSections(presence: Presence, options: EmbedOptions, base: string): Section[] {
  if (options.layout === 'badge') return [badge(presence, base)];
  if (options.layout === 'compact') return [compact(presence, base)];
  return [head(presence, base), music(presence), activity(presence), fields(presence, options.fields)].filter(
    (part): part is Section => part !== null,
  );
}

/** A state that is not a presence (loading, not monitored, a bad attribute), in words. */
export function messageSection(text: string): Section {
  return section('message', text, h('p', { class: 'message' }, text));
}
