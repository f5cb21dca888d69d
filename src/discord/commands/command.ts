import type { APIApplicationCommandBasicOption } from 'discord-api-types/v10';
import type { AccountExport } from '../../account/export.js';
import type { AccountService } from '../../account/service.js';
import type { MonitorMode } from '../../config.js';
import type { HistoryRecorder } from '../../history/recorder.js';
import type { ApiKeyService } from '../../keys/service.js';
import type { KvService } from '../../kv/service.js';
import type { Snowflake } from '../../presence/model.js';
import type { PrivacyService } from '../../privacy/service.js';
import type { AccountStore } from '../../store/ports.js';
import type { WebhookService } from '../../webhooks/service.js';
import type { Delivery } from '../messenger.js';

/** Where a command was sent: a server channel, the bot's DM, or another private channel (a user install). */
export type Surface = 'guild' | 'dm' | 'private';

/** How it was sent: `/presently …` (or its button), or a `?` message. */
export type Form = 'slash' | 'prefix';

/** A command's option values by name, typed as Discord types them. */
export type OptionValues = Readonly<Record<string, string | number | boolean>>;

/** A command to run: its name under `/presently` ("key", "kv set") and its options. */
export interface Invocation {
  name: string;
  options: OptionValues;
}

/** What a command answers. Under a slash command every answer is ephemeral: seen by the user alone. */
export interface Answer {
  content: string;
  /**
   * The command waits for the user's word before it acts: a button under a slash answer, the words to
   * send under a prefix one. Confirming runs `invocation`.
   */
  confirm?: { label: string; invocation: Invocation };
  /** A file with the answer (slash answers only). */
  file?: { name: string; data: Buffer };
  /** An image shown under the answer. */
  imageUrl?: string;
}

/** What every command may use. */
export interface CommandServices {
  keys: Pick<ApiKeyService, 'handOver' | 'revokeAll'>;
  kv: KvService;
  history: Pick<HistoryRecorder, 'forget'>;
  webhooks: Pick<WebhookService, 'list' | 'create' | 'remove' | 'maxPerUser'>;
  privacy: Pick<PrivacyService, 'settings' | 'change'>;
  /** Erasing everything kept about the user. */
  account: Pick<AccountService, 'erase'>;
  /** Whether the user has a key, for `/presently key`. */
  accounts: Pick<AccountStore, 'details'>;
  /** Everything kept about the user, for `/presently export`; absent: export is not offered. */
  exports?: Pick<AccountExport, 'pieces'>;
  /** Who the instance monitors: with `opt-in`, only those who asked. */
  monitor: MonitorMode;
  /** Where people reach this instance (PUBLIC_URL), for card links; null: unknown. */
  publicUrl: string | null;
  /** The bot's clock, epoch ms. */
  now(): number;
}

/** What a command can see and do. */
export interface CommandContext extends CommandServices {
  userId: Snowflake;
  surface: Surface;
  form: Form;
  /**
   * How the user writes a command in the form they used, quoted: "`?apikey`" or "`/presently rotate`";
   * with `options`, those too ("`?get theme`", "`/presently kv get key:theme`").
   */
  spell(name: string, options?: OptionValues): string;
  /** Every command, for help. */
  commands: readonly Command[];
  /** The prefix of `?` commands, for help. */
  prefix: string;
  /** Answers the user; resolves with whether Discord took the answer. */
  answer(answer: Answer | string): Promise<Delivery>;
}

export interface Command {
  /** Its name under `/presently`: one word, or a group and a word ("kv set"). */
  name: string;
  /** Shown by Discord beside the command and by help; at most 100 characters. */
  description: string;
  /** Its options, typed and bounded for Discord's client; the command checks values again as REST does. */
  options?: readonly APIApplicationCommandBasicOption[];
  /**
   * Its answers show what is the user's alone (keys, KV, settings): in a server channel it runs only as a
   * slash command, whose answers nobody else sees.
   */
  personal: boolean;
  /** Resolves once the command is answered; what it resolves with is not used. */
  run(context: CommandContext, options: OptionValues): Promise<unknown>;
}

/** An option's value as a string; '' when absent. */
export function text(options: OptionValues, name: string): string {
  const value = options[name];
  return value === undefined ? '' : String(value);
}

/** An option's value as a boolean; false when absent. */
export function flag(options: OptionValues, name: string): boolean {
  return options[name] === true;
}
