import { GatewayDispatchEvents, type GatewayDispatchPayload } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { ApiKeyService } from '../../keys/service.js';
import type { Metrics } from '../../ops/metrics.js';
import type { Snowflake } from '../../presence/model.js';
import type { Messenger } from '../messenger.js';
import { cardCommand } from './card.js';
import type { Command, CommandServices } from './command.js';
import type { CooldownSettings } from './cooldown.js';
import { CommandDispatcher } from './dispatcher.js';
import { exportCommand } from './export.js';
import { forgetCommand } from './forget.js';
import { helpCommand } from './help.js';
import { InteractionCommands, type Respond } from './interactions.js';
import { keyCommand, revokeCommand, rotateCommand } from './key.js';
import { kvDeleteCommand, kvGetCommand, kvListCommand, kvSetCommand } from './kv.js';
import { MessageCommands } from './messages.js';
import {
  privacyHideCommand,
  privacyPauseCommand,
  privacyResumeCommand,
  privacySetCommand,
  privacyShowCommand,
  privacyUnhideCommand,
} from './privacy.js';
import { startCommand, stopCommand } from './start-stop.js';
import { webhooksAddCommand, webhooksListCommand, webhooksRemoveCommand } from './webhooks.js';

/** Every command, in the order `/presently` shows them; a new command is one file and one entry here. */
export const COMMANDS: readonly Command[] = [
  keyCommand,
  rotateCommand,
  revokeCommand,
  kvListCommand,
  kvGetCommand,
  kvSetCommand,
  kvDeleteCommand,
  privacyShowCommand,
  privacySetCommand,
  privacyHideCommand,
  privacyUnhideCommand,
  privacyPauseCommand,
  privacyResumeCommand,
  startCommand,
  stopCommand,
  forgetCommand,
  exportCommand,
  webhooksListCommand,
  webhooksAddCommand,
  webhooksRemoveCommand,
  cardCommand,
  helpCommand,
];

export interface BotOptions extends Omit<CommandServices, 'now' | 'monitor' | 'publicUrl'> {
  prefix: string;
  keys: ApiKeyService;
  /** Who the instance monitors; absent: everyone (`all`). */
  monitor?: CommandServices['monitor'];
  /** PUBLIC_URL; absent: unknown. */
  publicUrl?: string | null;
  messenger: Messenger;
  logger: Logger;
  /** Per-user command budget, shared by every form; absent: none. */
  cooldown?: CooldownSettings;
  /** The clock of the cooldown and of `privacy pause`. */
  now?: () => number;
  /** Counts commands handled and those the cooldown refused. */
  metrics?: Metrics;
  /** Tests shorten the wait before a slow command's answer is deferred. */
  deferAfterMs?: number;
  /** Whom the instance serves at all (ALLOWED_USER_IDS); absent: everyone. */
  serves?: (userId: Snowflake) => boolean;
}

/** The bot's commands, in every form: `?` messages (and the keys they leak) and interactions. */
export class Bot {
  private botUserId: Snowflake | undefined;
  private readonly logger: Logger;
  private readonly messages: MessageCommands;
  readonly interactions: InteractionCommands;

  constructor(options: BotOptions) {
    const { prefix, messenger, logger, keys } = options;
    this.logger = logger;
    const dispatcher = new CommandDispatcher({
      services: {
        keys,
        kv: options.kv,
        history: options.history,
        webhooks: options.webhooks,
        privacy: options.privacy,
        account: options.account,
        accounts: options.accounts,
        ...(options.exports ? { exports: options.exports } : {}),
        monitor: options.monitor ?? 'all',
        publicUrl: options.publicUrl ?? null,
        now: options.now ?? Date.now,
      },
      commands: COMMANDS,
      prefix,
      logger,
      ...(options.cooldown ? { cooldown: options.cooldown } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.serves ? { serves: options.serves } : {}),
    });
    this.messages = new MessageCommands({ prefix, dispatcher, keys, messenger, logger });
    this.interactions = new InteractionCommands({
      dispatcher,
      rest: messenger.rest,
      logger,
      ...(options.deferAfterMs === undefined ? {} : { deferAfterMs: options.deferAfterMs }),
    });
  }

  /** Resolves when the message or interaction has been handled, answers included; never rejects. */
  handle(payload: GatewayDispatchPayload): Promise<void> | undefined {
    if (payload.t === GatewayDispatchEvents.Ready) {
      this.botUserId = payload.d.user.id;
      return undefined;
    }
    if (payload.t === GatewayDispatchEvents.InteractionCreate) return this.interactions.handle(payload.d);
    if (payload.t !== GatewayDispatchEvents.MessageCreate) return undefined;
    return this.messages.handle(payload.d, this.botUserId).catch((error: unknown) => {
      this.logger.error({ err: error, messageId: payload.d.id }, 'failed to handle a message');
    });
  }

  /** An interaction Discord POSTed to `/interactions`, answered in that request's response. */
  handleHttp(interaction: Parameters<InteractionCommands['handle']>[0], respond: Respond): void {
    void this.interactions.handle(interaction, respond);
  }
}
