import type { Snowflake } from '../presence/model.js';
import { ApiError } from './errors.js';

/** What a `user_not_monitored` answer needs to say how to become monitored. */
export interface NotMonitoredSettings {
  /** The bot's name as the gateway knows it; null when this node has not been told (an API node). */
  botName: () => string | null;
  /** `DISCORD_INVITE_URL`: a server the bot is in, to join; null when the instance names none. */
  inviteUrl: string | null;
  /** With `MONITOR=opt-in`, the bot's command prefix: members are monitored once they ask. */
  optInPrefix?: string | null;
}

/** Makes the `user_not_monitored` error of a user: every route that answers it says the same. */
export type NotMonitored = (userId: Snowflake) => ApiError;

/**
 * A user is monitored once they share a server with the bot, so the answer says which bot to find, and
 * where to join it when the instance has an invite.
 */
export function notMonitored({ botName, inviteUrl, optInPrefix = null }: NotMonitoredSettings): NotMonitored {
  return (userId) => {
    const name = botName();
    const bot = name === null ? 'the bot' : `the bot ${name}`;
    const invite = inviteUrl === null ? '' : ` (invite: ${inviteUrl})`;
    const optIn = optInPrefix === null ? '' : `, and send it \`${optInPrefix}start\` in a direct message`;
    return new ApiError(
      'user_not_monitored',
      `User ${userId} is not being monitored by Presently: join a server ${bot} is in${invite}${optIn}`,
    );
  };
}
