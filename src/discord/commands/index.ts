import {
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayMessageCreateDispatchData,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { AccountService } from '../../account/service.js';
import type { MonitorMode } from '../../config.js';
import type { HistoryRecorder } from '../../history/recorder.js';
import type { ApiKeyService } from '../../keys/service.js';
import type { KvService } from '../../kv/service.js';
import type { Metrics } from '../../ops/metrics.js';
import type { Snowflake } from '../../presence/model.js';
import type { PrivacyService } from '../../privacy/service.js';
import type { WebhookService } from '../../webhooks/service.js';
import { rotateLeakedKeys } from '../leaked-keys.js';
import type { Messenger } from '../messenger.js';
import { apikeyCommand } from './apikey.js';
import type { Command } from './command.js';
import { CommandCooldown, type CooldownSettings } from './cooldown.js';
import { forgetCommand } from './forget.js';
import { helpCommand } from './help.js';
import { delCommand, getCommand, kvCommand, setCommand } from './kv.js';
import { privacyCommand } from './privacy.js';
import { startCommand, stopCommand } from './start-stop.js';
import { webhooksCommand } from './webhooks.js';

/** Every command the bot answers; a new command is one file and one entry here. */
export const COMMANDS: readonly Command[] = [
  apikeyCommand,
  kvCommand,
  getCommand,
  setCommand,
  delCommand,
  forgetCommand,
  webhooksCommand,
  privacyCommand,
  startCommand,
  stopCommand,
  helpCommand,
];

export interface BotOptions {
  prefix: string;
  keys: ApiKeyService;
  kv: KvService;
  history: Pick<HistoryRecorder, 'forget'>;
  webhooks: Pick<WebhookService, 'list' | 'remove' | 'maxPerUser'>;
  privacy: Pick<PrivacyService, 'settings' | 'change'>;
  account: Pick<AccountService, 'erase'>;
  /** Who the instance monitors; absent: everyone (`all`). */
  monitor?: MonitorMode;
  messenger: Messenger;
  logger: Logger;
  /** Per-user command budget; absent: none. */
  cooldown?: CooldownSettings;
  /** The clock of the cooldown and of `?privacy pause`. */
  now?: () => number;
  /** Counts commands handled and those the cooldown refused. */
  metrics?: Metrics;
}

/** Reads every message: rotates leaked keys, and answers commands. */
export class Bot {
  private botUserId: Snowflake | undefined;
  private readonly cooldown: CommandCooldown;

  constructor(private readonly options: BotOptions) {
    this.cooldown = new CommandCooldown(options.cooldown ?? { burst: 1, perMinute: 0 }, options.now);
  }

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
    // In servers "?" starts ordinary sentences too; only a DM is surely meant for the bot.
    if (!command && (!isDm || name === '')) return;
    // Everything from here is answered, so everything counts against the user's budget; past it the
    // command is not run (?apikey writes) and the user is asked once to slow down, then ignored.
    const verdict = this.cooldown.take(message.author.id);
    if (verdict.kind === 'warn') {
      const seconds = Math.max(1, Math.ceil(verdict.retryAfterMs / 1000));
      await reply(
        `Slow down, please: that is more commands than I take at once. Try again in ${seconds} s; until then I skip your commands without answering.`,
      );
    }
    if (verdict.kind !== 'run') {
      this.options.metrics?.rateLimited('bot_commands');
      return;
    }
    this.options.metrics?.botCommand(command?.name ?? 'unknown');
    if (!command) {
      await reply(`I don't know \`${prefix}${name}\`. Try \`${prefix}help\`.`);
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
      webhooks: this.options.webhooks,
      privacy: this.options.privacy,
      account: this.options.account,
      monitor: this.options.monitor ?? 'all',
      now: this.options.now ?? Date.now,
      commands: COMMANDS,
      reply,
    });
  }
}
