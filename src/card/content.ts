import type { DiscordStatus, DiscordUser, MusicSource, PresenceSummary } from '../presence/model.js';
import { avatarHash, avatarUrl, defaultAvatarIndex, defaultAvatarUrl } from '../presence/normalize/avatar.js';
import { activityImageUrl } from '../presence/normalize/images.js';
import { cdnBase, field, isRecord, textOrNull, timestampOrNull } from '../presence/normalize/values.js';
import { cleanText } from './escape.js';
import { type CardOptions, DEFAULT_IDLE_MESSAGE } from './options.js';

/**
 * What a card shows, decided from the presence and the options before anything is drawn: the route reads
 * the image URLs off it to fetch them, and the renderer draws it. Texts are cleaned (one line, nothing XML
 * forbids) but not yet cut to fit; that depends on the layout.
 */
export interface CardContent {
  userId: string;
  monitored: boolean;
  displayName: string;
  /** `@handle`, without the @; null when unknown. */
  username: string | null;
  status: DiscordStatus;
  /** While the presence is stale, its `observed_at`: the status is unknown since then; null otherwise. */
  unknownSince: number | null;
  customStatus: CardCustomStatus | null;
  /** Where to fetch the avatar: the user's own, then Discord's default one. */
  avatarUrls: string[];
  /** Which default avatar (its colour) to draw when no image can be had. */
  defaultAvatar: number;
  /** The avatar decoration's image (drawn over the avatar); null: none, or hidden. */
  decorationUrl: string | null;
  /** The server tag shown beside the name; null: none, or hidden. */
  tag: CardTag | null;
  /** What the panel shows; null: no panel (`hideActivity=whenNotUsed` with nothing to show). */
  main: CardMusic | CardActivity | CardIdle | null;
  /** The activities shown in panels of their own below the main one (`maxActivities`), in order. */
  more: CardActivity[];
}

export interface CardTag {
  text: string;
  badgeUrl: string | null;
}

export interface CardCustomStatus {
  text: string | null;
  /** A unicode emoji as text, or a custom emoji's image URL (`name` as its fallback). */
  emoji: { name: string; url: string | null } | null;
}

export interface CardMusic {
  kind: 'music';
  source: MusicSource;
  song: string;
  artist: string | null;
  album: string | null;
  artUrl: string | null;
  start: number | null;
  end: number | null;
}

export interface CardActivity {
  kind: 'activity';
  /** Discord's activity type: 0 Playing, 1 Streaming, 2 Listening, 3 Watching, 5 Competing. */
  type: number;
  name: string;
  details: string | null;
  state: string | null;
  imageUrl: string | null;
  start: number | null;
}

export interface CardIdle {
  kind: 'idle';
  message: string;
}

/** Asked of the CDN: twice the drawn size, for high-density screens. */
export const AVATAR_IMAGE_SIZE = 128;
export const EMOJI_IMAGE_SIZE = 64;
export const BADGE_IMAGE_SIZE = 32;
/** The decoration is drawn 1.2 times the avatar's size, at twice that for high-density screens. */
export const DECORATION_IMAGE_SIZE = 256;
/** Discord's server tags are at most four characters. */
const MAX_TAG_LENGTH = 4;
const ASSET_HASH = /^(?:a_)?[0-9a-f]{32}$/;

const ACTIVITY_TYPE_CUSTOM = 4;
const ACTIVITY_TYPE_LISTENING = 2;
/** Which activity the card shows when there are several: a game before a stream before a show… */
const ACTIVITY_PRIORITY: Record<number, number> = { 0: 0, 1: 1, 3: 2, 5: 3, 2: 4 };

/**
 * The user's own avatar as a PNG at a small size (an animated one's first frame: a GIF of every frame
 * would outweigh the rest of the card), or null without one.
 */
function ownAvatarUrl(cdnUrl: string, user: DiscordUser): string | null {
  const hash = avatarHash(user);
  return hash === null ? null : avatarUrl(cdnUrl, user.id, hash, 'png', AVATAR_IMAGE_SIZE);
}

