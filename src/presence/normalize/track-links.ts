import type { MusicSource } from '../model.js';
import { webUrl } from './values.js';
import { youtubeVideoId } from './youtube-music.js';

/**
 * The service's own id of a track, read from the link a player puts in `details_url`, so that plays of
 * one track count together whichever player published them. Null when the link is not one of the
 * service's track links.
 *
 * | source         | link                                                  | id                 |
 * |----------------|-------------------------------------------------------|--------------------|
 * | `apple_music`  | music.apple.com/…/album/…?i=<id>, …/song/…/<id>       | the number         |
 * | `tidal`        | tidal.com/(browse/)track/<id>                         | the number         |
 * | `deezer`       | deezer.com/(<lang>/)track/<id>                        | the number         |
 * | `soundcloud`   | soundcloud.com/<artist>/<track>                       | `<artist>/<track>` |
 * | `amazon_music` | music.amazon.<tld>/…?trackAsin=<id>, …/tracks/<id>    | the ASIN           |
 * | `youtube_music`| music.youtube.com/watch?v=<id>, youtu.be/<id>          | the video id       |
 */
export function trackIdFrom(source: MusicSource, link: string | null): string | null {
  if (link === null) return null;
  if (source === 'youtube_music') return youtubeVideoId(link);
  const url = httpsUrl(link);
  if (url === null) return null;
  const host = url.hostname.toLowerCase().replace(/^(www|m|listen|embed)\./, '');
  const path = url.pathname.split('/').filter((part) => part !== '');
  switch (source) {
    case 'apple_music':
      if (host !== 'music.apple.com') return null;
      return digits(url.searchParams.get('i')) ?? (path.includes('song') ? digits(path.at(-1)) : null);
    case 'tidal':
      return host === 'tidal.com' ? after(path, 'track', digits) : null;
    case 'deezer':
      return host === 'deezer.com' ? after(path, 'track', digits) : null;
    case 'soundcloud':
      return host === 'soundcloud.com' && path.length === 2 && !RESERVED_SOUNDCLOUD.has(path[0] as string)
        ? `${path[0]}/${path[1]}`.toLowerCase()
        : null;
    case 'amazon_music':
      if (!AMAZON_MUSIC_HOSTS.has(host)) return null;
      return asin(url.searchParams.get('trackAsin')) ?? after(path, 'tracks', asin);
    default:
      return null;
  }
}

/** The link when it is an http(s) URL (written out by the URL parser), else null: what `track_url` may be. */
export function trackUrlFrom(link: unknown): string | null {
  return webUrl(link);
}

/** Amazon Music's sites, one per store. */
const AMAZON_MUSIC_HOSTS: ReadonlySet<string> = new Set(
  ['com', 'ca', 'com.mx', 'com.br', 'co.uk', 'de', 'fr', 'it', 'es', 'in', 'co.jp', 'com.au'].map(
    (tld) => `music.amazon.${tld}`,
  ),
);

/** First path segments of soundcloud.com that are pages, not artists. */
const RESERVED_SOUNDCLOUD: ReadonlySet<string> = new Set(['discover', 'search', 'stream', 'you', 'charts']);

function httpsUrl(link: string): URL | null {
  const url = URL.parse(link);
  return url !== null && (url.protocol === 'https:' || url.protocol === 'http:') ? url : null;
}

function after(path: readonly string[], segment: string, id: (value: string | undefined) => string | null) {
  const at = path.indexOf(segment);
  return at < 0 ? null : id(path[at + 1]);
}

function digits(value: string | null | undefined): string | null {
  return typeof value === 'string' && /^\d{1,20}$/.test(value) ? value : null;
}

function asin(value: string | null | undefined): string | null {
  return typeof value === 'string' && /^[A-Z0-9]{10}$/i.test(value) ? value.toUpperCase() : null;
}
