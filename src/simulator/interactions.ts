import { randomBytes } from 'node:crypto';
import {
  type APIApplicationCommand,
  type APIApplicationCommandInteractionDataBasicOption,
  type APIApplicationCommandInteractionDataOption,
  type APIApplicationCommandOption,
  type APIApplicationCommandSubcommandGroupOption,
  type APIApplicationCommandSubcommandOption,
  type APIAttachment,
  type APIAuthorizingIntegrationOwnersMap,
  type APIChatInputApplicationCommandInteraction,
  type APIEmbed,
  type APIInteraction,
  type APIInteractionGuildMember,
  type APIInteractionResponse,
  type APIInteractionResponseCallbackData,
  type APIMessage,
  type APIMessageComponentInteraction,
  type APIMessageInteractionMetadata,
  type APIUser,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ApplicationIntegrationType,
  ButtonStyle,
  ChannelType,
  ComponentType,
  GatewayDispatchEvents,
  GatewayOpcodes,
  InteractionContextType,
  InteractionResponseType,
  InteractionType,
  Locale,
  MessageFlags,
  MessageReferenceType,
  MessageType,
  PermissionFlagsBits,
  type RESTAPIAttachment,
} from 'discord-api-types/v10';
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import type { SimulatedGateway } from './gateway.js';
import {
  type DiscordError,
  type FormError,
  type FormErrors,
  MAX_MESSAGE_LENGTH,
  RestErrorCodes,
  sendError,
} from './rest.js';
import {
  ALL_PERMISSIONS,
  discordTimestamp,
  EVERYONE_PERMISSIONS,
  isSnowflake,
  type SimChannel,
  type SimGuild,
  type SimulatorState,
  type UserInput,
} from './state.js';
import { Waiters } from './waiters.js';

/**
 * Application commands and interactions as Discord runs them: the app registers slash commands over REST,
 * a user runs one (a driver's interact()), the app gets INTERACTION_CREATE on the gateway and answers over
 * the interaction's own REST routes, authenticated by its token: the callback within 3 s, then edits and
 * follow-ups for 15 minutes. Buttons on the messages it sends can be pressed in turn.
 */

export const DEFAULT_INTERACTION_RESPONSE_MS = 3000;
export const DEFAULT_INTERACTION_TOKEN_MS = 15 * 60_000;
/** Discord's upload limit per file, which interactions announce as `attachment_size_limit`. */
export const ATTACHMENT_SIZE_LIMIT = 10 * 1024 * 1024;
/** Discord's limit on a whole request that carries files. */
export const MAX_UPLOAD_REQUEST_BYTES = 25 * 1024 * 1024;
/** Interactions kept for their tokens and messages; past it the oldest goes. */
const MAX_KEPT_INTERACTIONS = 5000;

/** Command and option names: Discord's pattern, in lowercase where a letter has a lowercase form. */
const NAME = /^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u;
const MAX_OPTIONS = 25;
const MAX_CHOICES = 25;
/** Characters of names, descriptions and choices one slash command may hold in all. */
const MAX_COMMAND_CHARACTERS = 8000;
const MAX_COMMANDS: Readonly<Record<number, number>> = {
  [ApplicationCommandType.ChatInput]: 100,
  [ApplicationCommandType.User]: 15,
  [ApplicationCommandType.Message]: 15,
};
const MAX_EMBEDS = 10;
const MAX_ROWS = 5;
const MAX_ROW_WIDTH = 5;
const MAX_BUTTON_LABEL = 80;
const MAX_CUSTOM_ID = 100;
/** Flags a new interaction message may carry. */
const CREATE_FLAGS =
  MessageFlags.SuppressEmbeds |
  MessageFlags.Ephemeral |
  MessageFlags.SuppressNotifications |
  MessageFlags.IsVoiceMessage |
  MessageFlags.IsComponentsV2;
/** Flags an edit may change; a message's ephemeral state never changes. */
const EDIT_FLAGS = MessageFlags.SuppressEmbeds | MessageFlags.IsComponentsV2;
const SELECT_MENUS = new Set<number>([
  ComponentType.StringSelect,
  ComponentType.UserSelect,
  ComponentType.RoleSelect,
  ComponentType.MentionableSelect,
  ComponentType.ChannelSelect,
]);
/** What an app may do in a DM that is not its own, and in its own DM (documented with app_permissions). */
const PRIVATE_APP_PERMISSIONS =
  PermissionFlagsBits.AttachFiles | PermissionFlagsBits.EmbedLinks | PermissionFlagsBits.MentionEveryone;
const BOT_DM_APP_PERMISSIONS = PRIVATE_APP_PERMISSIONS | PermissionFlagsBits.UseExternalEmojis;

const CONTEXT_NAMES: Readonly<Record<InteractionContextType, string>> = {
  [InteractionContextType.Guild]: 'a guild',
  [InteractionContextType.BotDM]: "the bot's DM",
  [InteractionContextType.PrivateChannel]: 'a private channel',
};

export interface InteractInput {
  /** Who runs it: a user id or user object. */
  user: string | UserInput;
  /**
   * A guild channel (of a guild the bot is in, or of a guild where only the user installed the app: pass a
   * guildId the simulator does not know), the bot's DM, or another private channel (a group DM or a DM
   * between users). A guild's first channel unless channelId is given.
   */
  where: { guildId: string; channelId?: string } | 'dm' | 'private';
  /** The command's name, e.g. 'presently'. */
  command: string;
  /** The path to a subcommand: ['kv', 'set'] (a group, then a subcommand) or ['key']. */
  subcommand?: string[];
  options?: Record<string, string | number | boolean>;
}

/** An interaction a driver started, and what the app made of it. */
export interface SimInteraction {
  readonly id: string;
  readonly token: string;
  /** The INTERACTION_CREATE's `d`. */
  readonly payload: APIInteraction;
  /**
   * The app's initial callback. Rejects when the response window closes without one (Discord tells the user
   * "The application did not respond"), or after timeoutMs.
   */
  response(timeoutMs?: number): Promise<APIInteractionResponse>;
  /** The original response (as edited) then the follow-ups, oldest first; deleted ones are gone. */
  messages(): APIMessage[];
  /** The first of its messages, new or edited, that matches; rejects after timeoutMs listing them. */
  waitForMessage(predicate: (message: APIMessage) => boolean, timeoutMs?: number): Promise<APIMessage>;
  /** The same user presses the button with this custom_id on one of its messages: a new interaction. */
  click(customId: string): SimInteraction;
  /** The bytes of an attachment with this filename on one of its messages. */
  file(name: string): Buffer | undefined;
}

export type MessageChange = 'create' | 'update' | 'delete';

export interface InteractionsOptions {
  state: SimulatorState;
  gateway: SimulatedGateway;
  applicationId: string;
  /** How long after dispatching an interaction the app may send its callback. */
  responseMs: number;
  /** How long an interaction's token answers (edits and follow-ups). */
  tokenMs: number;
  /** What waits wait unless told. */
  waitMs: number;
  cdnUrl(): string;
  /**
   * A message everyone in its channel sees was created, edited or deleted: the simulator lists it among the
   * bot's messages, and dispatches it when the bot can see the channel (`channel` given).
   */
  publish(change: MessageChange, message: APIMessage, channel: SimChannel | null): Promise<void>;
}

/** Where an interaction happens. */
interface Place {
  context: InteractionContextType;
  /** The guild, when in one: the bot's or another. */
  guildId: string | null;
  /** The guild, when the bot is a member. */
  botGuild: SimGuild | null;
  channel: APIChatInputApplicationCommandInteraction['channel'];
  /** The channel as the simulator keeps it, when the bot can see it (a guild of its, its own DM). */
  seen: SimChannel | null;
}

/** Who runs an interaction, where, and on whose installation: the same for a command and its clicks. */
interface Invocation {
  user: APIUser;
  place: Place;
  member: APIInteractionGuildMember | null;
  owners: APIAuthorizingIntegrationOwnersMap;
  appPermissions: string;
}

/** A message an interaction produced. */
interface PostedMessage {
  /** As it is now: edits change it in place. */
  message: APIMessage;
  /** Attachment id → bytes. */
  files: Map<string, Buffer>;
  /** Everyone in the channel sees it: not ephemeral. */
  public: boolean;
  place: Place;
  deleted: boolean;
  /** The interactions that list it: the one that posted it, and those answered by updating it. */
  owners: Set<SimulatedInteraction>;
}

interface Upload {
  /** n of the `files[n]` part, which `attachments` entries refer to as their id. */
  index: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

interface Refusal {
  status: number;
  error: DiscordError;
}

interface RequestBody {
  json: unknown;
  uploads: Upload[];
}

type OptionValue = string | number | boolean;
type DataOption = APIApplicationCommandInteractionDataOption<InteractionType.ApplicationCommand>;
type BasicDataOption = APIApplicationCommandInteractionDataBasicOption<InteractionType.ApplicationCommand>;
type MessageBody = APIInteractionResponseCallbackData;
type Path = Array<string | number>;

class SimulatedInteraction implements SimInteraction {
  readonly createdAt = Date.now();
  callback: APIInteractionResponse | null = null;
  original: PostedMessage | null = null;
  readonly followups: PostedMessage[] = [];
  /** Closed without a callback: the token is dead. */
  lapsed = false;
  windowTimer: NodeJS.Timeout | null = null;
  private readonly responseWaiters = new Waiters<APIInteractionResponse>();
  private readonly messageWaiters = new Waiters<APIMessage>();

