import type { REST } from '@discordjs/rest';
import {
  type APIApplicationCommand,
  type APIApplicationCommandBasicOption,
  type APIApplicationCommandOption,
  type APIApplicationCommandSubcommandOption,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ApplicationIntegrationType,
  InteractionContextType,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
  Routes,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import type { Command } from './command.js';
import { SLASH_COMMAND_NAME } from './prefix-words.js';

/** What the groups of `/presently` are about, as Discord shows them. */
const GROUP_DESCRIPTIONS: Readonly<Record<string, string>> = {
  kv: 'your KV: the values your presence carries',
  privacy: 'what the API shows of you',
  webhooks: 'where your changes are POSTed, signed',
};

/**
 * `/presently`, with every command as a subcommand (or a group's). Installable in servers and by users,
 * and usable in servers, the bot's DMs and other private channels, so a user can run it anywhere.
 */
export function slashCommand(commands: readonly Command[]): RESTPostAPIChatInputApplicationCommandsJSONBody {
  const options: APIApplicationCommandOption[] = [];
  for (const command of commands) {
    const [head = '', sub] = command.name.split(' ');
    const subcommand: APIApplicationCommandSubcommandOption = {
      type: ApplicationCommandOptionType.Subcommand,
      name: sub ?? head,
      description: command.description,
      ...(command.options?.length ? { options: [...command.options] } : {}),
    };
    if (sub === undefined) {
      options.push(subcommand);
      continue;
    }
    let group = options.find((option) => option.name === head);
    if (group === undefined) {
      group = {
        type: ApplicationCommandOptionType.SubcommandGroup,
        name: head,
        description: GROUP_DESCRIPTIONS[head] ?? head,
        options: [],
      };
      options.push(group);
    }
    if (group.type === ApplicationCommandOptionType.SubcommandGroup) group.options?.push(subcommand);
  }
  return {
    type: ApplicationCommandType.ChatInput,
    name: SLASH_COMMAND_NAME,
    description: 'Your Discord presence as an API: your key, KV, privacy, webhooks and card',
    integration_types: [ApplicationIntegrationType.GuildInstall, ApplicationIntegrationType.UserInstall],
    contexts: [
      InteractionContextType.Guild,
      InteractionContextType.BotDM,
      InteractionContextType.PrivateChannel,
    ],
    options,
  };
}

/** An option as Discord keeps it, with what it leaves out filled in, so the two can be compared. */
function comparable(option: APIApplicationCommandOption): unknown {
  const basic = option as APIApplicationCommandBasicOption & Record<string, unknown>;
  const nested = 'options' in option && Array.isArray(option.options) ? option.options : [];
  return {
    type: option.type,
    name: option.name,
    description: option.description,
    required: basic.required === true,
    choices: Array.isArray(basic.choices) ? basic.choices.map(({ name, value }) => ({ name, value })) : [],
    min_length: basic.min_length ?? null,
    max_length: basic.max_length ?? null,
    min_value: basic.min_value ?? null,
    max_value: basic.max_value ?? null,
    options: nested.map(comparable),
  };
}

function comparableCommand(
  command: RESTPostAPIChatInputApplicationCommandsJSONBody | APIApplicationCommand,
): unknown {
  return {
    type: command.type ?? ApplicationCommandType.ChatInput,
    name: command.name,
    description: command.description,
    integration_types: [...(command.integration_types ?? [ApplicationIntegrationType.GuildInstall])].sort(),
    contexts: command.contexts ? [...command.contexts].sort() : null,
    options: (command.options ?? []).map(comparable),
  };
}

/** Whether what Discord holds is what we would register. */
export function sameCommands(
  held: readonly APIApplicationCommand[],
  wanted: readonly RESTPostAPIChatInputApplicationCommandsJSONBody[],
): boolean {
  const key = (commands: readonly unknown[]) =>
    JSON.stringify(commands.map((c) => comparableCommand(c as APIApplicationCommand)));
  const byName = <T extends { name: string }>(list: readonly T[]) =>
    [...list].sort((a, b) => a.name.localeCompare(b.name));
  return key(byName(held)) === key(byName(wanted));
}

export interface RegistrationOptions {
  rest: REST;
  applicationId: string;
  /** COMMAND_GUILD_IDS: these guilds' commands; null: the global ones. */
  guildIds: readonly string[] | null;
  commands: readonly Command[];
  logger: Logger;
}

/**
 * Makes Discord hold `/presently` as this version defines it: each scope is read first and written only
 * when it differs, so a restart writes nothing (Discord limits command writes to 200 a day per guild).
 * Returns how many scopes were written.
 */
export async function registerCommands(options: RegistrationOptions): Promise<number> {
  const { rest, applicationId, guildIds, logger } = options;
  const wanted = [slashCommand(options.commands)];
  let written = 0;
  for (const guildId of guildIds ?? [null]) {
    const route =
      guildId === null
        ? Routes.applicationCommands(applicationId)
        : Routes.applicationGuildCommands(applicationId, guildId);
    const held = (await rest.get(route)) as APIApplicationCommand[];
    if (sameCommands(held, wanted)) {
      logger.debug({ guildId }, 'slash commands already registered');
      continue;
    }
    await rest.put(route, { body: wanted });
    written++;
    logger.info({ guildId, scope: guildId === null ? 'global' : 'guild' }, 'registered the slash commands');
  }
  return written;
}
