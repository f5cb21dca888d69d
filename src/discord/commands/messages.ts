import type { GatewayMessageCreateDispatchData } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { ApiKeyService } from '../../keys/service.js';
import type { Snowflake } from '../../presence/model.js';
import { rotateLeakedKeys } from '../leaked-keys.js';
import type { Messenger } from '../messenger.js';
import type { Answer } from './command.js';
import type { CommandDispatcher } from './dispatcher.js';
import { PREFIX_WORDS, prefixSpelling } from './prefix-words.js';

export interface MessageCommandsOptions {
  prefix: string;
  dispatcher: CommandDispatcher;
  keys: ApiKeyService;
  messenger: Messenger;
  logger: Logger;
}

/**
 * `?` commands in messages: in the bot's DMs always (no privileged intent is needed to read them), in
 * server channels only when the operator grants MESSAGE_CONTENT. Every message read is checked for live
 * API keys first.
 */
export class MessageCommands {
  constructor(private readonly options: MessageCommandsOptions) {}

  async handle(message: GatewayMessageCreateDispatchData, botUserId: Snowflake | undefined): Promise<void> {
    // The bot's own messages carry keys it hands out; reading them back must not rotate them.
    if (message.author.id === botUserId || typeof message.content !== 'string') return;
    const { prefix, messenger, dispatcher } = this.options;
    if (await rotateLeakedKeys(message, this.options)) return;
    if (message.author.bot || !message.content.startsWith(prefix)) return;

    const match = /^(\S+)\s*([\s\S]*)$/.exec(message.content.slice(prefix.length));
    const name = match?.[1]?.toLowerCase() ?? '';
    const isDm = message.guild_id === undefined;
    const word = PREFIX_WORDS.find((candidate) => candidate.word === name);
    // In servers "?" starts ordinary sentences too; only a DM is surely meant for the bot.
    if (!word && (!isDm || name === '')) return;
    await dispatcher.run({
      userId: message.author.id,
      surface: isDm ? 'dm' : 'guild',
      form: 'prefix',
      word: name,
      named: word?.describes ?? 'unknown',
      invocation: word
        ? word.parse(match?.[2] ?? '', prefix)
        : { usage: `I don't know \`${prefix}${name}\`. Try ${prefixSpelling(prefix, 'help')}.` },
      answer: (answer) => messenger.reply(message.channel_id, message.id, withConfirmation(answer, prefix)),
    });
  }
}

/** A `?` answer says in words what a button would ask: "Send `?forget confirm` to go ahead." */
function withConfirmation(answer: Answer, prefix: string): string {
  if (answer.confirm === undefined) return answer.content;
  const { name, options } = answer.confirm.invocation;
  return `${answer.content} Send ${prefixSpelling(prefix, name, options)} to go ahead.`;
}
