import { isSnowflake } from '../snowflake.js';
import { cdnBase, urlComponent, webUrl } from './values.js';

/** `mp:<path>`: an image Discord's media proxy serves (external images, uploaded assets). */
export const MEDIA_PROXY_PREFIX = 'mp:';
export const MEDIA_PROXY_URL = 'https://media.discordapp.net';
/** `spotify:<image id>`: album art on Spotify's image CDN. */
export const SPOTIFY_IMAGE_PREFIX = 'spotify:';
export const SPOTIFY_IMAGE_URL = 'https://i.scdn.co/image';
/** `youtube:<video id>` and `twitch:<user>`: a stream's preview, where Discord's client finds it too. */
export const YOUTUBE_IMAGE_PREFIX = 'youtube:';
export const TWITCH_IMAGE_PREFIX = 'twitch:';

const HTTP_URL = /^https?:\/\//i;
/** `<scheme>:…` — a platform-prefixed key (`twitch:`, `youtube:`, …) that is not an application asset. */
const PREFIXED_KEY = /^[a-z][a-z0-9+.-]*:/i;

/**
 * The URL of an activity image (`assets.large_image` / `small_image`):
 *
 * | key                  | URL                                           |
 * |----------------------|-----------------------------------------------|
 * | `mp:<x>`             | `https://media.discordapp.net/<x>`            |
 * | `http(s)://…`        | the key, as a URL parser writes it (null with credentials) |
 * | `spotify:<id>`       | `https://i.scdn.co/image/<id>`                |
 * | `youtube:<id>`       | `https://i.ytimg.com/vi/<id>/hqdefault_live.jpg` |
 * | `twitch:<user>`      | `https://static-cdn.jtvnw.net/previews-ttv/live_user_<user>.png` |
 * | other `<prefix>:<x>` | null (a platform key we have no URL rule for) |
 * | anything else        | `{cdn}/app-assets/<application_id>/<key>.png` |
 *
 * Null for an empty or non-string key, and for an application asset without a valid application id.
 */
export function activityImageUrl(key: unknown, applicationId: unknown, cdnUrl: string): string | null {
  if (typeof key !== 'string' || key === '') return null;
  if (key.startsWith(MEDIA_PROXY_PREFIX)) {
    const path = key.slice(MEDIA_PROXY_PREFIX.length).replace(/^\/+/, '');
    return path === '' ? null : `${MEDIA_PROXY_URL}/${path}`;
  }
  if (HTTP_URL.test(key)) return webUrl(key);
  if (key.startsWith(SPOTIFY_IMAGE_PREFIX)) {
    const id = key.slice(SPOTIFY_IMAGE_PREFIX.length);
    return id === '' ? null : `${SPOTIFY_IMAGE_URL}/${urlComponent(id)}`;
  }
  if (key.startsWith(YOUTUBE_IMAGE_PREFIX)) {
    const id = key.slice(YOUTUBE_IMAGE_PREFIX.length);
    return id === '' ? null : `https://i.ytimg.com/vi/${urlComponent(id)}/hqdefault_live.jpg`;
  }
  if (key.startsWith(TWITCH_IMAGE_PREFIX)) {
    const user = key.slice(TWITCH_IMAGE_PREFIX.length).toLowerCase();
    return user === ''
      ? null
      : `https://static-cdn.jtvnw.net/previews-ttv/live_user_${urlComponent(user)}.png`;
  }
  if (PREFIXED_KEY.test(key)) return null;
  if (typeof applicationId !== 'string' || !isSnowflake(applicationId)) return null;
  return `${cdnBase(cdnUrl)}/app-assets/${applicationId}/${urlComponent(key)}.png`;
}
