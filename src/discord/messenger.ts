import { DiscordAPIError, HTTPError, type REST } from '@discordjs/rest';
import { type APIChannel, type RESTPostAPIChannelMessageJSONBody, Routes } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Snowflake } from '../presence/model.js';

/** Discord refuses longer messages. */
export const MAX_MESSAGE_LENGTH = 2000;

/** The bot's voice: replies in a channel and direct messages. Failures are logged, never thrown. */
export class Messenger {
  private readonly dmChannels = new Map<Snowflake, Snowflake>();

  constructor(
    private readonly rest: REST,
    private readonly logger: Logger,
  ) {}

  async reply(channelId: Snowflake, messageId: Snowflake, content: string): Promise<void> {
    await this.post(channelId, content, messageId);
  }

  async dm(userId: Snowflake, content: string): Promise<void> {
    try {
      let channelId = this.dmChannels.get(userId);
      if (channelId === undefined) {
        const channel = (await this.rest.post(Routes.userChannels(), {
          body: { recipient_id: userId },
        })) as APIChannel;
        channelId = channel.id;
        this.dmChannels.set(userId, channelId);
      }
      await this.post(channelId, content);
    } catch (error) {
      this.logger.warn({ failure: failureOf(error), userId }, 'could not open a DM with the user');
    }
  }

  private async post(channelId: Snowflake, content: string, replyTo?: Snowflake): Promise<void> {
    const body: RESTPostAPIChannelMessageJSONBody = {
      content: truncate(content),
      // Replies quote user text: never let it ping anyone.
      allowed_mentions: { parse: [] },
      ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}),
    };
    try {
      await this.rest.post(Routes.channelMessages(channelId), { body });
    } catch (error) {
      this.logger.warn({ failure: failureOf(error), channelId }, 'could not send a message');
    }
  }
}

/**
 * A failed request, as the log shows it: what Discord answered, never the request. Discord's REST client
 * keeps the request on its errors, and the body of a message is its content: a new API key, often.
 */
function failureOf(error: unknown): Record<string, unknown> {
  if (error instanceof DiscordAPIError)
    return { status: error.status, code: error.code, message: error.message };
  if (error instanceof HTTPError) return { status: error.status, message: error.message };
  return { message: error instanceof Error ? error.message : String(error) };
}

function truncate(content: string): string {
  if (content.length <= MAX_MESSAGE_LENGTH) return content;
  return `${content.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}
