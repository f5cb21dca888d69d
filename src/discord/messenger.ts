import { DiscordAPIError, HTTPError, type REST } from '@discordjs/rest';
import {
  type APIChannel,
  RESTJSONErrorCodes,
  type RESTPostAPIChannelMessageJSONBody,
  Routes,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Snowflake } from '../presence/model.js';

/** Discord refuses longer messages. */
export const MAX_MESSAGE_LENGTH = 2000;

/** Whether Discord accepted a message; if not, why, in words fit to show the user. */
export type Delivery = { accepted: true } | { accepted: false; reason: string };

/** The bot's voice: replies in a channel and direct messages. Failures are logged and reported, never thrown. */
export class Messenger {
  private readonly dmChannels = new Map<Snowflake, Snowflake>();

  constructor(
    /** Discord's REST, which answers to interactions go through too. */
    readonly rest: REST,
    private readonly logger: Logger,
  ) {}

  reply(channelId: Snowflake, messageId: Snowflake, content: string): Promise<Delivery> {
    return this.post(channelId, content, messageId);
  }

  async dm(userId: Snowflake, content: string): Promise<Delivery> {
    let channelId = this.dmChannels.get(userId);
    if (channelId === undefined) {
      try {
        const channel = (await this.rest.post(Routes.userChannels(), {
          body: { recipient_id: userId },
        })) as APIChannel;
        channelId = channel.id;
      } catch (error) {
        this.logger.warn({ failure: failureOf(error), userId }, 'could not open a DM with the user');
        return { accepted: false, reason: reasonOf(error) };
      }
      this.dmChannels.set(userId, channelId);
    }
    return this.post(channelId, content);
  }

  private async post(channelId: Snowflake, content: string, replyTo?: Snowflake): Promise<Delivery> {
    const body: RESTPostAPIChannelMessageJSONBody = {
      content: truncated(content),
      // Replies quote user text: never let it ping anyone.
      allowed_mentions: { parse: [] },
      ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}),
    };
    try {
      await this.rest.post(Routes.channelMessages(channelId), { body });
      return { accepted: true };
    } catch (error) {
      this.logger.warn({ failure: failureOf(error), channelId }, 'could not send a message');
      return { accepted: false, reason: reasonOf(error) };
    }
  }
}

/**
 * A failed request, as the log shows it: what Discord answered, never the request. Discord's REST client
 * keeps the request on its errors, and the body of a message is its content: a new API key, often.
 */
export function failureOf(error: unknown): Record<string, unknown> {
  if (error instanceof DiscordAPIError)
    return { status: error.status, code: error.code, message: error.message };
  if (error instanceof HTTPError) return { status: error.status, message: error.message };
  return { message: error instanceof Error ? error.message : String(error) };
}

/** What Discord answered, in plain words for the user: the end of "I could not send it: …". */
export function reasonOf(error: unknown): string {
  if (error instanceof DiscordAPIError) {
    if (error.code === RESTJSONErrorCodes.CannotSendMessagesToThisUser)
      return 'Discord refused it because direct messages from me are not allowed (a privacy setting or a block)';
    if (error.code === RESTJSONErrorCodes.CannotSendMessagesToThisUserDueToHavingNoMutualGuilds)
      return 'Discord refused it because we no longer share a server';
    if (error.status === 429) return 'Discord is limiting how fast I may send messages';
    const said = error.message.split('\n')[0];
    return `Discord refused it (${error.status}: ${said})`;
  }
  if (error instanceof HTTPError) return `Discord failed to take it (HTTP ${error.status})`;
  if (error instanceof Error && error.name === 'AbortError') return 'Discord did not answer in time';
  return 'I could not reach Discord';
}

/** Cut to what Discord takes in a message. */
export function truncated(content: string): string {
  if (content.length <= MAX_MESSAGE_LENGTH) return content;
  return `${content.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}
