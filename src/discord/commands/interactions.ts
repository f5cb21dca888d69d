import type { REST } from '@discordjs/rest';
import {
  type APIActionRowComponent,
  type APIApplicationCommandInteractionDataOption,
  type APIButtonComponent,
  type APIInteraction,
  type APIInteractionResponse,
  type APIInteractionResponseCallbackData,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ButtonStyle,
  ComponentType,
  InteractionContextType,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  Routes,
} from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { type Delivery, failureOf, reasonOf, truncated } from '../messenger.js';
import type { Answer, Invocation, Surface } from './command.js';
import type { CommandDispatcher } from './dispatcher.js';
import { SLASH_COMMAND_NAME } from './prefix-words.js';

/** Discord drops an interaction not answered within 3 s; one whose command runs longer is deferred first. */
export const DEFER_AFTER_MS = 2_000;

/** A button's custom_id: this, the command's name, and its options as a query string. */
const BUTTON_ID_PREFIX = `${SLASH_COMMAND_NAME}:`;
/** The commands that ask first: a button runs one of them, confirmed, and nothing else. */
const CONFIRMED_BY_BUTTON = new Set(['forget', 'stop']);

/** Answers Discord's request for an interaction: over the gateway, its callback route; over HTTP, the response. */
export type Respond = (response: APIInteractionResponse) => Promise<Delivery>;

export interface InteractionCommandsOptions {
  dispatcher: CommandDispatcher;
  /** Discord's REST, for callbacks, the deferred answer and follow-ups (which take the token, not the bot's). */
  rest: REST;
  logger: Logger;
  /** Tests shorten it to see a deferral; 0: every answer is deferred first. */
  deferAfterMs?: number;
}

/** `/presently …` and its buttons, however the interaction arrived; every answer is ephemeral. */
export class InteractionCommands {
  constructor(private readonly options: InteractionCommandsOptions) {}

  /** The callback route, for interactions that came over the gateway. */
  readonly callback = (interaction: APIInteraction): Respond => {
    return async (response) => {
      try {
        await this.options.rest.post(Routes.interactionCallback(interaction.id, interaction.token), {
          body: response,
          auth: false,
        });
        return { accepted: true };
      } catch (error) {
        this.options.logger.warn({ failure: failureOf(error) }, 'could not answer an interaction');
        return { accepted: false, reason: reasonOf(error) };
      }
    };
  };

  /** Resolves once the interaction is answered; never rejects. */
  async handle(interaction: APIInteraction, respond: Respond = this.callback(interaction)): Promise<void> {
    const invocation = invocationOf(interaction);
    const userId = interaction.member?.user.id ?? interaction.user?.id;
    if (invocation === undefined || userId === undefined) {
      // Answered all the same: an interaction left unanswered shows its user "thinking…" until it expires.
      await respond(
        interaction.type === InteractionType.MessageComponent
          ? { type: InteractionResponseType.DeferredMessageUpdate }
          : {
              type: InteractionResponseType.ChannelMessageWithSource,
              data: { content: 'I do not know that command.', flags: MessageFlags.Ephemeral },
            },
      );
      return;
    }
    const update = interaction.type === InteractionType.MessageComponent;
    const answers = new InteractionAnswers(interaction, respond, update, this.options);
    try {
      await this.options.dispatcher.run({
        userId,
        surface: surfaceOf(interaction),
        form: 'slash',
        named: 'usage' in invocation ? 'unknown' : invocation.name,
        invocation,
        answer: (answer) => answers.send(answer),
      });
    } finally {
      answers.done();
    }
  }
}

/** The command a slash interaction or one of our buttons names; undefined for what is not ours. */
function invocationOf(interaction: APIInteraction): Invocation | { usage: string } | undefined {
  if (interaction.type === InteractionType.ApplicationCommand) {
    const { data } = interaction;
    if (data.type !== ApplicationCommandType.ChatInput || data.name !== SLASH_COMMAND_NAME) return undefined;
    return fromOptions([], data.options ?? []);
  }
  if (interaction.type === InteractionType.MessageComponent) {
    const id = interaction.data.custom_id;
    // Our buttons confirm, under answers only their user sees; nothing else is taken from a custom_id.
    if (
      !id.startsWith(BUTTON_ID_PREFIX) ||
      ((interaction.message.flags ?? 0) & MessageFlags.Ephemeral) === 0
    ) {
      return undefined;
    }
    const [name = '', query = ''] = id.slice(BUTTON_ID_PREFIX.length).split('?');
    const options: Record<string, string | boolean> = {};
    for (const [key, value] of new URLSearchParams(query)) {
      options[key] = value === 'true' ? true : value === 'false' ? false : value;
    }
    return CONFIRMED_BY_BUTTON.has(name) && options.confirm === true ? { name, options } : undefined;
  }
  return undefined;
}

/** Subcommand groups and subcommands make the name; the options under the last are its options. */
function fromOptions(
  path: string[],
  options: readonly APIApplicationCommandInteractionDataOption[],
): Invocation | { usage: string } {
  const [first] = options;
  if (
    first !== undefined &&
    (first.type === ApplicationCommandOptionType.SubcommandGroup ||
      first.type === ApplicationCommandOptionType.Subcommand)
  ) {
    return fromOptions([...path, first.name], first.options ?? []);
  }
  const values: Record<string, string | number | boolean> = {};
  for (const option of options) {
    if ('value' in option) values[option.name] = option.value;
  }
  return path.length === 0
    ? { usage: 'Which command? `/presently help` lists them.' }
    : { name: path.join(' '), options: values };
}

