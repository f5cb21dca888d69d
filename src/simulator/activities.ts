import { createHash } from 'node:crypto';
import {
  ActivityFlags,
  ActivityType,
  type GatewayActivity,
  type GatewayActivityAssets,
  type GatewayActivityEmoji,
  type GatewayActivitySecrets,
  StatusDisplayType,
} from 'discord-api-types/v10';

/**
 * Activity objects exactly as Discord's gateway sends them (field order included), for the simulator's
 * demo users and for tests. Ids Discord derives (activity ids, session ids, media-proxy hashes) are
 * derived here from the inputs, so the same input gives the same activity: per-guild copies of one update
 * differ only in the timing fields, as they do on Discord.
 *
 * The literals below are Discord's and the players', written out here on purpose rather than imported from
 * presence/: the normalizers are tested against what the platform sends, not against their own constants.
 */

/** The user a Spotify activity's party belongs to when none is given. */
export const DEFAULT_ACTIVITY_USER_ID = '80351110224678912';
export const PEAR_DESKTOP_APPLICATION_ID = '1177081335727267940';
/** What Pear Desktop puts in `large_text` while paused: U+23F8 and the text variation selector U+FE0E. */
export const PEAR_DESKTOP_PAUSED_TEXT = '\u23F8\uFE0E';
export const PREMID_APPLICATION_ID = '463151177836658699';
/** PreMiD's `large_text` when the page gives it none: its own name and version. */
export const PREMID_DEFAULT_TEXT = 'PreMiD \u2022 v2.7.4';
/** Music Presence's application for Apple Music. */
export const APPLE_MUSIC_APPLICATION_ID = '1247654840780460125';

export interface SpotifyTrack {
  song: string;
  artists: readonly string[];
  album: string;
  /** The album art's id on i.scdn.co, e.g. "ab67616d0000b273…". */
  imageId: string;
  /** Spotify's 22-character track id. */
  trackId: string;
  start: number;
  end: number;
  createdAt?: number;
  /** Whose Spotify this is: the party is "spotify:<user id>". */
  userId?: string;
  sessionId?: string;
}

/** Spotify's own Listening activity (Discord's integration, `id` "spotify:1", flags SYNC | PLAY). */
export function spotifyActivity(track: SpotifyTrack): GatewayActivity {
  const userId = track.userId ?? DEFAULT_ACTIVITY_USER_ID;
  return {
    type: ActivityType.Listening,
    timestamps: { start: track.start, end: track.end },
    sync_id: track.trackId,
    state: track.artists.join('; '),
    session_id: track.sessionId ?? sessionIdFor(userId),
    party: { id: `spotify:${userId}` },
    name: 'Spotify',
    id: 'spotify:1',
    flags: ActivityFlags.Sync | ActivityFlags.Play,
    details: track.song,
    created_at: track.createdAt ?? track.start,
    assets: { large_text: track.album, large_image: `spotify:${track.imageId}` },
  };
}

export interface SpotifyLocalFile {
  song: string;
  album?: string;
  start: number;
  end: number;
  createdAt?: number;
  userId?: string;
  sessionId?: string;
}

/** Spotify playing a local file: no `sync_id`, no `state` (artists), no `large_image`. */
export function spotifyLocalFileActivity(file: SpotifyLocalFile): GatewayActivity {
  const userId = file.userId ?? DEFAULT_ACTIVITY_USER_ID;
  return {
    type: ActivityType.Listening,
    timestamps: { start: file.start, end: file.end },
    session_id: file.sessionId ?? sessionIdFor(userId),
    party: { id: `spotify:${userId}` },
    name: 'Spotify',
    id: 'spotify:1',
    flags: ActivityFlags.Sync | ActivityFlags.Play,
    details: file.song,
    created_at: file.createdAt ?? file.start,
    ...(file.album === undefined ? {} : { assets: { large_text: file.album } }),
  };
}

export interface YouTubeMusicTrack {
  title: string;
  artist: string;
  /** Null or absent: the player sends no `large_text`. */
  album?: string | null;
  videoId: string;
  /** The thumbnail's URL (lh3.googleusercontent.com, i.ytimg.com); Discord proxies it as `mp:external/…`. */
  imageUrl: string;
  start?: number;
  end?: number;
  /** As Pear Desktop pauses: `large_text` "⏸︎" and no timestamps. */
  paused?: boolean;
  /** Pear Desktop by default; PreMiD and ytmdesktop publish under their own ids. */
  applicationId?: string;
  name?: string;
  createdAt?: number;
}