/** A custom emoji's image; an animated one as a GIF when the card animates. */
export function emojiUrl(cdnUrl: string, id: string, animated: boolean): string | null {
  if (!/^\d{1,20}$/.test(id)) return null;
  return `${cdnBase(cdnUrl)}/emojis/${id}.${animated ? 'gif' : 'png'}?size=${EMOJI_IMAGE_SIZE}`;
}

const text = (value: unknown): string | null => {
  const raw = textOrNull(value);
  if (raw === null) return null;
  const cleaned = cleanText(raw);
  return cleaned === '' ? null : cleaned;
};

/** What the card of a monitored user shows. */
export function cardContent(presence: PresenceSummary, options: CardOptions, cdnUrl: string): CardContent {
  const user = presence.discord_user;
  const username = text(user.username);
  const discriminator = typeof user.discriminator === 'string' ? user.discriminator : null;
  const ownAvatar = ownAvatarUrl(cdnUrl, user);
  const fallback = defaultAvatarUrl(cdnUrl, user.id, discriminator);
  return {
    userId: user.id,
    monitored: true,
    displayName: text(user.global_name) ?? username ?? user.id,
    username,
    status: presence.discord_status,
    // A presence from a node older than freshness says neither: it is taken as current.
    unknownSince: presence.stale === true ? presence.observed_at : null,
    customStatus: options.hideStatus ? null : customStatusOf(presence, options, cdnUrl),
    avatarUrls: ownAvatar === null ? [fallback] : [ownAvatar, fallback],
    defaultAvatar: defaultAvatarIndex(user.id, discriminator),
    decorationUrl: options.hideDecoration ? null : decorationUrl(cdnUrl, user),
    tag: options.hideTag ? null : tagOf(cdnUrl, user),
    ...panelsOf(presence, options, cdnUrl),
  };
}

/** Characters of a malformed id the error card repeats. */
const SHOWN_ID_LENGTH = 40;

/**
 * The card for a path whose id is not a Discord user id: an image that says so, where a README would
 * otherwise show a broken one.
 */
export function invalidIdContent(given: string): CardContent {
  const shown = [...cleanText(given)].slice(0, SHOWN_ID_LENGTH).join('');
  return {
    userId: shown === '' ? '(empty)' : shown,
    monitored: false,
    displayName: 'Not a Discord user ID',
    username: null,
    status: 'offline',
    unknownSince: null,
    customStatus: null,
    avatarUrls: [],
    defaultAvatar: 0,
    decorationUrl: null,
    tag: null,
    more: [],
    main: {
      kind: 'idle',
      message: 'User IDs are 17 to 20 digits: Copy User ID in Discord (Developer Mode)',
    },
  };
}

/** The card of an id nobody shares a server with the bot: it says so, with Discord's default avatar. */
export function unmonitoredContent(userId: string, cdnUrl: string): CardContent {
  return {
    userId,
    monitored: false,
    displayName: 'Not monitored',
    username: null,
    status: 'offline',
    unknownSince: null,
    customStatus: null,
    avatarUrls: [defaultAvatarUrl(cdnUrl, userId)],
    defaultAvatar: defaultAvatarIndex(userId),
    decorationUrl: null,
    tag: null,
    more: [],
    main: {
      kind: 'idle',
      message: `User ${userId} shares no server with this Presently bot`,
    },
  };
}

/** The decoration's still image (`passthrough=false`: the first frame of an animated one). */
function decorationUrl(cdnUrl: string, user: DiscordUser): string | null {
  const asset = field(user.avatar_decoration_data, 'asset');
  if (typeof asset !== 'string' || !ASSET_HASH.test(asset)) return null;
  return `${cdnBase(cdnUrl)}/avatar-decoration-presets/${asset}.png?size=${DECORATION_IMAGE_SIZE}&passthrough=false`;
}

/** The server tag the user shows, with its badge; Discord sends `identity_enabled: null` for shown ones too. */
function tagOf(cdnUrl: string, user: DiscordUser): CardTag | null {
  const guild = user.primary_guild;
  if (!isRecord(guild) || guild.identity_enabled === false) return null;
  const tag = text(guild.tag);
  if (tag === null) return null;
  const guildId = guild.identity_guild_id;
  const badge = guild.badge;
  const badgeUrl =
    typeof guildId === 'string' &&
    /^\d{17,20}$/.test(guildId) &&
    typeof badge === 'string' &&
    ASSET_HASH.test(badge)
      ? `${cdnBase(cdnUrl)}/guild-tag-badges/${guildId}/${badge}.png?size=${BADGE_IMAGE_SIZE}`
      : null;
  return { text: [...tag].slice(0, MAX_TAG_LENGTH).join(''), badgeUrl };
}