  constructor(
    private readonly owner: Interactions,
    readonly payload: APIInteraction,
    readonly invocation: Invocation,
    /** The full command name (with subcommands) messages name it by. */
    readonly commandName: string,
    /** A component interaction's message, the one its button is on. */
    readonly clicked: PostedMessage | null,
  ) {}

  get id(): string {
    return this.payload.id;
  }

  get token(): string {
    return this.payload.token;
  }

  response(timeoutMs = this.owner.waitMs): Promise<APIInteractionResponse> {
    if (this.callback) return Promise.resolve(this.callback);
    if (this.lapsed) return Promise.reject(this.unanswered());
    return this.responseWaiters.wait(
      () => true,
      timeoutMs,
      () => new Error(`simulated Discord: no callback for interaction ${this.id} within ${timeoutMs} ms`),
    );
  }

  messages(): APIMessage[] {
    return this.posted().map((posted) => structuredClone(posted.message));
  }

  waitForMessage(
    predicate: (message: APIMessage) => boolean,
    timeoutMs = this.owner.waitMs,
  ): Promise<APIMessage> {
    const existing = this.posted().find((posted) => predicate(posted.message));
    if (existing) return Promise.resolve(structuredClone(existing.message));
    return this.messageWaiters.wait(predicate, timeoutMs, () => {
      const posted = this.posted().map((entry) => JSON.stringify(entry.message.content));
      return new Error(
        `simulated Discord: no message of interaction ${this.id} matched within ${timeoutMs} ms ` +
          `(${posted.length} posted${posted.length ? `: ${posted.join(', ')}` : ''})`,
      );
    });
  }

  click(customId: string): SimInteraction {
    return this.owner.click(this, customId);
  }

  file(name: string): Buffer | undefined {
    for (const posted of this.posted()) {
      const attachment = posted.message.attachments.find((entry) => entry.filename === name);
      if (attachment) return posted.files.get(attachment.id);
    }
    return undefined;
  }

  /** Its messages that still exist, the original first. */
  posted(): PostedMessage[] {
    return [this.original, ...this.followups].filter(
      (posted): posted is PostedMessage => posted !== null && !posted.deleted,
    );
  }

  /** No callback before the window closed, or none yet. */
  late(now: number): boolean {
    return this.callback === null && (this.lapsed || now - this.createdAt >= this.owner.responseMs);
  }

  acknowledge(response: APIInteractionResponse): void {
    this.callback = response;
    if (this.windowTimer) clearTimeout(this.windowTimer);
    this.responseWaiters.resolveEach(response);
  }

  lapse(): void {
    if (this.callback) return;
    this.lapsed = true;
    this.responseWaiters.rejectAll(this.unanswered());
  }

  messageChanged(posted: PostedMessage): void {
    if (!posted.deleted) this.messageWaiters.resolveEach(posted.message, structuredClone);
  }

  stop(): void {
    if (this.windowTimer) clearTimeout(this.windowTimer);
    const stopped = new Error('simulated Discord: stopped');
    this.responseWaiters.rejectAll(stopped);
    this.messageWaiters.rejectAll(stopped);
  }

  private unanswered(): Error {
    return new Error(
      `simulated Discord: the app did not respond to interaction ${this.id} within ${this.owner.responseMs} ms`,
    );
  }
}

/** The app's commands, the interactions users start, and the REST routes the app answers them on. */
export class Interactions {
  private readonly globalCommands: APIApplicationCommand[] = [];
  private readonly guildCommands = new Map<string, APIApplicationCommand[]>();
  private readonly byId = new Map<string, SimulatedInteraction>();
  private readonly byToken = new Map<string, SimulatedInteraction>();
  private posted: PostedMessage[] = [];
  /** A user's private channel, and a channel per guild the bot is not in: stable across interactions. */
  private readonly elsewhere = new Map<string, string>();

  constructor(private readonly options: InteractionsOptions) {}

  get responseMs(): number {
    return this.options.responseMs;
  }

  get waitMs(): number {
    return this.options.waitMs;
  }

  /** Registered commands: the global ones, or one guild's. */
  registered(guildId?: string): APIApplicationCommand[] {
    const commands = guildId === undefined ? this.globalCommands : (this.guildCommands.get(guildId) ?? []);
    return structuredClone(commands);
  }

  /** Every message an interaction produced, oldest first, as it is now. */
  messages(): APIMessage[] {
    return this.posted.filter((posted) => !posted.deleted).map((posted) => structuredClone(posted.message));
  }

  /** Validates as Discord's client would, then dispatches INTERACTION_CREATE (type 2). */
  interact(input: InteractInput): SimInteraction {
    const { state } = this.options;
    const user =
      typeof input.user === 'string'
        ? (state.users.get(input.user) ?? state.upsertUser({ id: input.user }))
        : state.upsertUser(input.user);
    if (user.id === state.botUserId)
      throw new Error('simulated Discord: the bot cannot run its own commands');
    const place = this.placeOf(input.where, user);
    const command = this.commandFor(input.command, place);
    const owners = ownersFor(command, place, user);
    const member = place.guildId === null ? null : this.memberOf(place, user);
    const required = command.default_member_permissions;
    if (member && required !== null) {
      const has = BigInt(member.permissions);
      const needs = BigInt(required);
      if ((has & PermissionFlagsBits.Administrator) === 0n && (has & needs) !== needs) {
        throw new Error(
          `simulated Discord: /${command.name} needs permissions ${required} that ${user.id} lacks in ${place.guildId}`,
        );
      }
    }
    const path = input.subcommand ?? [];
    const options = invocationOptions(command, path, input.options ?? {});
    const invocation: Invocation = {
      user,
      place,
      member,
      owners,
      appPermissions: (place.botGuild
        ? BigInt(EVERYONE_PERMISSIONS)
        : place.context === InteractionContextType.BotDM
          ? BOT_DM_APP_PERMISSIONS
          : PRIVATE_APP_PERMISSIONS
      ).toString(),
    };
    const payload: APIChatInputApplicationCommandInteraction = {
      ...this.basePayload(invocation),
      type: InteractionType.ApplicationCommand,
      data: {
        id: command.id,
        name: command.name,
        type: ApplicationCommandType.ChatInput,
        ...(options.length > 0 ? { options } : {}),
        ...(command.guild_id !== undefined ? { guild_id: command.guild_id } : {}),
      },
    };
    return this.start(payload, invocation, [command.name, ...path].join(' '), null);
  }

  /** A press of a button on one of the interaction's messages: INTERACTION_CREATE (type 3). */
  click(from: SimulatedInteraction, customId: string): SimInteraction {
    let found: { posted: PostedMessage; disabled: boolean } | undefined;
    for (const posted of from.posted()) {
      const button = componentsOf(posted.message.components ?? []).find(
        (component) =>
          component.type === ComponentType.Button &&
          'custom_id' in component &&
          component.custom_id === customId,
      );
      if (button) {
        found = { posted, disabled: button.disabled === true };
        break;
      }
    }
    if (!found) {
      throw new Error(
        `simulated Discord: no button with custom_id ${customId} on interaction ${from.id}'s messages`,
      );
    }
    if (found.disabled) throw new Error(`simulated Discord: the button ${customId} is disabled`);
    const payload: APIMessageComponentInteraction = {
      ...this.basePayload(from.invocation),
      type: InteractionType.MessageComponent,
      data: { custom_id: customId, component_type: ComponentType.Button },
      message: structuredClone(found.posted.message),
    };
    return this.start(payload, from.invocation, from.commandName, found.posted);
  }

  /** Every pending wait rejects and every window timer goes. */
  stop(): void {
    for (const interaction of this.byId.values()) interaction.stop();
  }