/** A YouTube Music desktop player's rich presence, as Pear Desktop publishes it. */
export function youtubeMusicActivity(track: YouTubeMusicTrack): GatewayActivity {
  const applicationId = track.applicationId ?? PEAR_DESKTOP_APPLICATION_ID;
  const name = track.name ?? 'YouTube Music';
  const timed = !track.paused && track.start !== undefined;
  const largeText = track.paused ? PEAR_DESKTOP_PAUSED_TEXT : (track.album ?? undefined);
  return {
    type: ActivityType.Listening,
    ...(timed
      ? {
          timestamps:
            track.end === undefined ? { start: track.start } : { start: track.start, end: track.end },
        }
      : {}),
    state: track.artist,
    name,
    id: activityIdFor(`${applicationId}:${name}`),
    details: track.title,
    details_url: `https://music.youtube.com/watch?v=${track.videoId}`,
    created_at: track.createdAt ?? track.start ?? Date.now(),
    assets: {
      large_image: mediaProxyKey(track.imageUrl),
      ...(largeText === undefined || largeText === '' ? {} : { large_text: largeText }),
    },
    buttons: ['Play on YouTube Music'],
    application_id: applicationId,
  };
}

export interface CustomStatus {
  text?: string;
  /** `{name}` for a unicode emoji; `{name, id, animated}` for a custom one. */
  emoji?: GatewayActivityEmoji;
  createdAt?: number;
}

/** The Custom Status activity (type 4): `state` is the text. */
export function customStatusActivity(status: CustomStatus): GatewayActivity {
  return {
    type: ActivityType.Custom,
    ...(status.text === undefined ? {} : { state: status.text }),
    name: 'Custom Status',
    id: 'custom',
    ...(status.emoji === undefined ? {} : { emoji: status.emoji }),
    created_at: status.createdAt ?? Date.now(),
  };
}

export interface Game {
  name: string;
  applicationId: string;
  details?: string;
  state?: string;
  start?: number;
  createdAt?: number;
  /** Application asset ids (snowflakes) and their hover texts. */
  largeImage?: string;
  largeText?: string;
  smallImage?: string;
  smallText?: string;
}

/** A Playing activity from a game or app with a Discord application (rich presence). */
export function gameActivity(game: Game): GatewayActivity {
  const assets = {
    ...(game.smallText === undefined ? {} : { small_text: game.smallText }),
    ...(game.smallImage === undefined ? {} : { small_image: game.smallImage }),
    ...(game.largeText === undefined ? {} : { large_text: game.largeText }),
    ...(game.largeImage === undefined ? {} : { large_image: game.largeImage }),
  };
  return {
    type: ActivityType.Playing,
    ...(game.start === undefined ? {} : { timestamps: { start: game.start } }),
    ...(game.state === undefined ? {} : { state: game.state }),
    name: game.name,
    id: activityIdFor(`${game.applicationId}:${game.name}`),
    ...(game.details === undefined ? {} : { details: game.details }),
    created_at: game.createdAt ?? game.start ?? Date.now(),
    ...(Object.keys(assets).length === 0 ? {} : { assets }),
    application_id: game.applicationId,
  };
}

/**
 * An activity as the gateway carries it, which is looser than discord-api-types' GatewayActivity: activities
 * from rich-presence libraries may lack `id` and `created_at`, carry `application_id` as a JSON number,
 * `null` for an image key, and `metadata.button_urls` beside the buttons' labels.
 */
export type WireActivity = Omit<GatewayActivity, 'id' | 'created_at' | 'application_id' | 'assets'> & {
  id?: string;
  created_at?: number;
  application_id?: string | number;
  assets?: { [K in keyof GatewayActivityAssets]?: GatewayActivityAssets[K] | null };
  metadata?: { button_urls?: string[] };
};

export interface RichPresence {
  type: ActivityType;
  name: string;
  /** A number, as older payloads carried it. */
  applicationId?: string | number;
  details?: string;
  detailsUrl?: string;
  state?: string;
  stateUrl?: string;
  statusDisplayType?: StatusDisplayType;
  /** Streaming: the stream's URL. */
  url?: string;
  /** Epoch ms. */
  start?: number;
  end?: number;
  /** Sends the timestamps in microseconds (1000× too large), as some rich-presence libraries do. */
  microsecondTimestamps?: boolean;
  /** Image keys as sent: an application asset, `mp:…`, `<platform>:…`, an https URL, or null. */
  largeImage?: string | null;
  largeText?: string;
  smallImage?: string | null;
  smallText?: string;
  /** Sent as Discord splits them: the labels in `buttons`, the URLs in `metadata.button_urls`. */
  buttons?: readonly { label: string; url: string }[];
  party?: { id?: string; size?: [current: number, max: number] };
  secrets?: GatewayActivitySecrets;
  flags?: ActivityFlags;
  platform?: string;
  sessionId?: string;
  /** Leaves out `id` and `created_at`, as some libraries' activities arrive. */
  bare?: boolean;
  createdAt?: number;
}