/** The idle message, or no panel where it is not wanted (and the profile is there to show instead). */
function idleOf(options: CardOptions): CardIdle | null {
  if (options.hideIdle && !options.hideProfile) return null;
  // A message of nothing but control characters cleans to nothing; the default says more than a blank.
  return { kind: 'idle', message: cleanText(options.idleMessage) || DEFAULT_IDLE_MESSAGE };
}

function customStatusOf(
  presence: PresenceSummary,
  options: CardOptions,
  cdnUrl: string,
): CardCustomStatus | null {
  const status = presence.custom_status;
  if (!status) return null;
  const statusText = text(status.text);
  let emoji: CardCustomStatus['emoji'] = null;
  const name = status.emoji ? text(status.emoji.name) : null;
  if (status.emoji && name !== null) {
    const url =
      status.emoji.id === null
        ? null
        : emojiUrl(cdnUrl, status.emoji.id, status.emoji.animated && options.animated);
    emoji = { name, url };
  }
  if (statusText === null && emoji === null) return null;
  return { text: statusText, emoji };
}

function musicOf(presence: PresenceSummary, options: CardOptions): CardMusic | null {
  const playing = presence.now_playing;
  if (!playing || options.hideMusic) return null;
  const song = text(playing.song);
  if (song === null) return null;
  const { start, end } = playing.timestamps;
  return {
    kind: 'music',
    source: playing.source,
    song,
    // Spotify joins several artists with "; "; a reader expects commas.
    artist: text(playing.artist)?.replaceAll('; ', ', ') ?? null,
    album: text(playing.album),
    artUrl: playing.album_art_url,
    start,
    end: start !== null && end !== null && end > start ? end : null,
  };
}

/** The main panel (music, else the first activity, else the idle message) and the activities after it. */
function panelsOf(
  presence: PresenceSummary,
  options: CardOptions,
  cdnUrl: string,
): Pick<CardContent, 'main' | 'more'> {
  const music = musicOf(presence, options);
  const activities = activitiesOf(presence, options, cdnUrl);
  const [first, ...rest] = music === null ? activities : [music, ...activities];
  return {
    main: first ?? idleOf(options),
    more: (rest as CardActivity[]).slice(0, options.maxActivities - 1),
  };
}

/** The activities the card may show, a game before a stream before a show…, each kind in Discord's order. */
function activitiesOf(presence: PresenceSummary, options: CardOptions, cdnUrl: string): CardActivity[] {
  if (options.hideActivity) return [];
  const found: { rank: number; activity: CardActivity }[] = [];
  for (const activity of presence.activities as unknown[]) {
    if (!isRecord(activity)) continue;
    const type = typeof activity.type === 'number' ? activity.type : -1;
    const rank = ACTIVITY_PRIORITY[type];
    if (rank === undefined || type === ACTIVITY_TYPE_CUSTOM) continue;
    // While music plays, its Listening activity is the music (shown, or hidden by hideMusic), not an app.
    if (type === ACTIVITY_TYPE_LISTENING && presence.now_playing !== null) continue;
    const name = text(activity.name);
    if (name === null) continue;
    const assets = activity.assets;
    const applicationId = activity.application_id;
    if (typeof applicationId === 'string' && options.ignoreAppIds.includes(applicationId)) continue;
    found.push({
      rank,
      activity: {
        kind: 'activity',
        type,
        name,
        details: text(activity.details),
        state: text(activity.state),
        imageUrl:
          activityImageUrl(field(assets, 'large_image'), applicationId, cdnUrl) ??
          activityImageUrl(field(assets, 'small_image'), applicationId, cdnUrl),
        start: timestampOrNull(field(activity.timestamps, 'start')),
      },
    });
  }
  // A stable sort: activities of one kind keep Discord's order.
  return found.sort((a, b) => a.rank - b.rank).map(({ activity }) => activity);
}
