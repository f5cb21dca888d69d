import {
  type APIApplicationCommandOption,
  type APIMessage,
  ApplicationCommandOptionType,
  ComponentType,
  MessageFlags,
} from 'discord-api-types/v10';
import type { DiscordSimulator, SimInteraction } from '../simulator/index.js';

/** Interactions whose buttons can still be pressed; older ones are forgotten. */
const KEPT_INTERACTIONS = 50;
/** How long an answer is waited for: past Discord's window, a command that never answers says so. */
const ANSWER_WAIT_MS = 5_000;

/** A bot's answer as the demo page shows it. */
export interface DemoAnswer {
  content: string;
  ephemeral: boolean;
  /** Buttons to press, each naming the interaction whose message carries it. */
  buttons: Array<{ label: string; interaction: string; custom_id: string }>;
  /** Files attached, by name and size. */
  files: Array<{ name: string; bytes: number }>;
}

/** A command line the user typed that Discord's client would not send. */
export class DemoCommandError extends Error {}

/**
 * The landing page's "try the bot": `/presently …` as the demo's featured user runs it in a DM with the
 * bot, through the simulated Discord, so every command can be tried without a Discord account.
 */
export class DemoBot {
  private readonly interactions = new Map<string, SimInteraction>();

  constructor(
    private readonly simulator: DiscordSimulator,
    private readonly userId: string,
  ) {}

  /** `kv set key:mood value:calm and bright`, as Discord's client fills a command in. */
  async run(line: string): Promise<DemoAnswer> {
    const { subcommand, options } = this.parse(line);
    let interaction: SimInteraction;
    try {
      interaction = this.simulator.interact({
        user: this.userId,
        where: 'dm',
        command: 'presently',
        subcommand,
        options,
      });
    } catch (error) {
      throw new DemoCommandError(
        error instanceof Error ? error.message.replace(/^simulated Discord: /, '') : String(error),
      );
    }
    return this.answerOf(interaction);
  }

  /** Presses a button of an earlier answer. */
  async press(interactionId: string, customId: string): Promise<DemoAnswer> {
    const interaction = this.interactions.get(interactionId);
    if (interaction === undefined) throw new DemoCommandError('that answer is gone: run the command again');
    let pressed: SimInteraction;
    try {
      pressed = interaction.click(customId);
    } catch (error) {
      throw new DemoCommandError(
        error instanceof Error ? error.message.replace(/^simulated Discord: /, '') : String(error),
      );
    }
    return this.answerOf(pressed);
  }

  private async answerOf(interaction: SimInteraction): Promise<DemoAnswer> {
    this.interactions.set(interaction.id, interaction);
    for (const id of this.interactions.keys()) {
      if (this.interactions.size <= KEPT_INTERACTIONS) break;
      this.interactions.delete(id);
    }
    const message = await interaction
      .waitForMessage(
        (candidate) => candidate.content !== '' || candidate.attachments.length > 0,
        ANSWER_WAIT_MS,
      )
      .catch(() => {
        throw new DemoCommandError(
          'the bot did not answer in time (Discord would say "The application did not respond")',
        );
      });
    return shown(message, interaction.id);
  }

  /** Words up to the first `name:` are the subcommand; each `name:` runs to the next one. */
  private parse(line: string): { subcommand: string[]; options: Record<string, string | number | boolean> } {
    const text = line.trim().replace(/^\/?presently\s*/, '');
    const first = text.search(/(^|\s)[a-z_]+:/);
    const head = first === -1 ? text : text.slice(0, first);
    const subcommand = head.split(/\s+/).filter((word) => word !== '');
    if (subcommand.length === 0) throw new DemoCommandError('which command? Try help');
    const definition = this.optionsOf(subcommand);
    const options: Record<string, string | number | boolean> = {};
    if (first !== -1) {
      for (const match of text.slice(first).matchAll(/(?:^|\s)([a-z_]+):([\s\S]*?)(?=\s[a-z_]+:|$)/g)) {
        const [, name = '', raw = ''] = match;
        const type = definition.find((option) => option.name === name)?.type;
        options[name] = optionValue(raw.trim(), type);
      }
    }
    return { subcommand, options };
  }

  /** The options the registered command gives this subcommand, for their types. */
  private optionsOf(path: string[]): APIApplicationCommandOption[] {
    let options: readonly APIApplicationCommandOption[] =
      this.simulator.registeredCommands().find((command) => command.name === 'presently')?.options ?? [];
    for (const name of path) {
      const next = options.find((option) => option.name === name);
      options = next && 'options' in next && Array.isArray(next.options) ? next.options : [];
    }
    return [...options];
  }
}

function optionValue(raw: string, type: ApplicationCommandOptionType | undefined): string | number | boolean {
  if (type === ApplicationCommandOptionType.Boolean) return /^(true|yes|on)$/i.test(raw);
  if (type === ApplicationCommandOptionType.Integer || type === ApplicationCommandOptionType.Number) {
    return Number(raw);
  }
  return raw;
}

function shown(message: APIMessage, interaction: string): DemoAnswer {
  const buttons: DemoAnswer['buttons'] = [];
  for (const row of message.components ?? []) {
    if (row.type !== ComponentType.ActionRow) continue;
    for (const component of row.components) {
      if (component.type === ComponentType.Button && 'custom_id' in component) {
        buttons.push({ label: component.label ?? '', interaction, custom_id: component.custom_id });
      }
    }
  }
  return {
    content: message.content,
    ephemeral: ((message.flags ?? 0) & MessageFlags.Ephemeral) !== 0,
    buttons,
    files: message.attachments.map((attachment) => ({ name: attachment.filename, bytes: attachment.size })),
  };
}