/** Any rich presence, with every field the gateway has been seen to carry; what is not given is left out. */
export function richPresenceActivity(presence: RichPresence): GatewayActivity {
  const scale = presence.microsecondTimestamps ? 1000 : 1;
  const timestamps = definedFields({
    start: presence.start === undefined ? undefined : presence.start * scale,
    end: presence.end === undefined ? undefined : presence.end * scale,
  });
  const assets = definedFields({
    large_image: presence.largeImage,
    large_text: presence.largeText,
    small_image: presence.smallImage,
    small_text: presence.smallText,
  });
  const buttons = presence.buttons ?? [];
  const activity: WireActivity = {
    type: presence.type,
    ...(Object.keys(timestamps).length === 0 ? {} : { timestamps }),
    ...definedFields({ state: presence.state, state_url: presence.stateUrl, url: presence.url }),
    name: presence.name,
    ...(presence.bare
      ? {}
      : {
          id: activityIdFor(`${presence.applicationId ?? ''}:${presence.name}`),
          created_at: presence.createdAt ?? presence.start ?? Date.now(),
        }),
    ...definedFields({
      details: presence.details,
      details_url: presence.detailsUrl,
      status_display_type: presence.statusDisplayType,
      platform: presence.platform,
      session_id: presence.sessionId,
      flags: presence.flags,
      party: presence.party,
      secrets: presence.secrets,
    }),
    ...(Object.keys(assets).length === 0 ? {} : { assets }),
    ...(buttons.length === 0
      ? {}
      : {
          buttons: buttons.map((button) => button.label),
          metadata: { button_urls: buttons.map((button) => button.url) },
        }),
    ...definedFields({ application_id: presence.applicationId }),
  };
  // discord-api-types is stricter than the gateway; what is sent is what the gateway carries.
  return activity as unknown as GatewayActivity;
}

export interface Stream {
  service: 'twitch' | 'youtube';
  /** Twitch: the channel's login; YouTube: the live video's id. */
  channel: string;
  title: string;
  /** What is streamed (Twitch's category). */
  game?: string;
  start?: number;
  createdAt?: number;
}

/** Streaming (type 1) as Discord shows a Twitch or YouTube stream: `url` is the stream's. */
export function streamingActivity(stream: Stream): GatewayActivity {
  const twitch = stream.service === 'twitch';
  return richPresenceActivity({
    type: ActivityType.Streaming,
    name: twitch ? 'Twitch' : 'YouTube',
    url: twitch
      ? `https://www.twitch.tv/${stream.channel}`
      : `https://www.youtube.com/watch?v=${stream.channel}`,
    details: stream.title,
    state: stream.game,
    largeImage: `${stream.service}:${stream.channel}`,
    start: stream.start,
    createdAt: stream.createdAt,
  });
}

export interface ListeningTrack {
  /** The player, shown as "Listening to <name>". */
  name: string;
  applicationId: string;
  title: string;
  artist: string;
  album?: string;
  /** The cover's URL; Discord proxies it as `mp:external/…`. */
  imageUrl?: string;
  start?: number;
  end?: number;
  detailsUrl?: string;
  statusDisplayType?: StatusDisplayType;
  createdAt?: number;
}

/** A music player's Listening activity (type 2): details the title, state the artist, large_text the album. */
export function listeningActivity(track: ListeningTrack): GatewayActivity {
  return richPresenceActivity({
    type: ActivityType.Listening,
    name: track.name,
    applicationId: track.applicationId,
    details: track.title,
    detailsUrl: track.detailsUrl,
    state: track.artist,
    statusDisplayType: track.statusDisplayType,
    start: track.start,
    end: track.end,
    largeImage: track.imageUrl === undefined ? undefined : mediaProxyKey(track.imageUrl),
    largeText: track.album,
    createdAt: track.createdAt,
  });
}

export interface AppleMusicTrack {
  title: string;
  artist: string;
  album: string;
  /** The cover on Apple's image CDN (is1-ssl.mzstatic.com). */
  artworkUrl: string;
  /** The track's page is music.apple.com/us/album/<albumSlug>/<albumId>?i=<trackId>. */
  albumSlug: string;
  albumId: string;
  trackId: string;
  start: number;
  end: number;
  createdAt?: number;
}

