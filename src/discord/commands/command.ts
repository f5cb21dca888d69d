import type { GatewayMessageCreateDispatchData } from 'discord-api-types/v10';
import type { AccountService } from '../../account/service.js';
import type { MonitorMode } from '../../config.js';
import type { HistoryRecorder } from '../../history/recorder.js';
import type { ApiKeyService } from '../../keys/service.js';
import type { KvService } from '../../kv/service.js';
import type { PrivacyService } from '../../privacy/service.js';
import type { WebhookService } from '../../webhooks/service.js';
import type { Delivery } from '../messenger.js';

/** What a command can see and do. */
export interface CommandContext {
  message: GatewayMessageCreateDispatchData;
  /** The text after the command's name, with the separating white space removed. */
  args: string;
  isDm: boolean;
  prefix: string;
  keys: ApiKeyService;
  kv: KvService;
  history: Pick<HistoryRecorder, 'forget'>;
  webhooks: Pick<WebhookService, 'list' | 'remove' | 'maxPerUser'>;
  privacy: Pick<PrivacyService, 'settings' | 'change'>;
  /** Erasing everything kept about the user. */
  account: Pick<AccountService, 'erase'>;
  /** Who the instance monitors: with `opt-in`, only those who asked. */
  monitor: MonitorMode;
  /** The bot's clock, epoch ms. */
  now(): number;
  /** Every command, for ?help. */
  commands: readonly Command[];
  /** Answers in the channel of the message; resolves with whether Discord took the answer. */
  reply(content: string): Promise<Delivery>;
}

export interface Command {
  name: string;
  /** Shown by ?help, after the prefix: e.g. "set <key> <value…>". */
  usage: string;
  description: string;
  /** `dm`: refused in server channels with a pointer to DMs. */
  where: 'dm' | 'anywhere';
  /** Resolves once the command is answered; what it resolves with is not used. */
  run(context: CommandContext): Promise<unknown>;
}
