import {
  AllowedMentionsTypes,
  type APIAllowedMentions,
  type APIChannel,
  type APIDMChannel,
  type APIGuildMember,
  type APITextChannel,
  type APIUser,
  type ChannelFlags,
  ChannelType,
  type GatewayActivity,
  type GatewayGuildCreateDispatchData,
  type GatewayGuildMembersChunkPresence,
  type GatewayPresenceClientStatus,
  type GatewayPresenceUpdate,
  GuildDefaultMessageNotifications,
  GuildExplicitContentFilter,
  type GuildMemberFlags,
  GuildMFALevel,
  GuildNSFWLevel,
  GuildPremiumTier,
  GuildSystemChannelFlags,
  GuildVerificationLevel,
  Locale,
  PermissionFlagsBits,
  type PresenceUpdateReceiveStatus,
  type RoleFlags,
  type UserFlags,
} from 'discord-api-types/v10';
import type { DiscordUser, Profile, RawPresence } from '../presence/model.js';

/**
 * The simulated Discord's world: users, their presences and profiles, guilds with members and channels,
 * DM channels. Plain data plus the payload builders that read it; the gateway and REST halves decide who
 * gets what.
 */

export const DISCORD_EPOCH = 1_420_070_400_000;

/** The shard a guild lives on: `(guild_id >> 22) % shard_count`. */
export function shardFor(guildId: string, shardCount: number): number {
  return Number((BigInt(guildId) >> 22n) % BigInt(shardCount));
}

export function isSnowflake(value: string): boolean {
  return /^\d{1,20}$/.test(value) && BigInt(value) < 2n ** 64n;
}

/** Discord's timestamp format: microseconds and an explicit offset, e.g. 2024-05-01T12:00:00.000000+00:00 */
export function discordTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000+00:00');
}

/** What @everyone may do in a simulated guild (and so the bot, which has no role of its own there). */
export const EVERYONE_PERMISSIONS = '2248473465835073';
/** Every permission there is: what a guild's owner has. */
export const ALL_PERMISSIONS = Object.values(PermissionFlagsBits)
  .reduce((all, bit) => all | bit, 0n)
  .toString();

/** Makes snowflakes for the ids the simulator mints (channels, messages), increasing within a process. */
export class SnowflakeGenerator {
  private lastTimestamp = 0n;
  private increment = 0n;

  next(at: number = Date.now()): string {
    let timestamp = BigInt(Math.max(0, at - DISCORD_EPOCH));
    if (timestamp <= this.lastTimestamp) {
      timestamp = this.lastTimestamp;
      this.increment = (this.increment + 1n) & 0xfffn;
      if (this.increment === 0n) timestamp += 1n;
    } else {
      this.increment = 0n;
    }
    this.lastTimestamp = timestamp;
    // worker 1, process 0: recognisably not one of Discord's own workers' ids.
    return ((timestamp << 22n) | (1n << 17n) | this.increment).toString();
  }
}

/** A user as the driver of the simulator describes one: an id and whatever else it cares about. */
export type UserInput = DiscordUser & Partial<Profile>;

/** A presence as the driver describes one; the simulator fills in what is missing. */
export interface PresenceInput {
  status: RawPresence['status'];
  activities?: GatewayActivity[];
  client_status?: RawPresence['client_status'];
}

export interface MemberInput {
  user: UserInput;
  presence?: PresenceInput;
  roles?: string[];
  nick?: string | null;
  /** ms since epoch; default: now. */
  joinedAt?: number;
}

export interface GuildInput {
  id: string;
  name: string;
  members?: MemberInput[];
  icon?: string | null;
  /** Default: the first member, else the bot. */
  ownerId?: string;
}

export interface SimMember {
  userId: string;
  nick: string | null;
  roles: string[];
  joinedAt: number;
}

export interface SimChannel {
  id: string;
  type: ChannelType.DM | ChannelType.GuildText;
  name: string | null;
  guildId: string | null;
  /** DM channels: the user on the other end. */
  recipientId: string | null;
  lastMessageId: string | null;
}

export interface SimGuild {
  id: string;
  name: string;
  icon: string | null;
  ownerId: string;
  joinedAt: number;
  /** An outage: listed as unavailable in READY, no GUILD_CREATE until it ends. */
  unavailable: boolean;
  members: Map<string, SimMember>;
  channelIds: string[];
}