/** Apple Music as Music Presence publishes it; the member list shows the title (status_display_type 2). */
export function appleMusicActivity(track: AppleMusicTrack): GatewayActivity {
  return listeningActivity({
    name: 'Apple Music',
    applicationId: APPLE_MUSIC_APPLICATION_ID,
    title: track.title,
    artist: track.artist,
    album: track.album,
    imageUrl: track.artworkUrl,
    detailsUrl: `https://music.apple.com/us/album/${track.albumSlug}/${track.albumId}?i=${track.trackId}`,
    statusDisplayType: StatusDisplayType.Details,
    start: track.start,
    end: track.end,
    createdAt: track.createdAt,
  });
}

export type PreMiDTrack = Omit<YouTubeMusicTrack, 'paused' | 'applicationId' | 'name'>;

/** YouTube Music through PreMiD: its application, and its own name and version where no album is known. */
export function premidYouTubeMusicActivity(track: PreMiDTrack): GatewayActivity {
  return youtubeMusicActivity({
    ...track,
    applicationId: PREMID_APPLICATION_ID,
    album: track.album || PREMID_DEFAULT_TEXT,
  });
}

/** The YouTube Music logo PreMiD shows while browsing. */
const PREMID_YOUTUBE_MUSIC_LOGO = 'https://cdn.rcd.gg/PreMiD/websites/Y/YouTube%20Music/assets/logo.png';

/** PreMiD while the user browses YouTube Music: Playing (type 0) under its id, with no timestamps. */
export function premidBrowsingActivity(page: { details: string; createdAt?: number }): GatewayActivity {
  return richPresenceActivity({
    type: ActivityType.Playing,
    name: 'YouTube Music',
    applicationId: PREMID_APPLICATION_ID,
    details: page.details,
    largeImage: mediaProxyKey(PREMID_YOUTUBE_MUSIC_LOGO),
    largeText: PREMID_DEFAULT_TEXT,
    createdAt: page.createdAt,
  });
}

export interface Attachment {
  channelId: string;
  messageId: string;
  /** The file's name, e.g. "cover.png". */
  file: string;
  /** When the signed URL stops working, epoch ms. */
  expiresAt: number;
}

/** Discord signs attachment URLs for a day. */
const ATTACHMENT_URL_LIFETIME_S = 24 * 60 * 60;

/**
 * An image uploaded to Discord, as a media-proxy key: `mp:attachments/<channel>/<message>/<file>` and the
 * signed URL's query, `ex` (expiry) and `is` (issue) in hex seconds and `hm` (Discord's HMAC; a stand-in).
 */
export function attachmentKey(attachment: Attachment): string {
  const expires = Math.floor(attachment.expiresAt / 1000);
  const path = `${attachment.channelId}/${attachment.messageId}/${attachment.file}`;
  const signature = createHash('sha256').update(`${path}:${expires}`).digest('hex');
  const issued = expires - ATTACHMENT_URL_LIFETIME_S;
  return `mp:attachments/${path}?ex=${expires.toString(16)}&is=${issued.toString(16)}&hm=${signature}&`;
}

/**
 * How Discord's media proxy names an external image: `mp:external/<signature>/<scheme>/<host><path>`.
 * The signature is Discord's HMAC; here a stable 43-character base64url stand-in. A key that is already
 * a media-proxy key is kept, and so is text that is not a URL.
 */
export function mediaProxyKey(imageUrl: string): string {
  if (imageUrl.startsWith('mp:') || !URL.canParse(imageUrl)) return imageUrl;
  const url = new URL(imageUrl);
  const signature = createHash('sha256').update(imageUrl).digest('base64url');
  const query = url.search === '' ? '' : encodeURIComponent(url.search);
  return `mp:external/${signature}/${url.protocol.slice(0, -1)}/${url.host}${url.pathname}${query}`;
}

/** Activity ids of rich-presence apps are 16 hex digits. */
function activityIdFor(seed: string): string {
  return createHash('sha256').update(`activity:${seed}`).digest('hex').slice(0, 16);
}

/** Gateway session ids are 32 hex digits. */
function sessionIdFor(userId: string): string {
  return createHash('sha256').update(`session:${userId}`).digest('hex').slice(0, 32);
}

/** The fields whose value is not undefined (null is a value: Discord sends it). */
function definedFields<T extends Record<string, unknown>>(
  fields: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
