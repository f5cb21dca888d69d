import {
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayMessageCreateDispatchData,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { HistoryRecorder } from '../../history/recorder.js';
import type { ApiKeyService } from '../../keys/service.js';
import type { KvService } from '../../kv/service.js';
import type { Snowflake } from '../../presence/model.js';
import { rotateLeakedKeys } from '../leaked-keys.js';
import type { Messenger } from '../messenger.js';
import { apikeyCommand } from './apikey.js';
import type { Command } from './command.js';
import { forgetCommand } from './forget.js';
import { helpCommand } from './help.js';
import { delCommand, getCommand, kvCommand, setCommand } from './kv.js';

/** Every command the bot answers; a new command is one file and one entry here. */
export const COMMANDS: readonly Command[] = [
  apikeyCommand,
  kvCommand,
  getCommand,
  setCommand,
  delCommand,
  forgetCommand,
  helpCommand,
];

export interface BotOptions {
  prefix: string;
  keys: ApiKeyService;
  kv: KvService;
  history: Pick<HistoryRecorder, 'forget'>;
  messenger: Messenger;
  logger: Logger;
}

/** Reads every message: rotates leaked keys, and answers commands. */
export class Bot {
  private botUserId: Snowflake | undefined;

  constructor(private readonly options: BotOptions) {}

  /** Resolves when the message has been handled, replies included. */
  handle(payload: GatewayDispatchPayload): Promise<void> | undefined {
    if (payload.t === GatewayDispatchEvents.Ready) {
      this.botUserId = payload.d.user.id;
      return undefined;
    }
    if (payload.t !== GatewayDispatchEvents.MessageCreate) return undefined;
    return this.message(payload.d).catch((error: unknown) => {
      this.options.logger.error({ err: error, messageId: payload.d.id }, 'failed to handle a message');
    });
  }

  private async message(message: GatewayMessageCreateDispatchData): Promise<void> {
    // The bot's own messages carry keys it hands out; reading them back must not rotate them.
    if (message.author.id === this.botUserId || typeof message.content !== 'string') return;
    const { prefix, messenger } = this.options;
    if (await rotateLeakedKeys(message, { ...this.options, prefix })) return;
    if (message.author.bot || !message.content.startsWith(prefix)) return;

    const match = /^(\S+)\s*([\s\S]*)$/.exec(message.content.slice(prefix.length));
    const name = match?.[1]?.toLowerCase() ?? '';
    const isDm = message.guild_id === undefined;
    const reply = (content: string) => messenger.reply(message.channel_id, message.id, content);
    const command = COMMANDS.find((candidate) => candidate.name === name);
    if (!command) {
      // In servers "?" starts ordinary sentences too; only a DM is surely meant for the bot.
      if (isDm && name !== '') await reply(`I don't know \`${prefix}${name}\`. Try \`${prefix}help\`.`);
      return;
    }
    if (command.where === 'dm' && !isDm) {
      await reply(`\`${prefix}${command.name}\` works in DMs only: send it to me in a direct message.`);
      return;
    }
    await command.run({
      message,
      args: match?.[2] ?? '',
      isDm,
      prefix,
      keys: this.options.keys,
      kv: this.options.kv,
      history: this.options.history,
      commands: COMMANDS,
      reply,
    });
  }
}