export interface GuildCreateOptions {
  largeThreshold: number;
  /**
   * Past this many members GUILD_CREATE carries only the bot and the members in voice channels (none
   * here), with their presences: https://discord.com/developers/docs/events/gateway-events#guild-create
   */
  hugeGuildMembers: number;
  /** The session has GUILD_PRESENCES: without it Discord sends neither members nor presences here. */
  presences: boolean;
}

const OFFLINE: RawPresence = { status: 'offline', activities: [], client_status: {} };

/** An error answer to a message the bot posts: HTTP status and Discord's JSON error. */
export interface MessageRefusal {
  status: number;
  code: number;
  message: string;
}

export class SimulatorState {
  readonly users = new Map<string, APIUser>();
  readonly presences = new Map<string, RawPresence>();
  readonly profiles = new Map<string, Profile>();
  readonly guilds = new Map<string, SimGuild>();
  readonly channels = new Map<string, SimChannel>();
  /** user id → DM channel id */
  readonly dmChannels = new Map<string, string>();
  /** Users who accept no DMs from the bot (Discord's privacy setting, or a block). */
  readonly closedDms = new Set<string>();
  /** Channel id → how the bot's next messages there are refused, in order (a fault driver's). */
  readonly messageRefusals = new Map<string, MessageRefusal[]>();
  readonly ids = new SnowflakeGenerator();

  constructor(readonly botUserId: string) {}

  get botUser(): APIUser {
    return this.users.get(this.botUserId) as APIUser;
  }

  /** Creates or merges a user; banner and accent colour go to the profile (the gateway never sends them). */
  upsertUser(input: UserInput): APIUser {
    const { banner, accent_color, ...fields } = input;
    const known = this.users.get(input.id);
    const user: APIUser = {
      ...(known ?? defaultUser(input.id)),
      ...stripUndefined(fields),
    };
    this.users.set(user.id, user);
    if (banner !== undefined || accent_color !== undefined) {
      const profile = this.profileOf(user.id);
      this.profiles.set(user.id, {
        banner: banner !== undefined ? banner : profile.banner,
        accent_color: accent_color !== undefined ? accent_color : profile.accent_color,
      });
    }
    return user;
  }

  profileOf(userId: string): Profile {
    return this.profiles.get(userId) ?? { banner: null, accent_color: null };
  }

  presenceOf(userId: string): RawPresence {
    return this.presences.get(userId) ?? OFFLINE;
  }

  setPresence(userId: string, input: PresenceInput): RawPresence {
    const presence = normalizePresence(input);
    this.presences.set(userId, presence);
    return presence;
  }

  isOnline(userId: string): boolean {
    return this.presenceOf(userId).status !== 'offline';
  }

  /** The guilds (available or not) a user is a member of, in creation order. */
  guildsOf(userId: string): SimGuild[] {
    return [...this.guilds.values()].filter((guild) => guild.members.has(userId));
  }

  addGuild(input: GuildInput, now: number): SimGuild {
    const guild: SimGuild = {
      id: input.id,
      name: input.name,
      icon: input.icon ?? null,
      ownerId: input.ownerId ?? input.members?.[0]?.user.id ?? this.botUserId,
      joinedAt: now,
      unavailable: false,
      members: new Map(),
      channelIds: [],
    };
    this.guilds.set(guild.id, guild);
    // The guild's first text channel, as Discord makes one for every new guild.
    this.addGuildChannel(guild, this.ids.next(now), 'general');
    for (const member of input.members ?? []) this.addMember(guild, member, now);
    return guild;
  }

  addMember(guild: SimGuild, input: MemberInput, now: number): SimMember {
    this.upsertUser(input.user);
    if (input.presence) this.setPresence(input.user.id, input.presence);
    const member: SimMember = {
      userId: input.user.id,
      nick: input.nick ?? null,
      roles: input.roles ?? [],
      joinedAt: input.joinedAt ?? now,
    };
    guild.members.set(member.userId, member);
    return member;
  }

  addGuildChannel(guild: SimGuild, id: string, name: string): SimChannel {
    const channel: SimChannel = {
      id,
      type: ChannelType.GuildText,
      name,
      guildId: guild.id,
      recipientId: null,
      lastMessageId: null,
    };
    this.channels.set(id, channel);
    guild.channelIds.push(id);
    return channel;
  }

