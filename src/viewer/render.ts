import type { DiscordUser, NowPlaying, Presence, UserId } from '../client/types.js';
import { element } from './dom.js';
import type { ConnectionState } from './presence-socket.js';

/** What the viewer shows of a presence and of its socket, in words; everything is put in as text. */

const STATUS_LABELS: Record<string, string> = {
  online: 'Online',
  idle: 'Idle',
  dnd: 'Do not disturb',
  offline: 'Offline',
};
const PLATFORMS = [
  ['desktop', 'desktop'],
  ['mobile', 'phone'],
  ['web', 'web'],
  ['embedded', 'console'],
  ['vr', 'VR'],
] as const;
const SOURCES: Record<string, string> = { spotify: 'Spotify', youtube_music: 'YouTube Music' };
/** By Discord's activity type; 4, the custom status, has its own row. */
const ACTIVITY_VERBS: Record<number, string> = {
  0: 'Playing',
  1: 'Streaming',
  2: 'Listening to',
  3: 'Watching',
  5: 'Competing in',
};
const LISTENING = 2;
const CUSTOM_STATUS = 4;

type Activity = Presence['activities'][number];

export function displayName(user: DiscordUser): string {
  return user.global_name || user.username || user.id;
}

function nowPlayingLine(music: NowPlaying): string {
  const parts = [music.song ?? 'Unknown track'];
  if (music.artist) parts.push(`by ${music.artist}`);
  if (music.album) parts.push(`· ${music.album}`);
  return `${parts.join(' ')} (${SOURCES[music.source] ?? music.source})`;
}

function activityLine(activity: Activity): string {
  const verb = ACTIVITY_VERBS[activity.type] ?? 'Playing';
  const extra = [activity.details, activity.state].filter(Boolean).join(' · ');
  return extra ? `${verb} ${activity.name}: ${extra}` : `${verb} ${activity.name}`;
}

/** The rows shown under the name: what the presence says, in words. */
function presenceRows(presence: Presence): [string, string | HTMLElement][] {
  const rows: [string, string | HTMLElement][] = [];
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
  const platforms = PLATFORMS.filter(([key]) => presence[`active_on_discord_${key}` as const]).map(
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
  for (const activity of presence.activities) {
    // Music is the row above; the custom status has its own.
    if (activity.type === CUSTOM_STATUS || (activity.type === LISTENING && presence.now_playing)) continue;
    rows.push(['Activity', activityLine(activity)]);
  }
  const kv = Object.keys(presence.kv);
  if (kv.length > 0) rows.push(['KV keys', kv.join(', ')]);
  return rows;
}

/** The presence of `id` in `box`; without one, that the user is not monitored here. */
export function showPresence(box: HTMLElement, id: UserId, presence: Presence | undefined): void {
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
  for (const [term, value] of presenceRows(presence)) {
    list.append(element('dt', {}, term), element('dd', {}, value));
  }
  box.replaceChildren(
    element('h3', {}, displayName(user)),
    element('p', { class: 'username' }, `@${user.username ?? user.id}`),
    list,
  );
}

export function connectionText(state: ConnectionState): string {
  switch (state.kind) {
    case 'live':
      return 'Live: updates as they happen';
    case 'reconnecting':
      return `Connection lost; trying again in ${Math.round(state.inMs / 1000)} s`;
    case 'closed':
      return 'Connection closed; reload the page to try again';
    case 'connecting':
      return 'Connecting…';
  }
}
