import { GatewayIntentBits } from 'discord-api-types/v10';

/** What Presently needs to see: guilds, members and their presences, and messages for the bot's commands. */
export const INTENTS =
  GatewayIntentBits.Guilds |
  GatewayIntentBits.GuildMembers |
  GatewayIntentBits.GuildPresences |
  GatewayIntentBits.GuildMessages |
  GatewayIntentBits.DirectMessages |
  GatewayIntentBits.MessageContent;

/** Above this many members Discord leaves offline members out of GUILD_CREATE; we list them with op 8. */
export const LARGE_THRESHOLD = 250;

/**
 * Close codes after which reconnecting cannot help: the token or the app's settings are wrong. Retrying
 * them would only loop (and Discord bans tokens that do).
 */
export const FATAL_CLOSE_CODES: ReadonlyMap<number, string> = new Map([
  [4004, 'authentication failed: DISCORD_TOKEN is not a valid bot token'],
  [4010, 'invalid shard'],
  [4011, 'sharding required: the bot is in too many guilds for one shard'],
  [4012, 'invalid API version'],
  [4013, 'invalid intents'],
  [
    4014,
    'disallowed intents: enable the Server Members and Presence (and Message Content) intents for the bot in the Developer Portal',
  ],
]);