  /** The DM channel between the bot and a user, made on first use (the id stays the same afterwards). */
  dmChannelFor(userId: string): SimChannel {
    const existing = this.dmChannels.get(userId);
    const known = existing === undefined ? undefined : this.channels.get(existing);
    if (known) return known;
    const channel: SimChannel = {
      id: this.ids.next(),
      type: ChannelType.DM,
      name: null,
      guildId: null,
      recipientId: userId,
      lastMessageId: null,
    };
    this.channels.set(channel.id, channel);
    this.dmChannels.set(userId, channel.id);
    return channel;
  }

  /**
   * A message's `mentions` as Discord lists them: who it notifies, the users mentioned in its content that
   * allowed_mentions lets through, and the author replied to unless allowed_mentions says not to.
   */
  mentionsOf(content: string, allowed: APIAllowedMentions | undefined, repliedTo?: APIUser): APIUser[] {
    const pings = (userId: string): boolean =>
      !allowed ||
      allowed.parse?.includes(AllowedMentionsTypes.User) === true ||
      !!allowed.users?.includes(userId);
    const mentioned = [...content.matchAll(/<@!?(\d{1,20})>/g)].flatMap((match) => {
      const user = this.users.get(match[1] ?? '');
      return user && pings(user.id) ? [user] : [];
    });
    const replied = repliedTo && (!allowed || allowed.replied_user) ? [repliedTo] : [];
    return [...new Map([...mentioned, ...replied].map((user) => [user.id, user])).values()];
  }

  // ---- payloads -------------------------------------------------------------------------------------

  memberPayload(member: SimMember): APIGuildMember {
    return {
      user: this.users.get(member.userId) ?? defaultUser(member.userId),
      nick: member.nick,
      avatar: null,
      banner: null,
      roles: member.roles,
      joined_at: discordTimestamp(member.joinedAt),
      premium_since: null,
      deaf: false,
      mute: false,
      flags: 0 as GuildMemberFlags,
      pending: false,
      communication_disabled_until: null,
    };
  }

  /** A presence for one guild: `user` is `{id}` unless the full user is asked for. */
  presencePayload(
    guildId: string,
    userId: string,
    options: { fullUser?: boolean; shiftMs?: number } = {},
  ): GatewayPresenceUpdate {
    const presence = this.presenceOf(userId);
    return {
      user: options.fullUser ? (this.users.get(userId) ?? { id: userId }) : { id: userId },
      status: presence.status as PresenceUpdateReceiveStatus,
      activities: shiftActivities(presence.activities, options.shiftMs ?? 0),
      client_status: presence.client_status as GatewayPresenceClientStatus,
      guild_id: guildId,
    };
  }

  chunkPresence(userId: string): GatewayGuildMembersChunkPresence {
    const presence = this.presenceOf(userId);
    return {
      user: { id: userId },
      status: presence.status as PresenceUpdateReceiveStatus,
      activities: presence.activities,
      client_status: presence.client_status as GatewayPresenceClientStatus,
    };
  }

  channelPayload(channel: SimChannel): APIChannel {
    if (channel.type === ChannelType.DM) {
      const recipient = channel.recipientId === null ? undefined : this.users.get(channel.recipientId);
      const dm: APIDMChannel = {
        id: channel.id,
        type: ChannelType.DM,
        last_message_id: channel.lastMessageId,
        flags: 0 as ChannelFlags,
        recipients: recipient ? [recipient] : [],
        name: null,
      };
      return dm;
    }
    const text: APITextChannel = {
      id: channel.id,
      type: ChannelType.GuildText,
      guild_id: channel.guildId ?? undefined,
      name: channel.name ?? 'general',
      position: 0,
      parent_id: null,
      topic: null,
      nsfw: false,
      last_message_id: channel.lastMessageId,
      rate_limit_per_user: 0,
      permission_overwrites: [],
      flags: 0 as ChannelFlags,
    };
    return text;
  }

