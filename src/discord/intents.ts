import { GatewayIntentBits } from 'discord-api-types/v10';

/**
 * What Presently needs to see: guilds, members and their presences, and the bot's DMs (whose content needs
 * no privileged intent). Commands come as interactions, which need no intent at all.
 */
export const INTENTS =
  GatewayIntentBits.Guilds |
  GatewayIntentBits.GuildMembers |
  GatewayIntentBits.GuildPresences |
  GatewayIntentBits.DirectMessages;

/** With MESSAGE_CONTENT=on, server messages too: `?` commands there, and keys leaked there. */
export const LEGACY_MESSAGE_INTENTS = GatewayIntentBits.GuildMessages | GatewayIntentBits.MessageContent;

export function intentsFor(config: { messageContent: boolean }): number {
  return config.messageContent ? INTENTS | LEGACY_MESSAGE_INTENTS : INTENTS;
}

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
    'disallowed intents: enable the Server Members and Presence intents for the bot in the Developer Portal (and Message Content, with MESSAGE_CONTENT=on)',
  ],
]);