function surfaceOf(interaction: APIInteraction): Surface {
  if (interaction.context === InteractionContextType.BotDM) return 'dm';
  if (interaction.context === InteractionContextType.PrivateChannel) return 'private';
  return interaction.guild_id === undefined ? 'dm' : 'guild';
}

/** A button that runs `invocation`, for an answer's confirmation. */
function button(label: string, invocation: Invocation): APIButtonComponent {
  const query = new URLSearchParams(
    Object.entries(invocation.options).map(([key, value]): [string, string] => [key, String(value)]),
  ).toString();
  return {
    type: ComponentType.Button,
    style: ButtonStyle.Danger,
    label,
    custom_id: `${BUTTON_ID_PREFIX}${invocation.name}${query === '' ? '' : `?${query}`}`,
  };
}

function messageOf(answer: Answer): APIInteractionResponseCallbackData {
  const rows: APIActionRowComponent<APIButtonComponent>[] =
    answer.confirm === undefined
      ? []
      : [
          {
            type: ComponentType.ActionRow,
            components: [button(answer.confirm.label, answer.confirm.invocation)],
          },
        ];
  return {
    content: truncated(answer.content),
    // Answers quote user text: never let it ping anyone.
    allowed_mentions: { parse: [] },
    components: rows,
    embeds: answer.imageUrl === undefined ? [] : [{ image: { url: answer.imageUrl } }],
  };
}

/**
 * The answers to one interaction, in order: the first is the callback (or, once deferred, the edit of the
 * "thinking" message), later ones are follow-ups. All are ephemeral; a button's first answer replaces the
 * message the button was on.
 */
class InteractionAnswers {
  private state: 'waiting' | 'deferred' | 'answered' | 'failed' = 'waiting';
  private queue: Promise<unknown> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly interaction: APIInteraction,
    private readonly respond: Respond,
    private readonly update: boolean,
    private readonly options: InteractionCommandsOptions,
  ) {
    // Discord's window opens when it made the interaction, which its id tells, not when it reached us.
    const waited = Math.max(0, Date.now() - createdAt(interaction.id));
    const after = Math.max(0, (options.deferAfterMs ?? DEFER_AFTER_MS) - waited);
    // 0: every answer is deferred first.
    if (after === 0) void this.enqueue(() => this.defer());
    this.timer = setTimeout(() => void this.enqueue(() => this.defer()), after);
  }

  send(answer: Answer): Promise<Delivery> {
    return this.enqueue(() => this.sendNow(answer));
  }

  done(): void {
    clearTimeout(this.timer);
  }

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.queue.then(work, work);
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async defer(): Promise<Delivery> {
    if (this.state !== 'waiting') return { accepted: true };
    const type = this.update
      ? InteractionResponseType.DeferredMessageUpdate
      : InteractionResponseType.DeferredChannelMessageWithSource;
    const sent = await this.respond({
      type,
      data: { flags: MessageFlags.Ephemeral },
    } as APIInteractionResponse);
    // Even when not taken it may be acknowledged (an HTTP route that deferred for us, a callback retried
    // after Discord took it): the answer then edits it, and gives up only if that fails too.
    this.state = 'deferred';
    return sent;
  }

  private async sendNow(answer: Answer): Promise<Delivery> {
    const data = messageOf(answer);
    // A file goes through Discord's REST as a form; the callback of an HTTP interaction cannot carry one.
    if (this.state === 'waiting' && answer.file !== undefined) await this.defer();
    if (this.state === 'waiting') {
      const sent = await this.respond(
        this.update
          ? { type: InteractionResponseType.UpdateMessage, data }
          : {
              type: InteractionResponseType.ChannelMessageWithSource,
              data: { ...data, flags: MessageFlags.Ephemeral },
            },
      );
      if (sent.accepted) {
        this.state = 'answered';
        return sent;
      }
      this.state = 'deferred';
      const edited = await this.webhook(answer, true);
      return edited.accepted ? edited : sent;
    }
    if (this.state === 'failed')
      return { accepted: false, reason: 'Discord no longer takes answers to this command' };
    return this.webhook(answer, this.state === 'deferred');
  }

  /** The edit of the acknowledged original (`first`), or a follow-up. */
  private async webhook(answer: Answer, first: boolean): Promise<Delivery> {
    const { interaction } = this;
    const data = messageOf(answer);
    const files =
      answer.file === undefined ? undefined : [{ name: answer.file.name, data: answer.file.data }];
    const body = {
      ...data,
      ...(first ? {} : { flags: MessageFlags.Ephemeral }),
      ...(files ? { attachments: [{ id: 0, filename: answer.file?.name }] } : {}),
    };
    try {
      if (first) {
        await this.options.rest.patch(
          Routes.webhookMessage(interaction.application_id, interaction.token, '@original'),
          {
            body,
            auth: false,
            ...(files ? { files } : {}),
          },
        );
      } else {
        await this.options.rest.post(Routes.webhook(interaction.application_id, interaction.token), {
          body,
          auth: false,
          ...(files ? { files } : {}),
        });
      }
      this.state = 'answered';
      return { accepted: true };
    } catch (error) {
      if (first) this.state = 'failed';
      this.options.logger.warn({ failure: failureOf(error) }, 'could not answer an interaction');
      return { accepted: false, reason: reasonOf(error) };
    }
  }
}

/** When Discord made something, from its snowflake: https://discord.com/developers/docs/reference#snowflakes */
function createdAt(id: string): number {
  return /^\d{1,20}$/.test(id) ? Number((BigInt(id) >> 22n) + 1_420_070_400_000n) : Date.now();
}
