/**
 * Activity payloads written out by hand in the shapes Discord sends ([Discord's activity object](https://discord.com/developers/docs/events/gateway-events#activity-object),
 * and presences captured by Lanyard users), field order included. The simulator's builders are checked against these,
 * and the normalizers are run on them directly, so neither side is only checked against itself.
 */
import type { GatewayActivity } from 'discord-api-types/v10';

// The literals are typed by inference, not as GatewayActivity: the wire carries bitfields such as
// `flags: 48` that discord-api-types' enum typings reject. `activity()` makes one a GatewayActivity.

export const CDN = 'https://cdn.discordapp.com';
export const USER_ID = '94490510688792576';
export const T0 = 1_700_000_000_000;

/** Spotify, Discord's own integration. */
export const SPOTIFY_LITERAL = {
  type: 2,
  timestamps: { start: 1615529820677, end: 1615530068733 },
  sync_id: '3kdlVcMVsSkbsUy8eQcBjI',
  state: 'Lua Fernandes; Jovem Dionisio',
  session_id: '140ecdfb976bdbf29d4452d492e551c7',
  party: { id: 'spotify:94490510688792576' },
  name: 'Spotify',
  id: 'spotify:1',
  flags: 48,
  details: 'Let Go',
  created_at: 1615529838051,
  assets: { large_text: 'Let Go (Deluxe)', large_image: 'spotify:ab67616d0000b273ad3fb6a6f71d5cf7ab5a6e47' },
};

/** Spotify playing a local file: no sync_id, no state, no large_image. */
export const SPOTIFY_LOCAL_FILE_LITERAL = {
  type: 2,
  timestamps: { start: 1615529820677, end: 1615530001000 },
  session_id: '140ecdfb976bdbf29d4452d492e551c7',
  party: { id: 'spotify:94490510688792576' },
  name: 'Spotify',
  id: 'spotify:1',
  flags: 48,
  details: 'rehearsal-take-3',
  created_at: 1615529838051,
  assets: { large_text: 'Voice Memos' },
};

export const YTM_IMAGE_KEY =
  'mp:external/Ljyyq5jzYDmpORm8iMFr3-vjjlrV5E0Ec7D7fTjYQ3Y/https/lh3.googleusercontent.com/3c9qO5HvV2x9Rc_a0fUOpPY1pLwnqCSbvOZ4Qsm0AlBX4tNlCBb3ZOQHg4W7Lp0ASJe2Dm6tl7fQEtcp=w544-h544-l90-rj';

/** Pear Desktop (th-ch/youtube-music), playing. */
export const PEAR_DESKTOP_LITERAL = {
  type: 2,
  timestamps: { start: T0, end: T0 + 213_000 },
  state: 'Rick Astley',
  name: 'YouTube Music',
  id: '8a3d1e2f4b5c6d7e',
  details: 'Never Gonna Give You Up',
  details_url: 'https://music.youtube.com/watch?v=lYBUbBu4W08',
  created_at: T0 + 412,
  assets: { large_image: YTM_IMAGE_KEY, large_text: 'Whenever You Need Somebody' },
  buttons: ['Play on YouTube Music'],
  application_id: '1177081335727267940',
};

/** The same player, paused: "⏸︎" (U+23F8 U+FE0E) as large_text, no timestamps. */
export const PEAR_DESKTOP_PAUSED_LITERAL = {
  type: 2,
  state: 'Rick Astley',
  name: 'YouTube Music',
  id: '8a3d1e2f4b5c6d7e',
  details: 'Never Gonna Give You Up',
  details_url: 'https://music.youtube.com/watch?v=lYBUbBu4W08',
  created_at: T0 + 60_412,
  assets: { large_image: YTM_IMAGE_KEY, large_text: '\u23F8\uFE0E' },
  buttons: ['Play on YouTube Music'],
  application_id: '1177081335727267940',
};

/** Cider (Apple Music): a Listening activity that is neither Spotify nor YouTube Music. */
export const APPLE_MUSIC_LITERAL = {
  type: 2,
  timestamps: { start: T0, end: T0 + 180_000 },
  state: 'by Phoebe Bridgers',
  name: 'Apple Music',
  id: 'f1e2d3c4b5a69788',
  details: 'Motion Sickness',
  created_at: T0 + 120,
  assets: {
    large_image: 'mp:external/abc/https/is1-ssl.mzstatic.com/image/thumb/x/600x600bb.jpg',
    large_text: 'Stranger in the Alps',
  },
  application_id: '911790844204437504',
};

/** Custom status with a unicode emoji. */
export const CUSTOM_STATUS_LITERAL = {
  type: 4,
  state: 'looking for a job',
  name: 'Custom Status',
  id: 'custom',
  emoji: { name: '🤍' },
  created_at: 1661560734744,
};

/** Visual Studio Code's rich presence: app asset ids as image keys. */
export const VSCODE_LITERAL = {
  type: 0,
  timestamps: { start: 1615438153941 },
  state: 'Workspace: lanyard',
  name: 'Visual Studio Code',
  id: '66b84f5317e9de6c',
  details: 'Editing README.md',
  created_at: 1615529838051,
  assets: {
    small_text: 'Visual Studio Code',
    small_image: '565945770067623946',
    large_text: 'Editing a MARKDOWN file',
    large_image: '565945077491433494',
  },
  application_id: '383226320970055681',
};

/** A literal above as the typed activity it is. */
export function activity(literal: object): GatewayActivity {
  return structuredClone(literal) as GatewayActivity;
}

/**
 * A number as JSON.parse reads it: an id sent unquoted above 2^53 has lost its low digits by then
 * (JSON.parse('383226320970055681') === 383226320970055700).
 */
export function jsonNumber(digits: string): number {
  return JSON.parse(digits) as number;
}

/** Everything as a fresh, mutable copy (tests must not share objects). */
export function copy<T>(value: T): T {
  return structuredClone(value);
}