  /** REST: command registration (the bot's token) and the interaction routes (the interaction's token). */
  readonly routes: FastifyPluginCallback = (app, _options, done) => {
    // Files come as multipart/form-data, read whole here (up to Discord's request limit) and parsed later.
    app.addContentTypeParser(
      'multipart/form-data',
      { parseAs: 'buffer', bodyLimit: MAX_UPLOAD_REQUEST_BYTES },
      (_request, body, parsed) => parsed(null, body),
    );

    type AppParams = { Params: { id: string; guildId?: string } };
    const list = async (request: FastifyRequest<AppParams>, reply: FastifyReply) => {
      const scope = this.scope(request.params.id, request.params.guildId ?? null);
      return 'status' in scope ? refuse(reply, scope) : scope.commands;
    };
    const overwrite = async (request: FastifyRequest<AppParams>, reply: FastifyReply) => {
      const scope = this.scope(request.params.id, request.params.guildId ?? null);
      if ('status' in scope) return refuse(reply, scope);
      const refusal = checkCommands(request.body);
      if (refusal) return refuse(reply, refusal);
      const next = this.overwrite(
        scope.commands,
        request.body as Array<Record<string, unknown>>,
        request.params.guildId ?? null,
      );
      scope.commands.splice(0, scope.commands.length, ...next);
      return next;
    };
    app.get('/applications/:id/commands', list);
    app.put('/applications/:id/commands', overwrite);
    app.get('/applications/:id/guilds/:guildId/commands', list);
    app.put('/applications/:id/guilds/:guildId/commands', overwrite);

    app.post<{ Params: { id: string; token: string }; Querystring: { with_response?: string } }>(
      '/interactions/:id/:token/callback',
      async (request, reply) => {
        const body = await readBody(request);
        const interaction = this.byId.get(request.params.id);
        if (!interaction || interaction.token !== request.params.token || interaction.late(Date.now())) {
          return refuse(reply, notFound(RestErrorCodes.UnknownInteraction, 'Unknown interaction'));
        }
        if (interaction.callback) {
          return refuse(reply, {
            status: 400,
            error: {
              message: 'Interaction has already been acknowledged.',
              code: RestErrorCodes.InteractionAlreadyAcknowledged,
            },
          });
        }
        if ('status' in body) return refuse(reply, body);
        const result = await this.respond(interaction, body);
        if ('status' in result) return refuse(reply, result);
        if (request.query.with_response !== 'true') return reply.code(204).send();
        const message = result.message;
        return {
          interaction: {
            id: interaction.id,
            type: interaction.payload.type,
            ...(message
              ? {
                  response_message_id: message.message.id,
                  response_message_loading: ((message.message.flags ?? 0) & MessageFlags.Loading) !== 0,
                  response_message_ephemeral: !message.public,
                }
              : {}),
          },
          resource: {
            type: result.type,
            ...(message && result.type !== InteractionResponseType.DeferredChannelMessageWithSource
              ? { message: message.message }
              : {}),
          },
        };
      },
    );

    type MessageParams = { Params: { id: string; token: string; messageId: string } };
    const find = (
      request: FastifyRequest<MessageParams>,
    ): Refusal | [SimulatedInteraction, PostedMessage] => {
      const interaction = this.webhook(request.params.id, request.params.token);
      if ('status' in interaction) return interaction;
      const messageId = request.params.messageId;
      // `@original` arrives as `%40original` from @discordjs/rest, so no static route would match it.
      const posted =
        messageId === '@original'
          ? interaction.original
          : interaction.posted().find((entry) => entry.message.id === messageId);
      if (!posted || posted.deleted) return notFound(RestErrorCodes.UnknownMessage, 'Unknown Message');
      return [interaction, posted];
    };
    const read = async (request: FastifyRequest<MessageParams>, reply: FastifyReply) => {
      const found = find(request);
      return 'status' in found ? refuse(reply, found) : found[1].message;
    };
    const edit = async (request: FastifyRequest<MessageParams>, reply: FastifyReply) => {
      const body = await readBody(request);
      const found = find(request);
      if ('status' in found) return refuse(reply, found);
      if ('status' in body) return refuse(reply, body);
      const edited = await this.edit(found[1], body);
      return 'status' in edited ? refuse(reply, edited) : edited.message;
    };
    const remove = async (request: FastifyRequest<MessageParams>, reply: FastifyReply) => {
      const found = find(request);
      if ('status' in found) return refuse(reply, found);
      const posted = found[1];
      posted.deleted = true;
      if (posted.public) await this.options.publish('delete', posted.message, posted.place.seen);
      return reply.code(204).send();
    };
    app.get('/webhooks/:id/:token/messages/:messageId', read);
    app.patch('/webhooks/:id/:token/messages/:messageId', edit);
    app.delete('/webhooks/:id/:token/messages/:messageId', remove);

    app.post<{ Params: { id: string; token: string } }>('/webhooks/:id/:token', async (request, reply) => {
      const body = await readBody(request);
      const interaction = this.webhook(request.params.id, request.params.token);
      if ('status' in interaction) return refuse(reply, interaction);
      if ('status' in body) return refuse(reply, body);
      const original = interaction.original;
      // As Discord, for bots written before edits existed: the first follow-up to a deferral fills it in.
      if (original && !original.deleted && (original.message.flags ?? 0) & MessageFlags.Loading) {
        const edited = await this.edit(original, body);
        return 'status' in edited ? refuse(reply, edited) : edited.message;
      }
      const checked = checkMessage(body, [], 'create');
      if ('status' in checked) return refuse(reply, checked);
      const posted = await this.post(interaction, checked, { followup: true });
      return posted.message;
    });

    done();
  };

  // ---- commands -------------------------------------------------------------------------------------

  private scope(appId: string, guildId: string | null): Refusal | { commands: APIApplicationCommand[] } {
    if (appId !== this.options.applicationId) {
      return { status: 403, error: { message: 'Missing Access', code: RestErrorCodes.MissingAccess } };
    }
    if (guildId === null) return { commands: this.globalCommands };
    if (!this.options.state.guilds.has(guildId))
      return notFound(RestErrorCodes.UnknownGuild, 'Unknown Guild');
    let commands = this.guildCommands.get(guildId);
    if (!commands) {
      commands = [];
      this.guildCommands.set(guildId, commands);
    }
    return { commands };
  }

  /**
   * The new list: a command keeps its id (matched by the id given, else by type and name) and its version
   * unless its definition changed.
   */
  private overwrite(
    existing: APIApplicationCommand[],
    inputs: Array<Record<string, unknown>>,
    guildId: string | null,
  ): APIApplicationCommand[] {
    const { ids } = this.options.state;
    return inputs.map((input) => {
      const type = (input.type as ApplicationCommandType | undefined) ?? ApplicationCommandType.ChatInput;
      const previous = existing.find((command) =>
        input.id !== undefined
          ? command.id === input.id
          : command.type === type && command.name === input.name,
      );
      const definition = {
        type,
        name: input.name as string,
        ...(input.name_localizations !== undefined
          ? { name_localizations: input.name_localizations as APIApplicationCommand['name_localizations'] }
          : {}),
        description: (input.description as string | undefined) ?? '',
        ...(input.description_localizations !== undefined
          ? {
              description_localizations:
                input.description_localizations as APIApplicationCommand['description_localizations'],
            }
          : {}),
        ...(input.options !== undefined ? { options: input.options as APIApplicationCommandOption[] } : {}),
        default_member_permissions: (input.default_member_permissions as string | null | undefined) ?? null,
        dm_permission: (input.dm_permission as boolean | null | undefined) ?? true,
        nsfw: (input.nsfw as boolean | undefined) ?? false,
        integration_types: (input.integration_types as ApplicationIntegrationType[] | undefined) ?? [
          ApplicationIntegrationType.GuildInstall,
        ],
        contexts: (input.contexts as InteractionContextType[] | null | undefined) ?? null,
      };
      const unchanged =
        previous !== undefined && JSON.stringify(definition) === JSON.stringify(definitionOf(previous));
      return {
        id: previous?.id ?? ids.next(),
        application_id: this.options.applicationId,
        ...(guildId !== null ? { guild_id: guildId } : {}),
        ...definition,
        version: unchanged && previous ? previous.version : ids.next(),
      };
    });
  }

  private commandFor(name: string, place: Place): APIApplicationCommand {
    const inGuild = place.botGuild ? (this.guildCommands.get(place.botGuild.id) ?? []) : [];
    // A guild's own command goes before a global one of the same name.
    const command = [...inGuild, ...this.globalCommands].find((entry) => entry.name === name);
    if (!command) {
      throw new Error(
        `simulated Discord: no command /${name} is registered${place.botGuild ? ` globally or in guild ${place.botGuild.id}` : ' globally'}`,
      );
    }
    if (command.type !== ApplicationCommandType.ChatInput) {
      throw new Error(`simulated Discord: /${name} is not a slash command (type ${command.type})`);
    }
    return command;
  }

  // ---- interactions ---------------------------------------------------------------------------------