  /**
   * GUILD_CREATE as Discord sends it on connect or join. A guild over the session's `large_threshold` lists
   * only the members who are not offline (the rest come through REQUEST_GUILD_MEMBERS); `presences` never
   * lists offline members.
   */
  guildCreatePayload(guild: SimGuild, options: GuildCreateOptions): GatewayGuildCreateDispatchData {
    const memberCount = guild.members.size;
    const large = memberCount > options.largeThreshold;
    const huge = memberCount > options.hugeGuildMembers;
    const listed = !options.presences
      ? []
      : huge
        ? [...guild.members.values()].filter((member) => member.userId === this.botUserId)
        : [...guild.members.values()].filter((member) => !large || this.isOnline(member.userId));
    return {
      id: guild.id,
      name: guild.name,
      icon: guild.icon,
      splash: null,
      discovery_splash: null,
      owner_id: guild.ownerId,
      afk_channel_id: null,
      afk_timeout: 300,
      verification_level: GuildVerificationLevel.None,
      default_message_notifications: GuildDefaultMessageNotifications.OnlyMentions,
      explicit_content_filter: GuildExplicitContentFilter.Disabled,
      roles: [
        {
          id: guild.id,
          name: '@everyone',
          color: 0,
          colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
          hoist: false,
          icon: null,
          unicode_emoji: null,
          position: 0,
          permissions: EVERYONE_PERMISSIONS,
          managed: false,
          mentionable: false,
          flags: 0 as RoleFlags,
        },
      ],
      emojis: [],
      features: [],
      mfa_level: GuildMFALevel.None,
      application_id: null,
      system_channel_id: guild.channelIds[0] ?? null,
      system_channel_flags: GuildSystemChannelFlags.SuppressJoinNotificationReplies,
      rules_channel_id: null,
      vanity_url_code: null,
      description: null,
      banner: null,
      premium_tier: GuildPremiumTier.None,
      premium_subscription_count: 0,
      preferred_locale: Locale.EnglishUS,
      public_updates_channel_id: null,
      nsfw_level: GuildNSFWLevel.Default,
      stickers: [],
      premium_progress_bar_enabled: false,
      hub_type: null,
      safety_alerts_channel_id: null,
      incidents_data: null,
      max_members: 500_000,
      max_video_channel_users: 25,
      max_stage_video_channel_users: 50,
      joined_at: discordTimestamp(guild.joinedAt),
      large,
      unavailable: false,
      member_count: memberCount,
      voice_states: [],
      members: listed.map((member) => this.memberPayload(member)),
      channels: guild.channelIds.flatMap((id) => {
        const channel = this.channels.get(id);
        return channel ? [this.channelPayload(channel) as APITextChannel] : [];
      }),
      threads: [],
      presences: options.presences
        ? listed
            .filter((member) => this.isOnline(member.userId))
            .map((member) => this.presencePayload(guild.id, member.userId))
        : [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
    };
  }
}

/** A presence with what the driver left out filled in: no activities; active on desktop unless offline. */
export function normalizePresence(input: PresenceInput): RawPresence {
  return {
    status: input.status,
    activities: input.activities ?? [],
    client_status: input.client_status ?? (input.status === 'offline' ? {} : { desktop: input.status }),
  };
}

/** What Discord fills in for a user nobody described further. */
export function defaultUser(id: string): APIUser {
  return {
    id,
    username: `user${id.slice(-4)}`,
    discriminator: '0',
    global_name: null,
    avatar: null,
    public_flags: 0 as UserFlags,
    flags: 0 as UserFlags,
    avatar_decoration_data: null,
  };
}

/**
 * A copy of activities with every timing field moved by `shiftMs`: Discord's per-guild copies of one
 * presence differ in exactly these fields, by a few hundred ms.
 */
export function shiftActivities(activities: GatewayActivity[], shiftMs: number): GatewayActivity[] {
  if (shiftMs === 0) return activities;
  return activities.map((activity) => {
    const copy: GatewayActivity = { ...activity };
    if (activity.timestamps) {
      copy.timestamps = { ...activity.timestamps };
      if (typeof activity.timestamps.start === 'number')
        copy.timestamps.start = activity.timestamps.start + shiftMs;
      if (typeof activity.timestamps.end === 'number')
        copy.timestamps.end = activity.timestamps.end + shiftMs;
    }
    if (typeof activity.created_at === 'number') copy.created_at = activity.created_at + shiftMs;
    return copy;
  });
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}