  private placeOf(where: InteractInput['where'], user: APIUser): Place {
    const { state } = this.options;
    if (where === 'dm') {
      const channel = state.dmChannelFor(user.id);
      return {
        context: InteractionContextType.BotDM,
        guildId: null,
        botGuild: null,
        channel: state.channelPayload(channel),
        seen: channel,
      };
    }
    if (where === 'private') {
      return {
        context: InteractionContextType.PrivateChannel,
        guildId: null,
        botGuild: null,
        channel: { id: this.channelElsewhere(`private:${user.id}`), type: ChannelType.GroupDM, name: null },
        seen: null,
      };
    }
    if (!isSnowflake(where.guildId)) throw new Error(`simulated Discord: ${where.guildId} is not a guild id`);
    const known = where.channelId === undefined ? undefined : state.channels.get(where.channelId);
    const guild = state.guilds.get(where.guildId);
    if (known && known.guildId !== where.guildId) {
      throw new Error(`simulated Discord: channel ${where.channelId} is not in guild ${where.guildId}`);
    }
    if (!guild) {
      const channelId = where.channelId ?? this.channelElsewhere(`guild:${where.guildId}`);
      return {
        context: InteractionContextType.Guild,
        guildId: where.guildId,
        botGuild: null,
        channel: { id: channelId, type: ChannelType.GuildText, guild_id: where.guildId, name: 'general' },
        seen: null,
      };
    }
    if (!guild.members.has(user.id)) {
      throw new Error(`simulated Discord: ${user.id} is not a member of guild ${guild.id}`);
    }
    if (guild.unavailable) throw new Error(`simulated Discord: guild ${guild.id} is unavailable`);
    const channel =
      known ??
      (where.channelId === undefined
        ? (state.channels.get(guild.channelIds[0] ?? '') as SimChannel)
        : state.addGuildChannel(guild, where.channelId, `channel-${guild.channelIds.length}`));
    return {
      context: InteractionContextType.Guild,
      guildId: guild.id,
      botGuild: guild,
      channel: state.channelPayload(channel),
      seen: channel,
    };
  }

  private channelElsewhere(key: string): string {
    let id = this.elsewhere.get(key);
    if (id === undefined) {
      id = this.options.state.ids.next();
      this.elsewhere.set(key, id);
    }
    return id;
  }

  /** The invoking member with their permissions: the owner has them all, anyone else @everyone's. */
  private memberOf(place: Place, user: APIUser): APIInteractionGuildMember {
    const known = place.botGuild?.members.get(user.id);
    const member = this.options.state.memberPayload(
      known ?? { userId: user.id, nick: null, roles: [], joinedAt: Date.now() },
    );
    const permissions = place.botGuild?.ownerId === user.id ? ALL_PERMISSIONS : EVERYONE_PERMISSIONS;
    return { ...member, user, permissions };
  }

  /** The fields every interaction has, from who runs it and where. */
  private basePayload(invocation: Invocation) {
    const { place } = invocation;
    const id = this.options.state.ids.next();
    const where =
      place.guildId === null
        ? { user: invocation.user }
        : {
            guild_id: place.guildId,
            guild: { id: place.guildId, locale: Locale.EnglishUS, features: [] },
            guild_locale: Locale.EnglishUS,
            member: invocation.member as APIInteractionGuildMember,
          };
    return {
      id,
      application_id: this.options.applicationId,
      token: Buffer.from(`interaction:${id}:${randomBytes(96).toString('base64url')}`).toString('base64url'),
      version: 1 as const,
      ...where,
      channel: place.channel,
      channel_id: place.channel.id,
      app_permissions: invocation.appPermissions,
      locale: Locale.EnglishUS,
      entitlements: [],
      authorizing_integration_owners: invocation.owners,
      context: place.context,
      attachment_size_limit: ATTACHMENT_SIZE_LIMIT,
    };
  }

  /** Keeps the interaction, opens its response window and dispatches it to the shard that hears it. */
  private start(
    payload: APIInteraction,
    invocation: Invocation,
    commandName: string,
    clicked: PostedMessage | null,
  ): SimInteraction {
    const interaction = new SimulatedInteraction(this, payload, invocation, commandName, clicked);
    this.byId.set(interaction.id, interaction);
    this.byToken.set(interaction.token, interaction);
    if (this.byId.size > MAX_KEPT_INTERACTIONS) {
      const oldest = this.byId.values().next().value;
      if (oldest) this.forget(oldest);
    }
    interaction.windowTimer = setTimeout(() => interaction.lapse(), this.options.responseMs).unref();
    const frame = () => ({
      op: GatewayOpcodes.Dispatch as const,
      t: GatewayDispatchEvents.InteractionCreate as const,
      d: payload,
    });
    const { gateway } = this.options;
    // Interactions need no intent; outside guilds they come to shard 0, as DMs do.
    const guildId = invocation.place.guildId;
    if (guildId === null) gateway.dispatchToShard(0, frame);
    else gateway.dispatchToGuild(guildId, frame);
    return interaction;
  }

  private forget(interaction: SimulatedInteraction): void {
    interaction.stop();
    this.byId.delete(interaction.id);
    this.byToken.delete(interaction.token);
    // A message goes with the last interaction that lists it (a button's message outlives its command).
    for (const posted of this.posted) posted.owners.delete(interaction);
    this.posted = this.posted.filter((posted) => posted.owners.size > 0);
  }

  /** The interaction a webhook route names, if its token still answers and the interaction was acknowledged. */
  private webhook(appId: string, token: string): Refusal | SimulatedInteraction {
    const interaction = this.byToken.get(token);
    if (
      appId !== this.options.applicationId ||
      !interaction ||
      !interaction.callback ||
      Date.now() - interaction.createdAt >= this.options.tokenMs
    ) {
      return notFound(RestErrorCodes.UnknownWebhook, 'Unknown Webhook');
    }
    return interaction;
  }

  /** The initial callback: validated, then the interaction is acknowledged and its message posted. */
  private async respond(
    interaction: SimulatedInteraction,
    body: RequestBody,
  ): Promise<Refusal | { type: InteractionResponseType; message: PostedMessage | null }> {
    const response = body.json;
    if (!isRecord(response))
      return invalidBody([], 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType');
    const component = interaction.clicked !== null;
    const allowed = component
      ? [
          InteractionResponseType.ChannelMessageWithSource,
          InteractionResponseType.DeferredChannelMessageWithSource,
          InteractionResponseType.DeferredMessageUpdate,
          InteractionResponseType.UpdateMessage,
        ]
      : [
          InteractionResponseType.ChannelMessageWithSource,
          InteractionResponseType.DeferredChannelMessageWithSource,
        ];
    const type = response.type as InteractionResponseType;
    if (!allowed.includes(type)) {
      return invalidBody(['type'], 'BASE_TYPE_CHOICES', `Value must be one of {${allowed.join(', ')}}.`);
    }
    const data = response.data ?? {};
    if (!isRecord(data))
      return invalidBody(['data'], 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType');
    const clicked = interaction.clicked;

    switch (type) {
      case InteractionResponseType.ChannelMessageWithSource: {
        const checked = checkMessage({ json: data, uploads: body.uploads }, ['data'], 'create');
        if ('status' in checked) return checked;
        interaction.acknowledge(response as unknown as APIInteractionResponse);
        return { type, message: await this.post(interaction, checked, { followup: false }) };
      }
      case InteractionResponseType.DeferredChannelMessageWithSource: {
        const flags = typeof data.flags === 'number' ? data.flags & MessageFlags.Ephemeral : 0;
        interaction.acknowledge(response as unknown as APIInteractionResponse);
        const thinking = { fields: { content: '', flags }, uploads: [] };
        return { type, message: await this.post(interaction, thinking, { followup: false, loading: true }) };
      }
      case InteractionResponseType.DeferredMessageUpdate:
        interaction.acknowledge(response as unknown as APIInteractionResponse);
        this.adopt(interaction, clicked as PostedMessage);
        return { type, message: null };
      default: {
        // UPDATE_MESSAGE: the button's message changes, ephemeral or not as it was.
        const target = clicked as PostedMessage;
        if (target.deleted) return notFound(RestErrorCodes.UnknownMessage, 'Unknown Message');
        const checked = checkMessage({ json: data, uploads: body.uploads }, ['data'], 'edit');
        if ('status' in checked) return checked;
        const refusal = this.apply(target, checked);
        if (refusal) return refusal;
        interaction.acknowledge(response as unknown as APIInteractionResponse);
        this.adopt(interaction, target);
        await this.changed(target, 'update');
        return { type, message: target };
      }
    }
  }

  /** A component interaction answered by updating its message: that message is its original. */
  private adopt(interaction: SimulatedInteraction, posted: PostedMessage): void {
    interaction.original = posted;
    posted.owners.add(interaction);
  }

  /** A new message of the interaction: its original response, or a follow-up. */
  private async post(
    interaction: SimulatedInteraction,
    checked: CheckedMessage,
    options: { followup: boolean; loading?: boolean },
  ): Promise<PostedMessage> {
    const { state, applicationId } = this.options;
    const { place, user, owners } = interaction.invocation;
    const { fields } = checked;
    const now = Date.now();
    const id = state.ids.next(now);
    const ephemeral = ((fields.flags ?? 0) & MessageFlags.Ephemeral) !== 0;
    const original = options.followup ? interaction.original : null;
    const clicked = interaction.clicked;
    const metadata: APIMessageInteractionMetadata = clicked
      ? {
          id: interaction.id,
          type: InteractionType.MessageComponent,
          user,
          authorizing_integration_owners: owners,
          interacted_message_id: clicked.message.id,
          ...(original ? { original_response_message_id: original.message.id } : {}),
        }
      : {
          id: interaction.id,
          type: InteractionType.ApplicationCommand,
          user,
          authorizing_integration_owners: owners,
          ...(original ? { original_response_message_id: original.message.id } : {}),
        };
    const files = new Map<string, Buffer>();
    const message: APIMessage = {
      id,
      type: clicked ? MessageType.Reply : MessageType.ChatInputCommand,
      channel_id: place.channel.id,
      author: state.botUser,
      content: fields.content ?? '',
      timestamp: discordTimestamp(now),
      edited_timestamp: null,
      tts: fields.tts ?? false,
      mention_everyone: false,
      mentions: state.mentionsOf(fields.content ?? '', fields.allowed_mentions),
      mention_roles: [],
      attachments: this.attach(checked, [], files, place.channel.id, ephemeral, undefined),
      embeds: embedsOf(fields.embeds ?? []),
      pinned: false,
      components: fields.components ?? [],
      flags: ((fields.flags ?? 0) | (options.loading ? MessageFlags.Loading : 0)) as MessageFlags,
      webhook_id: applicationId,
      application_id: applicationId,
      interaction_metadata: metadata,
      ...(clicked
        ? {
            message_reference: {
              type: MessageReferenceType.Default,
              message_id: clicked.message.id,
              channel_id: place.channel.id,
              ...(place.guildId !== null ? { guild_id: place.guildId } : {}),
            },
          }
        : {
            interaction: {
              id: interaction.id,
              type: InteractionType.ApplicationCommand,
              name: interaction.commandName,
              user,
            },
          }),
    };
    const posted: PostedMessage = {
      message,
      files,
      public: !ephemeral,
      place,
      deleted: false,
      owners: new Set([interaction]),
    };
    if (options.followup) interaction.followups.push(posted);
    else interaction.original = posted;
    this.posted.push(posted);
    await this.changed(posted, 'create');
    return posted;
  }

  /** PATCH of a message (and the follow-up that fills in a deferral). */
  private async edit(posted: PostedMessage, body: RequestBody): Promise<Refusal | PostedMessage> {
    const checked = checkMessage(body, [], 'edit');
    if ('status' in checked) return checked;
    const refusal = this.apply(posted, checked);
    if (refusal) return refusal;
    await this.changed(posted, 'update');
    return posted;
  }

  /** Applies an edit in place; refuses one that would leave the message empty. */
  private apply(posted: PostedMessage, checked: CheckedMessage): Refusal | null {
    const { fields } = checked;
    const message = posted.message;
    const files = new Map(posted.files);
    const attachments =
      fields.attachments === undefined && checked.uploads.length === 0
        ? message.attachments
        : this.attach(
            checked,
            message.attachments,
            files,
            message.channel_id,
            !posted.public,
            fields.attachments,
          );
    const content = fields.content === undefined ? message.content : (fields.content ?? '');
    const embeds = fields.embeds === undefined ? message.embeds : embedsOf(fields.embeds ?? []);
    const components = fields.components === undefined ? message.components : (fields.components ?? []);
    if (!content && embeds.length === 0 && attachments.length === 0 && (components?.length ?? 0) === 0) {
      return EMPTY_MESSAGE;
    }
    const loading = ((message.flags ?? 0) & MessageFlags.Loading) !== 0;
    let flags = (message.flags ?? 0) & ~MessageFlags.Loading;
    if (typeof fields.flags === 'number') flags = (flags & ~EDIT_FLAGS) | (fields.flags & EDIT_FLAGS);
    Object.assign(message, {
      content,
      embeds,
      components,
      attachments,
      flags,
      mentions:
        fields.content === undefined && fields.allowed_mentions === undefined
          ? message.mentions
          : this.options.state.mentionsOf(content, fields.allowed_mentions ?? undefined),
      // Filling in a deferral is the message's first content, not an edit of it.
      edited_timestamp: loading ? null : discordTimestamp(Date.now()),
    });
    posted.files = files;
    return null;
  }

  /**
   * The message's attachments: the existing ones `kept` names (so an edit with new files and no list drops
   * the old ones, as v10 does), then one per file uploaded, named and described as its `attachments` entry.
   */
  private attach(
    checked: CheckedMessage,
    existing: APIAttachment[],
    files: Map<string, Buffer>,
    channelId: string,
    ephemeral: boolean,
    kept: RESTAPIAttachment[] | null | undefined,
  ): APIAttachment[] {
    const requested = new Map((kept ?? []).map((entry) => [String(entry.id), entry]));
    const retained = existing.flatMap((attachment) => {
      const entry = requested.get(attachment.id);
      if (!entry) {
        files.delete(attachment.id);
        return [];
      }
      return [
        { ...attachment, ...(entry.description !== undefined ? { description: entry.description } : {}) },
      ];
    });
    const uploaded = checked.uploads.map((upload): APIAttachment => {
      const entry = requested.get(upload.index);
      const id = this.options.state.ids.next();
      const filename = entry?.filename ?? upload.filename;
      const url = `${this.options.cdnUrl()}/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
      files.set(id, upload.data);
      return {
        id,
        filename,
        size: upload.data.length,
        url,
        proxy_url: url,
        content_type: upload.contentType,
        ...(entry?.description ? { description: entry.description } : {}),
        ...(ephemeral ? { ephemeral: true } : {}),
      };
    });
    return [...retained, ...uploaded];
  }

  /** Tells the simulator (for a public message) and whoever waits on the message. */
  private async changed(posted: PostedMessage, change: MessageChange): Promise<void> {
    if (posted.public) await this.options.publish(change, posted.message, posted.place.seen);
    for (const owner of posted.owners) owner.messageChanged(posted);
  }
}

// ---- command registration -----------------------------------------------------------------------------

/** A stored command's definition: what a PUT gives, with Discord's defaults. */
function definitionOf(command: APIApplicationCommand): Partial<APIApplicationCommand> {
  const { id: _id, application_id: _app, guild_id: _guild, version: _version, ...definition } = command;
  return definition;
}

/** Discord's checks of a bulk overwrite: every error found, nested as the body is. */
function checkCommands(body: unknown): Refusal | null {
  const errors = new ErrorList();
  if (!Array.isArray(body)) {
    errors.add([], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    return errors.refusal();
  }
  const counts = new Map<number, number>();
  const names = new Set<string>();
  body.forEach((command: unknown, index) => {
    if (!isRecord(command)) {
      errors.add([index], 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType');
      return;
    }
    const type = command.type ?? ApplicationCommandType.ChatInput;
    if (typeof type !== 'number' || !(type in MAX_COMMANDS)) {
      errors.add([index, 'type'], 'BASE_TYPE_CHOICES', 'Value must be one of {1, 2, 3}.');
      return;
    }
    counts.set(type, (counts.get(type) ?? 0) + 1);
    const key = `${type}:${String(command.name)}`;
    if (names.has(key)) {
      errors.add(
        [index, 'name'],
        'APPLICATION_COMMANDS_DUPLICATE_NAME',
        'Application command names must be unique',
      );
    }
    names.add(key);
    checkCommand(errors, [index], command, type);
  });
  for (const [type, count] of counts) {
    const max = MAX_COMMANDS[type] ?? 0;
    if (count > max) errors.add([], 'BASE_TYPE_MAX_LENGTH', `Must be ${max} or fewer in length.`);
  }
  return errors.refusal();
}

function checkCommand(errors: ErrorList, path: Path, command: Record<string, unknown>, type: number): void {
  const chatInput = type === ApplicationCommandType.ChatInput;
  if (chatInput) {
    checkName(errors, [...path, 'name'], command.name);
    checkLength(errors, [...path, 'description'], command.description, 1, 100);
  } else {
    checkLength(errors, [...path, 'name'], command.name, 1, 32);
    if (command.description !== undefined && command.description !== '') {
      errors.add([...path, 'description'], 'BASE_TYPE_MAX_LENGTH', 'Must be 0 or fewer in length.');
    }
  }
  if (command.options !== undefined) {
    if (!chatInput) {
      errors.add(
        [...path, 'options'],
        'APPLICATION_COMMAND_OPTIONS_INVALID',
        'Only slash commands take options',
      );
    } else {
      checkOptions(errors, [...path, 'options'], command.options, 'command');
    }
  }
  checkSubset(errors, [...path, 'integration_types'], command.integration_types, [0, 1], false);
  checkSubset(errors, [...path, 'contexts'], command.contexts, [0, 1, 2], true);
  const permissions = command.default_member_permissions;
  if (
    permissions !== undefined &&
    permissions !== null &&
    !(typeof permissions === 'string' && /^\d{1,20}$/.test(permissions))
  ) {
    errors.add(
      [...path, 'default_member_permissions'],
      'NUMBER_TYPE_COERCE',
      `Value "${String(permissions)}" is not int.`,
    );
  }
  for (const field of ['dm_permission', 'nsfw']) {
    const value = command[field];
    if (value !== undefined && value !== null && typeof value !== 'boolean') {
      errors.add([...path, field], 'BOOLEAN_TYPE_CONVERT', 'Must be either true or false.');
    }
  }
  if (chatInput && commandCharacters(command) > MAX_COMMAND_CHARACTERS) {
    errors.add(
      path,
      'APPLICATION_COMMAND_TOO_LARGE',
      `Command exceeds maximum size (${MAX_COMMAND_CHARACTERS})`,
    );
  }
}

/**
 * A level of options: a command's (subcommand groups and subcommands, or basic options, never both), a
 * group's (subcommands only) or a subcommand's (basic options only).
 */
function checkOptions(
  errors: ErrorList,
  path: Path,
  options: unknown,
  level: 'command' | 'group' | 'subcommand',
): void {
  if (!Array.isArray(options)) {
    errors.add(path, 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    return;
  }
  if (options.length > MAX_OPTIONS)
    errors.add(path, 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_OPTIONS} or fewer in length.`);
  const names = new Set<string>();
  let nested = 0;
  let basic = 0;
  let optionalSeen = false;
  options.forEach((option: unknown, index) => {
    const at = [...path, index];
    if (!isRecord(option)) {
      errors.add(at, 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType');
      return;
    }
    const type = option.type;
    if (typeof type !== 'number' || !Number.isInteger(type) || type < 1 || type > 11) {
      errors.add(
        [...at, 'type'],
        'BASE_TYPE_CHOICES',
        'Value must be one of {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}.',
      );
      return;
    }
    checkName(errors, [...at, 'name'], option.name);
    if (typeof option.name === 'string') {
      if (names.has(option.name)) {
        errors.add(
          [...at, 'name'],
          'APPLICATION_COMMAND_OPTION_NAME_ALREADY_EXISTS',
          'Option names must be unique',
        );
      }
      names.add(option.name);
    }
    checkLength(errors, [...at, 'description'], option.description, 1, 100);
    if (option.required !== undefined && typeof option.required !== 'boolean') {
      errors.add([...at, 'required'], 'BOOLEAN_TYPE_CONVERT', 'Must be either true or false.');
    }

    if (
      type === ApplicationCommandOptionType.SubcommandGroup ||
      type === ApplicationCommandOptionType.Subcommand
    ) {
      nested++;
      const group = type === ApplicationCommandOptionType.SubcommandGroup;
      if (level === 'subcommand' || (group && level === 'group')) {
        errors.add(
          [...at, 'type'],
          'APPLICATION_COMMAND_OPTION_TYPE_INVALID',
          group ? 'Sub-command groups must be top level' : 'Sub-commands cannot hold sub-commands',
        );
      } else if (option.options !== undefined) {
        checkOptions(errors, [...at, 'options'], option.options, group ? 'group' : 'subcommand');
      }
      return;
    }

    basic++;
    if (level === 'group') {
      errors.add(
        [...at, 'type'],
        'APPLICATION_COMMAND_OPTION_TYPE_INVALID',
        'Sub-command groups can only hold sub-commands',
      );
    }
    if (option.required === true && optionalSeen) {
      errors.add(
        [...at, 'required'],
        'APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID',
        'Required options must be placed before non-required options',
      );
    }
    if (option.required !== true) optionalSeen = true;
    checkBasicOption(errors, at, option, type);
  });
  if (level === 'command' && nested > 0 && basic > 0) {
    errors.add(
      path,
      'APPLICATION_COMMAND_OPTIONS_TYPE_INVALID',
      'Sub-command and sub-command group option types are mutually exclusive to all other types',
    );
  }
}

function checkBasicOption(errors: ErrorList, at: Path, option: Record<string, unknown>, type: number): void {
  const withChoices = [
    ApplicationCommandOptionType.String,
    ApplicationCommandOptionType.Integer,
    ApplicationCommandOptionType.Number,
  ] as number[];
  const choices = option.choices;
  if (choices !== undefined && choices !== null) {
    if (!withChoices.includes(type)) {
      errors.add(
        [...at, 'choices'],
        'APPLICATION_COMMAND_OPTION_CHOICES_INVALID',
        'Only string, integer and number options have choices',
      );
    } else if (!Array.isArray(choices)) {
      errors.add([...at, 'choices'], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    } else {
      if (choices.length > MAX_CHOICES) {
        errors.add([...at, 'choices'], 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_CHOICES} or fewer in length.`);
      }
      choices.forEach((choice: unknown, index) => {
        const where = [...at, 'choices', index];
        if (!isRecord(choice)) {
          errors.add(where, 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType');
          return;
        }
        checkLength(errors, [...where, 'name'], choice.name, 1, 100);
        const problem = valueProblem(type, choice.value);
        if (problem) errors.add([...where, 'value'], 'BASE_TYPE_INVALID', problem);
        else if (typeof choice.value === 'string')
          checkLength(errors, [...where, 'value'], choice.value, 1, 100);
      });
      if (option.autocomplete === true && choices.length > 0) {
        errors.add(
          [...at, 'autocomplete'],
          'APPLICATION_COMMAND_OPTION_AUTOCOMPLETE_INVALID',
          'Autocomplete cannot be set with choices',
        );
      }
    }
  }
  for (const [field, min] of [
    ['min_length', 0],
    ['max_length', 1],
  ] as const) {
    const value = option[field];
    if (value === undefined) continue;
    if (type !== ApplicationCommandOptionType.String) {
      errors.add([...at, field], 'APPLICATION_COMMAND_OPTION_INVALID', 'Only string options have a length');
    } else if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 6000) {
      errors.add([...at, field], 'NUMBER_TYPE_MIN_MAX', `Must be between ${min} and 6000.`);
    }
  }
  for (const field of ['min_value', 'max_value'] as const) {
    const value = option[field];
    if (value === undefined) continue;
    if (type !== ApplicationCommandOptionType.Integer && type !== ApplicationCommandOptionType.Number) {
      errors.add(
        [...at, field],
        'APPLICATION_COMMAND_OPTION_INVALID',
        'Only integer and number options have a range',
      );
    } else {
      const problem = valueProblem(type, value);
      if (problem) errors.add([...at, field], 'BASE_TYPE_INVALID', problem);
    }
  }
  if (
    typeof option.min_value === 'number' &&
    typeof option.max_value === 'number' &&
    option.min_value > option.max_value
  ) {
    errors.add([...at, 'min_value'], 'NUMBER_TYPE_MAX', `Must be ${option.max_value} or less.`);
  }
}

function checkName(errors: ErrorList, path: Path, name: unknown): void {
  if (typeof name !== 'string') {
    errors.add(path, 'BASE_TYPE_REQUIRED', 'This field is required');
  } else if (!NAME.test(name) || name !== name.toLowerCase()) {
    errors.add(path, 'APPLICATION_COMMAND_INVALID_NAME', `Command name is invalid: ${JSON.stringify(name)}`);
  }
}

function checkLength(errors: ErrorList, path: Path, value: unknown, min: number, max: number): void {
  if (typeof value !== 'string') {
    errors.add(path, 'BASE_TYPE_REQUIRED', 'This field is required');
    return;
  }
  const length = [...value].length;
  if (length < min || length > max)
    errors.add(path, 'BASE_TYPE_BAD_LENGTH', `Must be between ${min} and ${max} in length.`);
}

function checkSubset(
  errors: ErrorList,
  path: Path,
  value: unknown,
  allowed: number[],
  nullable: boolean,
): void {
  if (value === undefined || (nullable && value === null)) return;
  if (!Array.isArray(value)) {
    errors.add(path, 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    return;
  }
  value.forEach((entry: unknown, index) => {
    if (typeof entry !== 'number' || !allowed.includes(entry)) {
      errors.add([...path, index], 'BASE_TYPE_CHOICES', `Value must be one of {${allowed.join(', ')}}.`);
    }
  });
}

/** Why a value does not fit an option type (string, integer, number), or null if it does. */
function valueProblem(type: number, value: unknown): string | null {
  switch (type) {
    case ApplicationCommandOptionType.String:
      return typeof value === 'string' ? null : 'Could not interpret as string.';
    case ApplicationCommandOptionType.Integer:
      return typeof value === 'number' && Number.isSafeInteger(value)
        ? null
        : `Value "${String(value)}" is not int.`;
    case ApplicationCommandOptionType.Number:
      return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= 2 ** 53
        ? null
        : `Value "${String(value)}" is not a valid number.`;
    default:
      return null;
  }
}

/** The characters Discord counts towards a slash command's size. */
function commandCharacters(node: Record<string, unknown>): number {
  let total = 0;
  for (const field of ['name', 'description']) {
    if (typeof node[field] === 'string') total += [...(node[field] as string)].length;
  }
  for (const choice of Array.isArray(node.choices) ? node.choices : []) {
    if (isRecord(choice))
      total += [...String(choice.name ?? '')].length + [...String(choice.value ?? '')].length;
  }
  for (const option of Array.isArray(node.options) ? node.options : []) {
    if (isRecord(option)) total += commandCharacters(option);
  }
  return total;
}

// ---- invoking a command -------------------------------------------------------------------------------

/**
 * The installations an invocation runs on (authorizing_integration_owners): the guild's when the bot is
 * there (its DM counts as "0"), the user's when the command may be installed to users. Throws, as Discord's
 * client would not offer the command, where the command may not be used or is installed nowhere.
 */
function ownersFor(
  command: APIApplicationCommand,
  place: Place,
  user: APIUser,
): APIAuthorizingIntegrationOwnersMap {
  const all = [
    InteractionContextType.Guild,
    InteractionContextType.BotDM,
    InteractionContextType.PrivateChannel,
  ];
  const contexts =
    command.guild_id !== undefined
      ? [InteractionContextType.Guild]
      : (command.contexts ??
        (command.dm_permission === false
          ? all.filter((context) => context !== InteractionContextType.BotDM)
          : all));
  if (!contexts.includes(place.context)) {
    throw new Error(
      `simulated Discord: /${command.name} cannot be used in ${CONTEXT_NAMES[place.context]} (context ${place.context}; the command allows ${JSON.stringify(contexts)})`,
    );
  }
  const types = command.integration_types ?? [ApplicationIntegrationType.GuildInstall];
  const owners: APIAuthorizingIntegrationOwnersMap = {};
  if (
    types.includes(ApplicationIntegrationType.GuildInstall) &&
    (place.botGuild !== null || place.context === InteractionContextType.BotDM)
  ) {
    owners[ApplicationIntegrationType.GuildInstall] = place.botGuild?.id ?? '0';
  }
  if (types.includes(ApplicationIntegrationType.UserInstall))
    owners[ApplicationIntegrationType.UserInstall] = user.id;
  if (Object.keys(owners).length === 0) {
    throw new Error(
      `simulated Discord: /${command.name} is not installed in ${CONTEXT_NAMES[place.context]}${place.guildId !== null ? ` (${place.guildId}, where the bot is not)` : ''}: ` +
        `that takes integration type 1 (user install), and the command has ${JSON.stringify(types)}`,
    );
  }
  return owners;
}

/** The `data.options` of an invocation, nested under its subcommand group and subcommand. */
function invocationOptions(
  command: APIApplicationCommand,
  path: string[],
  given: Record<string, OptionValue>,
): DataOption[] {
  const top = command.options ?? [];
  const nested = top.filter(
    (option): option is APIApplicationCommandSubcommandOption | APIApplicationCommandSubcommandGroupOption =>
      option.type === ApplicationCommandOptionType.Subcommand ||
      option.type === ApplicationCommandOptionType.SubcommandGroup,
  );
  if (nested.length === 0) {
    if (path.length > 0) throw new Error(`simulated Discord: /${command.name} has no subcommands`);
    return basicValues(command.name, top, given);
  }
  const [first, second, ...rest] = path;
  const head = nested.find((option) => option.name === first);
  if (!head) {
    const names = nested.map((option) => option.name).join(', ');
    throw new Error(
      `simulated Discord: /${command.name} needs a subcommand (one of ${names}); got ${JSON.stringify(path)}`,
    );
  }
  const headName = `${command.name} ${head.name}`;
  if (head.type === ApplicationCommandOptionType.Subcommand) {
    if (path.length !== 1) throw new Error(`simulated Discord: /${headName} has no subcommands`);
    return [{ type: head.type, name: head.name, options: basicValues(headName, head.options ?? [], given) }];
  }
  const sub = (head.options ?? []).find((option) => option.name === second);
  if (!sub || rest.length > 0) {
    const names = (head.options ?? []).map((option) => option.name).join(', ');
    throw new Error(
      `simulated Discord: /${headName} needs one subcommand (one of ${names}); got ${JSON.stringify(path)}`,
    );
  }
  const options = basicValues(`${headName} ${sub.name}`, sub.options ?? [], given);
  return [{ type: head.type, name: head.name, options: [{ type: sub.type, name: sub.name, options }] }];
}

/** The values given for a level of basic options, checked as Discord's client checks them. */
function basicValues(
  commandName: string,
  options: readonly APIApplicationCommandOption[],
  given: Record<string, OptionValue>,
): BasicDataOption[] {
  const at = `simulated Discord: /${commandName}`;
  for (const name of Object.keys(given)) {
    if (!options.some((option) => option.name === name)) {
      const names = options.map((option) => option.name).join(', ') || 'none';
      throw new Error(`${at} has no option ${name} (it has ${names})`);
    }
  }
  const values: BasicDataOption[] = [];
  for (const option of options) {
    const value = given[option.name];
    if (value === undefined) {
      if ('required' in option && option.required)
        throw new Error(`${at}: the option ${option.name} is required`);
      continue;
    }
    const problem = invocationProblem(option, value);
    if (problem) throw new Error(`${at}: option ${option.name} ${problem}`);
    values.push({ type: option.type, name: option.name, value } as BasicDataOption);
  }
  return values;
}

function invocationProblem(option: APIApplicationCommandOption, value: OptionValue): string | null {
  switch (option.type) {
    case ApplicationCommandOptionType.String: {
      if (typeof value !== 'string') return `takes a string, not ${JSON.stringify(value)}`;
      const length = [...value].length;
      if (option.min_length !== undefined && length < option.min_length)
        return `is shorter than ${option.min_length}`;
      if (option.max_length !== undefined && length > option.max_length)
        return `is longer than ${option.max_length}`;
      break;
    }
    case ApplicationCommandOptionType.Integer:
    case ApplicationCommandOptionType.Number: {
      const integer = option.type === ApplicationCommandOptionType.Integer;
      if (typeof value !== 'number' || (integer ? !Number.isSafeInteger(value) : !Number.isFinite(value))) {
        return `takes ${integer ? 'an integer' : 'a number'}, not ${JSON.stringify(value)}`;
      }
      if (option.min_value !== undefined && value < option.min_value) return `is below ${option.min_value}`;
      if (option.max_value !== undefined && value > option.max_value) return `is above ${option.max_value}`;
      break;
    }
    case ApplicationCommandOptionType.Boolean:
      return typeof value === 'boolean' ? null : `takes true or false, not ${JSON.stringify(value)}`;
    default:
      return `is of type ${option.type} (${ApplicationCommandOptionType[option.type]}), which interact() does not fill in`;
  }
  const choices = 'choices' in option ? option.choices : undefined;
  if (choices && choices.length > 0 && !choices.some((choice) => choice.value === value)) {
    return `must be one of ${choices.map((choice) => JSON.stringify(choice.value)).join(', ')}, not ${JSON.stringify(value)}`;
  }
  return null;
}

// ---- messages ---------------------------------------------------------------------------------------

interface CheckedMessage {
  fields: Partial<MessageBody> & { attachments?: RESTAPIAttachment[] | null };
  uploads: Upload[];
}

/**
 * A message body as Discord checks it: content up to 2,000 characters, flags a message may carry, embeds,
 * components (rows of at most five buttons, each button well formed, custom ids unique in the message),
 * files within the size limit; a new message must not be empty.
 */
function checkMessage(body: RequestBody, path: Path, purpose: 'create' | 'edit'): Refusal | CheckedMessage {
  const data = body.json;
  if (!isRecord(data))
    return invalidBody(path, 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType');
  const errors = new ErrorList();
  const { content, flags, embeds, components, attachments } = data;
  if (content !== undefined && content !== null) {
    if (typeof content !== 'string')
      errors.add([...path, 'content'], 'STRING_TYPE_CONVERT', 'Could not interpret as string.');
    else if ([...content].length > MAX_MESSAGE_LENGTH) {
      errors.add(
        [...path, 'content'],
        'BASE_TYPE_MAX_LENGTH',
        `Must be ${MAX_MESSAGE_LENGTH} or fewer in length.`,
      );
    }
  }
  if (flags !== undefined && flags !== null) {
    if (typeof flags !== 'number' || !Number.isInteger(flags)) {
      errors.add([...path, 'flags'], 'NUMBER_TYPE_COERCE', `Value "${String(flags)}" is not int.`);
    } else if (purpose === 'create' && (flags & ~CREATE_FLAGS) !== 0) {
      errors.add([...path, 'flags'], 'MESSAGE_FLAGS_INVALID', 'Invalid flags');
    }
  }
  if (embeds !== undefined && embeds !== null) {
    if (!Array.isArray(embeds))
      errors.add([...path, 'embeds'], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    else if (embeds.length > MAX_EMBEDS)
      errors.add([...path, 'embeds'], 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_EMBEDS} or fewer in length.`);
  }
  if (components !== undefined && components !== null) {
    const v2 = typeof flags === 'number' && (flags & MessageFlags.IsComponentsV2) !== 0;
    checkComponents(errors, [...path, 'components'], components, v2);
  }
  if (attachments !== undefined && attachments !== null && !Array.isArray(attachments)) {
    errors.add([...path, 'attachments'], 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
  }
  const refusal = errors.refusal();
  if (refusal) return refusal;
  if (body.uploads.some((upload) => upload.data.length > ATTACHMENT_SIZE_LIMIT)) {
    return {
      status: 413,
      error: { message: 'Request entity too large', code: RestErrorCodes.RequestEntityTooLarge },
    };
  }
  const empty =
    !content &&
    !(Array.isArray(embeds) && embeds.length > 0) &&
    !(Array.isArray(components) && components.length > 0) &&
    body.uploads.length === 0 &&
    !data.poll;
  if (purpose === 'create' && empty) return EMPTY_MESSAGE;
  return { fields: data as CheckedMessage['fields'], uploads: body.uploads };
}

function checkComponents(errors: ErrorList, path: Path, components: unknown, v2: boolean): void {
  if (!Array.isArray(components)) {
    errors.add(path, 'LIST_TYPE_CONVERT', 'Only iterables may be used in a ListType');
    return;
  }
  if (!v2 && components.length > MAX_ROWS)
    errors.add(path, 'BASE_TYPE_MAX_LENGTH', `Must be ${MAX_ROWS} or fewer in length.`);
  const customIds = new Set<string>();
  components.forEach((component: unknown, index) => {
    checkComponent(errors, [...path, index], component, 'message', v2, customIds);
  });
}

/**
 * One component where it sits. Without IS_COMPONENTS_V2 a message holds action rows only; a row holds up to
 * five buttons or one select menu. With it, layout components nest and are checked only for their buttons
 * and custom ids.
 */
function checkComponent(
  errors: ErrorList,
  path: Path,
  component: unknown,
  parent: 'message' | 'row' | 'layout',
  v2: boolean,
  customIds: Set<string>,
): void {
  if (!isRecord(component)) {
    errors.add(path, 'MODEL_TYPE_CONVERT', 'Only dictionaries may be used in a ModelType');
    return;
  }
  const type = component.type;
  const checkCustomId = () => {
    const id = component.custom_id;
    if (typeof id !== 'string' || id.length < 1 || id.length > MAX_CUSTOM_ID) {
      errors.add(
        [...path, 'custom_id'],
        'BASE_TYPE_BAD_LENGTH',
        `Must be between 1 and ${MAX_CUSTOM_ID} in length.`,
      );
    } else if (customIds.has(id)) {
      errors.add(
        [...path, 'custom_id'],
        'COMPONENT_CUSTOM_ID_DUPLICATED',
        'Component custom id cannot be duplicated',
      );
    } else {
      customIds.add(id);
    }
  };
  if (type === ComponentType.ActionRow) {
    if (parent === 'row')
      errors.add([...path, 'type'], 'COMPONENT_TYPE_INVALID', 'An action row cannot hold action rows');
    const children = component.components;
    if (!Array.isArray(children) || children.length < 1 || children.length > MAX_ROW_WIDTH) {
      errors.add(
        [...path, 'components'],
        'BASE_TYPE_BAD_LENGTH',
        `Must be between 1 and ${MAX_ROW_WIDTH} in length.`,
      );
      return;
    }
    if (
      children.length > 1 &&
      children.some((child: unknown) => isRecord(child) && SELECT_MENUS.has(child.type as number))
    ) {
      errors.add(
        [...path, 'components'],
        'COMPONENT_LAYOUT_WIDTH_EXCEEDED',
        'A select menu takes a whole row',
      );
    }
    children.forEach((child: unknown, index) => {
      checkComponent(errors, [...path, 'components', index], child, 'row', v2, customIds);
    });
    return;
  }
  if (parent === 'message' && !v2) {
    errors.add([...path, 'type'], 'BASE_TYPE_CHOICES', 'Value must be one of {1}.');
    return;
  }
  if (type === ComponentType.Button) {
    const style = component.style;
    if (
      typeof style !== 'number' ||
      !Number.isInteger(style) ||
      style < ButtonStyle.Primary ||
      style > ButtonStyle.Premium
    ) {
      errors.add([...path, 'style'], 'BASE_TYPE_CHOICES', 'Value must be one of {1, 2, 3, 4, 5, 6}.');
    }
    const label = component.label;
    if (label !== undefined && (typeof label !== 'string' || [...label].length > MAX_BUTTON_LABEL)) {
      errors.add(
        [...path, 'label'],
        'BASE_TYPE_MAX_LENGTH',
        `Must be ${MAX_BUTTON_LABEL} or fewer in length.`,
      );
    }
    if (style === ButtonStyle.Link) {
      if (typeof component.url !== 'string' || component.url === '') {
        errors.add([...path, 'url'], 'BUTTON_COMPONENT_URL_REQUIRED', 'A link button needs a url');
      }
      if (component.custom_id !== undefined) {
        errors.add(
          [...path, 'custom_id'],
          'BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED',
          'A link button cannot have a custom id',
        );
      }
    } else if (style === ButtonStyle.Premium) {
      if (typeof component.sku_id !== 'string')
        errors.add([...path, 'sku_id'], 'BASE_TYPE_REQUIRED', 'This field is required');
    } else {
      checkCustomId();
      if (component.url !== undefined) {
        errors.add([...path, 'url'], 'BUTTON_COMPONENT_URL_NOT_ALLOWED', 'Only a link button can have a url');
      }
      if (label === undefined && component.emoji === undefined) {
        errors.add(
          [...path, 'label'],
          'BUTTON_COMPONENT_LABEL_REQUIRED',
          'A button needs a label or an emoji',
        );
      }
    }
    return;
  }
  if (typeof type === 'number' && SELECT_MENUS.has(type)) {
    if (parent !== 'row')
      errors.add([...path, 'type'], 'COMPONENT_TYPE_INVALID', 'A select menu must be in an action row');
    checkCustomId();
    return;
  }
  if (parent === 'row') {
    errors.add([...path, 'type'], 'BASE_TYPE_CHOICES', 'Value must be one of {2, 3, 5, 6, 7, 8}.');
    return;
  }
  for (const [field, value] of Object.entries(component)) {
    if (field === 'components' && Array.isArray(value)) {
      value.forEach((child: unknown, index) => {
        checkComponent(errors, [...path, field, index], child, 'layout', v2, customIds);
      });
    } else if (field === 'accessory') {
      checkComponent(errors, [...path, field], value, 'layout', v2, customIds);
    }
  }
}

/** Every component of a message, nested ones included. */
function componentsOf(
  components: readonly unknown[],
): Array<{ type: number; custom_id?: string; disabled?: boolean }> {
  return components.flatMap((component) => {
    if (!isRecord(component)) return [];
    const children = Array.isArray(component.components) ? component.components : [];
    const accessory = component.accessory === undefined ? [] : [component.accessory];
    return [
      component as { type: number; custom_id?: string; disabled?: boolean },
      ...componentsOf([...children, ...accessory]),
    ];
  });
}

function embedsOf(embeds: readonly APIEmbed[]): APIEmbed[] {
  return embeds.map((embed): APIEmbed => ({ type: 'rich' as APIEmbed['type'], ...embed }));
}

// ---- requests and errors ------------------------------------------------------------------------------

/** A JSON body, or a multipart one: `payload_json` (or plain fields) and the `files[n]` parts. */
async function readBody(request: FastifyRequest): Promise<RequestBody | Refusal> {
  const contentType = request.headers['content-type'] ?? '';
  if (!Buffer.isBuffer(request.body) || !contentType.startsWith('multipart/form-data')) {
    return { json: request.body, uploads: [] };
  }
  let form: FormData;
  try {
    form = await new Request('http://simulator.invalid/', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: request.body,
    }).formData();
  } catch {
    return invalidBody([], 'CONTENT_TYPE_INVALID', 'Could not parse multipart/form-data');
  }
  const fields: Record<string, unknown> = {};
  let json: unknown = fields;
  const uploads: Upload[] = [];
  for (const [key, value] of form) {
    if (typeof value !== 'string') {
      uploads.push({
        index: /^files\[(\d+)\]$/.exec(key)?.[1] ?? key,
        filename: value.name,
        contentType: value.type || 'application/octet-stream',
        data: Buffer.from(await value.arrayBuffer()),
      });
    } else if (key === 'payload_json') {
      try {
        json = JSON.parse(value);
      } catch {
        return invalidBody(['payload_json'], 'JSON_TYPE_COERCE', 'Could not parse JSON.');
      }
    } else {
      fields[key] = value;
    }
  }
  return { json, uploads };
}

/** Collects form errors into Discord's nested `errors`. */
class ErrorList {
  private readonly errors: FormErrors = {};
  private empty = true;

  add(path: Path, code: string, message: string): void {
    let node = this.errors;
    for (const key of path) {
      const next = (node[String(key)] as FormErrors | undefined) ?? {};
      node[String(key)] = next;
      node = next;
    }
    node._errors = [...((node._errors as FormError[] | undefined) ?? []), { code, message }];
    this.empty = false;
  }

  refusal(): Refusal | null {
    if (this.empty) return null;
    return {
      status: 400,
      error: { message: 'Invalid Form Body', code: RestErrorCodes.InvalidFormBody, errors: this.errors },
    };
  }
}

function invalidBody(path: Path, code: string, message: string): Refusal {
  const errors = new ErrorList();
  errors.add(path, code, message);
  return errors.refusal() as Refusal;
}

const EMPTY_MESSAGE: Refusal = {
  status: 400,
  error: { message: 'Cannot send an empty message', code: RestErrorCodes.CannotSendEmptyMessage },
};

function notFound(code: number, message: string): Refusal {
  return { status: 404, error: { message, code } };
}

function refuse(reply: FastifyReply, refusal: Refusal): FastifyReply {
  return sendError(reply, refusal.status, refusal.error);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
