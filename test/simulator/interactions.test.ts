import { DiscordAPIError, type REST } from '@discordjs/rest';
import { type WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import {
  type APIApplicationCommand,
  type APIInteraction,
  type APIMessage,
  ApplicationCommandOptionType,
  ButtonStyle,
  ComponentType,
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  GatewayIntentBits,
  InteractionResponseType,
  MessageFlags,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
  type RESTPutAPIApplicationCommandsJSONBody,
  Routes,
} from 'discord-api-types/v10';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DiscordSimulator,
  type DiscordSimulatorOptions,
  type InteractInput,
  type SimInteraction,
  shardFor,
} from '../../src/simulator/index.js';
import { gatewayFor, restFor } from './support.js';

/** Interactions themselves need no intent; these bring the messages. */
const INTENTS = GatewayIntentBits.Guilds | GatewayIntentBits.GuildMessages | GatewayIntentBits.DirectMessages;
const HEARTBEAT_MS = 200;
/** What @everyone may do in a simulated guild. */
const EVERYONE = '2248473465835073';

const simulators: DiscordSimulator[] = [];
const managers: WebSocketManager[] = [];

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(managers.splice(0).map((manager) => manager.destroy()));
  await Promise.all(simulators.splice(0).map((simulator) => simulator.stop()));
});

const BASE_MS = 1_100_000_000_000n;
/** guildId(n) lives on shard n % 2 of 2. */
const guildId = (n: number): string => ((BASE_MS + BigInt(n)) << 22n).toString();
const userId = (n: number): string => (((BASE_MS + 500_000n + BigInt(n)) << 22n) | 1n).toString();
const GUILD = guildId(0);
const OWNER = userId(1);
const MEMBER = userId(2);

const until = (assertion: () => void, timeout = 5000) => vi.waitFor(assertion, { timeout, interval: 10 });

/** `/presently` as a bot registers it, and `/ping`, installable only in guilds, with Discord's defaults. */
const COMMANDS: RESTPutAPIApplicationCommandsJSONBody = [
  {
    name: 'presently',
    description: 'Your presence as an API',
    integration_types: [0, 1],
    contexts: [0, 1, 2],
    options: [
      { type: ApplicationCommandOptionType.Subcommand, name: 'key', description: 'Your API key' },
      {
        type: ApplicationCommandOptionType.SubcommandGroup,
        name: 'kv',
        description: 'Your KV',
        options: [
          {
            type: ApplicationCommandOptionType.Subcommand,
            name: 'set',
            description: 'Sets a value',
            options: [
              {
                type: ApplicationCommandOptionType.String,
                name: 'key',
                description: 'The key',
                required: true,
                max_length: 10,
              },
              {
                type: ApplicationCommandOptionType.String,
                name: 'value',
                description: 'The value',
                required: true,
              },
              { type: ApplicationCommandOptionType.Boolean, name: 'public', description: 'Shown to all' },
            ],
          },
        ],
      },
      {
        type: ApplicationCommandOptionType.Subcommand,
        name: 'card',
        description: 'Your status card',
        options: [
          {
            type: ApplicationCommandOptionType.String,
            name: 'theme',
            description: 'Its colours',
            choices: [
              { name: 'Dark', value: 'dark' },
              { name: 'Light', value: 'light' },
            ],
          },
          {
            type: ApplicationCommandOptionType.Integer,
            name: 'size',
            description: 'Its width',
            min_value: 16,
            max_value: 512,
          },
          { type: ApplicationCommandOptionType.Number, name: 'scale', description: 'Its scale' },
        ],
      },
    ],
  },
  { name: 'ping', description: 'Answers pong' },
];

interface Bot {
  rest: REST;
  events: Array<{ shardId: number; payload: GatewayDispatchPayload }>;
  of<T>(event: GatewayDispatchEvents, shardId?: number): T[];
}

async function startSimulator(options: DiscordSimulatorOptions = {}): Promise<DiscordSimulator> {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: HEARTBEAT_MS, ...options });
  simulators.push(simulator);
  await simulator.start();
  simulator.createGuild({
    id: GUILD,
    name: 'Home',
    members: [{ user: { id: OWNER, username: 'owner' } }, { user: { id: MEMBER, username: 'member' } }],
  });
  return simulator;
}

/** The real gateway and REST clients, connected, with the commands registered. */
async function connect(simulator: DiscordSimulator): Promise<Bot> {
  const rest = restFor(simulator);
  const manager = gatewayFor(simulator, rest, { intents: INTENTS });
  managers.push(manager);
  const bot: Bot = {
    rest,
    events: [],
    of: <T>(event: GatewayDispatchEvents, shardId?: number) =>
      bot.events
        .filter((entry) => entry.payload.t === event && (shardId === undefined || entry.shardId === shardId))
        .map((entry) => entry.payload.d as T),
  };
  manager.on(WebSocketShardEvents.Dispatch, (payload, shardId) => bot.events.push({ shardId, payload }));
  await rest.put(Routes.applicationCommands(simulator.botUser.id), { body: COMMANDS });
  await manager.connect();
  return bot;
}

/** The INTERACTION_CREATE the bot got for an interaction. */
async function received(bot: Bot, interaction: SimInteraction, shardId?: number): Promise<APIInteraction> {
  let found: APIInteraction | undefined;
  await until(() => {
    found = bot
      .of<APIInteraction>(GatewayDispatchEvents.InteractionCreate, shardId)
      .find((entry) => entry.id === interaction.id);
    expect(found).toBeDefined();
  });
  return found as APIInteraction;
}

/** `/presently key`, run by a member in the guild unless told. */
function runKey(
  simulator: DiscordSimulator,
  where: InteractInput['where'] = { guildId: GUILD },
  user = MEMBER,
): SimInteraction {
  return simulator.interact({ user, where, command: 'presently', subcommand: ['key'] });
}

/** runKey, once the bot has received it. */
async function receivedKey(
  simulator: DiscordSimulator,
  bot: Bot,
  where?: InteractInput['where'],
): Promise<SimInteraction> {
  const interaction = runKey(simulator, where);
  await received(bot, interaction);
  return interaction;
}

function callback(
  bot: Bot,
  interaction: SimInteraction,
  body: unknown,
  options: { query?: URLSearchParams } = {},
) {
  return bot.rest.post(Routes.interactionCallback(interaction.id, interaction.token), {
    body,
    auth: false,
    ...options,
  });
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => error,
  );

/** Where Discord's nested `errors` put each error: "0.options.1.name", or "" for the body itself. */
function errorPaths(error: unknown): string[] {
  if (!(error instanceof DiscordAPIError)) return [`not a DiscordAPIError: ${String(error)}`];
  const paths: string[] = [];
  const walk = (node: unknown, path: string[]) => {
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '_errors') paths.push(path.join('.'));
      else walk(value, [...path, key]);
    }
  };
  walk((error.rawError as { errors?: unknown }).errors, []);
  return paths;
}

describe('application commands', () => {
  it('overwrites in bulk, keeping each command id, and its version until the command changes', async () => {
    const simulator = await startSimulator();
    const rest = restFor(simulator);
    const appId = simulator.botUser.id;

    const first = (await rest.put(Routes.applicationCommands(appId), {
      body: COMMANDS,
    })) as APIApplicationCommand[];
    expect(first).toMatchObject([
      {
        application_id: appId,
        name: 'presently',
        type: 1,
        integration_types: [0, 1],
        contexts: [0, 1, 2],
        default_member_permissions: null,
        nsfw: false,
        dm_permission: true,
      },
      {
        name: 'ping',
        description: 'Answers pong',
        type: 1,
        integration_types: [0],
        contexts: null,
        default_member_permissions: null,
      },
    ]);
    for (const command of first) {
      expect(command.id).toMatch(/^\d{17,20}$/);
      expect(command.version).toMatch(/^\d{17,20}$/);
      expect(command.guild_id).toBeUndefined();
    }
    expect(first[0]?.options).toEqual(
      (COMMANDS[0] as RESTPostAPIChatInputApplicationCommandsJSONBody).options,
    );
    expect(await rest.get(Routes.applicationCommands(appId))).toEqual(first);
    expect(simulator.registeredCommands()).toEqual(first);

    expect(await rest.put(Routes.applicationCommands(appId), { body: COMMANDS })).toEqual(first);

    const changed = [COMMANDS[0], { ...COMMANDS[1], description: 'Answers pong, quickly' }];
    const second = (await rest.put(Routes.applicationCommands(appId), {
      body: changed,
    })) as APIApplicationCommand[];
    expect(second.map((command) => command.id)).toEqual(first.map((command) => command.id));
    expect(second[0]?.version).toBe(first[0]?.version);
    expect(second[1]?.version).not.toBe(first[1]?.version);

    // Dropped, then registered again: a new command.
    await rest.put(Routes.applicationCommands(appId), { body: [COMMANDS[0]] });
    const third = (await rest.put(Routes.applicationCommands(appId), {
      body: changed,
    })) as APIApplicationCommand[];
    expect(third[1]?.id).not.toBe(first[1]?.id);

    expect(simulator.requestCount('PUT /applications/:id/commands')).toBe(5);
    expect(simulator.requestCount('GET /applications/:id/commands')).toBe(1);
  });

  it('keeps guild commands apart, and refuses unknown guilds, other apps and requests without the bot token', async () => {
    const simulator = await startSimulator();
    const rest = restFor(simulator);
    const appId = simulator.botUser.id;

    const guild = (await rest.put(Routes.applicationGuildCommands(appId, GUILD), {
      body: [COMMANDS[1]],
    })) as APIApplicationCommand[];
    expect(guild).toMatchObject([{ name: 'ping', guild_id: GUILD, application_id: appId }]);
    expect(simulator.registeredCommands(GUILD)).toEqual(guild);
    expect(simulator.registeredCommands()).toEqual([]);
    expect(await rest.get(Routes.applicationGuildCommands(appId, GUILD))).toEqual(guild);
    expect(simulator.requestCount('PUT /applications/:id/guilds/:guildId/commands')).toBe(1);

    expect(await failure(rest.get(Routes.applicationGuildCommands(appId, guildId(9))))).toMatchObject({
      status: 404,
      code: 10004,
    });
    expect(
      await failure(rest.put(Routes.applicationCommands('1234567890123456780'), { body: [] })),
    ).toMatchObject({
      status: 403,
      code: 50001,
      message: 'Missing Access',
    });
    const anonymous = await fetch(`${simulator.apiUrl}/v10/applications/${appId}/commands`);
    expect(anonymous.status).toBe(401);
  });

  const chat = (extra: Record<string, unknown>) => ({ name: 'cmd', description: 'A command', ...extra });
  const option = (extra: Record<string, unknown>) => ({
    type: ApplicationCommandOptionType.String,
    name: 'opt',
    description: 'An option',
    ...extra,
  });
  const sub = (name: string, options: unknown[] = []) => ({
    type: ApplicationCommandOptionType.Subcommand,
    name,
    description: 'A subcommand',
    options,
  });
  it.each([
    ['a body that is not a list', { name: 'cmd' }, ''],
    ['more than 100 slash commands', Array.from({ length: 101 }, (_, n) => chat({ name: `c${n}` })), ''],
    ['an uppercase name', [chat({ name: 'Presently' })], '0.name'],
    ['a name with a space', [chat({ name: 'two words' })], '0.name'],
    ['a name of 33 characters', [chat({ name: 'a'.repeat(33) })], '0.name'],
    ['an empty description', [chat({ description: '' })], '0.description'],
    ['a description of 101 characters', [chat({ description: 'd'.repeat(101) })], '0.description'],
    ['two commands of one name', [chat({}), chat({})], '1.name'],
    [
      '26 options',
      [chat({ options: Array.from({ length: 26 }, (_, n) => option({ name: `o${n}` })) })],
      '0.options',
    ],
    ['an uppercase option name', [chat({ options: [option({ name: 'Opt' })] })], '0.options.0.name'],
    [
      'a group holding a basic option',
      [chat({ options: [{ type: 2, name: 'g', description: 'A group', options: [option({})] }] })],
      '0.options.0.options.0.type',
    ],
    [
      'a subcommand holding a subcommand',
      [chat({ options: [sub('s', [sub('t')])] })],
      '0.options.0.options.0.type',
    ],
    ['subcommands beside basic options', [chat({ options: [sub('s'), option({})] })], '0.options'],
    [
      'a required option after an optional one',
      [chat({ options: [option({ name: 'a' }), option({ name: 'b', required: true })] })],
      '0.options.1.required',
    ],
    [
      '26 choices',
      [
        chat({
          options: [
            option({ choices: Array.from({ length: 26 }, (_, n) => ({ name: `c${n}`, value: `v${n}` })) }),
          ],
        }),
      ],
      '0.options.0.choices',
    ],
    [
      'an integer choice of a string option',
      [chat({ options: [option({ choices: [{ name: 'one', value: 1 }] })] })],
      '0.options.0.choices.0.value',
    ],
    ['integration type 2', [chat({ integration_types: [0, 2] })], '0.integration_types.1'],
    ['context 3', [chat({ contexts: [3] })], '0.contexts.0'],
  ])('refuses %s with 50035, naming the field', async (_what, body, path) => {
    const simulator = await startSimulator();
    const error = await failure(
      restFor(simulator).put(Routes.applicationCommands(simulator.botUser.id), { body }),
    );
    expect(error).toMatchObject({ status: 400, code: 50035, rawError: { message: 'Invalid Form Body' } });
    expect(errorPaths(error)).toContain(path);
    expect(simulator.registeredCommands()).toEqual([]);
  });
});

describe('interactions', () => {
  it('dispatches a guild command as Discord does, and keeps an ephemeral reply out of the channel', async () => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const [command] = simulator.registeredCommands();

    const interaction = simulator.interact({
      user: MEMBER,
      where: { guildId: GUILD },
      command: 'presently',
      subcommand: ['kv', 'set'],
      options: { key: 'mood', value: 'sleepy' },
    });
    const payload = await received(bot, interaction);
    expect(payload).toEqual(interaction.payload);
    expect(payload).toMatchObject({
      id: interaction.id,
      application_id: simulator.botUser.id,
      type: 2,
      token: interaction.token,
      version: 1,
      guild_id: GUILD,
      guild: { id: GUILD, locale: 'en-US', features: [] },
      member: { user: { id: MEMBER, username: 'member' }, roles: [], permissions: EVERYONE, flags: 0 },
      channel: { type: 0, guild_id: GUILD },
      app_permissions: EVERYONE,
      locale: 'en-US',
      entitlements: [],
      authorizing_integration_owners: { '0': GUILD, '1': MEMBER },
      context: 0,
      attachment_size_limit: 10 * 1024 * 1024,
      data: {
        id: command?.id,
        name: 'presently',
        type: 1,
        options: [
          {
            type: 2,
            name: 'kv',
            options: [
              {
                type: 1,
                name: 'set',
                options: [
                  { type: 3, name: 'key', value: 'mood' },
                  { type: 3, name: 'value', value: 'sleepy' },
                ],
              },
            ],
          },
        ],
      },
    });
    expect(payload.user).toBeUndefined();
    expect(payload.channel_id).toBe(payload.channel?.id);
    expect(interaction.token.length).toBeGreaterThan(60);

    const body = {
      type: InteractionResponseType.ChannelMessageWithSource,
      data: { content: 'Saved', flags: 64 },
    };
    const result = await callback(bot, interaction, body, {
      query: new URLSearchParams({ with_response: 'true' }),
    });
    expect(result).toMatchObject({
      interaction: {
        id: interaction.id,
        type: 2,
        response_message_loading: false,
        response_message_ephemeral: true,
      },
      resource: { type: 4, message: { content: 'Saved', flags: 64 } },
    });
    expect(await interaction.response()).toEqual(body);
    const [reply] = interaction.messages();
    expect(reply).toMatchObject({
      content: 'Saved',
      flags: MessageFlags.Ephemeral,
      type: 20,
      channel_id: payload.channel_id,
      author: { id: simulator.botUser.id },
      webhook_id: simulator.botUser.id,
      interaction_metadata: { id: interaction.id, type: 2, user: { id: MEMBER } },
      components: [],
      embeds: [],
      attachments: [],
    });
    expect((result as { interaction: { response_message_id: string } }).interaction.response_message_id).toBe(
      reply?.id,
    );
    expect(simulator.sentMessages(payload.channel_id)).toEqual([]);
    expect(simulator.interactionMessages()).toEqual([reply]);

    // A public follow-up is the first MESSAGE_CREATE: the ephemeral reply never went out.
    await bot.rest.post(Routes.webhook(simulator.botUser.id, interaction.token), {
      body: { content: 'For everyone' },
      auth: false,
    });
    await until(() => expect(bot.of(GatewayDispatchEvents.MessageCreate)).toHaveLength(1));
    expect(bot.of<APIMessage>(GatewayDispatchEvents.MessageCreate)).toMatchObject([
      { content: 'For everyone', guild_id: GUILD, interaction_metadata: { id: interaction.id } },
    ]);
    expect(simulator.requestCount('POST /interactions/:id/:token/callback')).toBe(1);
  });

  it('makes a public reply a channel message: listed, dispatched and waited for like the bot’s others', async () => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const interaction = runKey(simulator, 'dm', OWNER);
    const payload = await received(bot, interaction);
    const waiting = simulator.waitForMessage((message) => message.content === 'Hello');

    await callback(bot, interaction, { type: 4, data: { content: 'Hello' } });
    const posted = await waiting;
    expect(posted).toMatchObject({ channel_id: simulator.dmChannelFor(OWNER), flags: 0, type: 20 });
    expect(simulator.sentMessages(simulator.dmChannelFor(OWNER))).toEqual([posted]);
    expect(interaction.messages()).toEqual([posted]);
    await until(() =>
      expect(bot.of<APIMessage>(GatewayDispatchEvents.MessageCreate)).toMatchObject([
        { id: posted.id, content: 'Hello', interaction_metadata: { id: payload.id } },
      ]),
    );
  });

  it('runs in the bot DM, a private channel and a guild the bot is not in, as the command’s installs allow', async () => {
    const simulator = await startSimulator({ shardCount: 2 });
    const bot = await connect(simulator);
    const foreign = guildId(1);
    expect(shardFor(foreign, 2)).toBe(1);

    const dm = runKey(simulator, 'dm');
    expect(await received(bot, dm, 0)).toMatchObject({
      user: { id: MEMBER },
      channel: { id: simulator.dmChannelFor(MEMBER), type: 1 },
      context: 1,
      authorizing_integration_owners: { '0': '0', '1': MEMBER },
    });
    expect(dm.payload.member).toBeUndefined();
    expect(dm.payload.guild_id).toBeUndefined();

    const group = runKey(simulator, 'private');
    const inGroup = await received(bot, group, 0);
    expect(inGroup).toMatchObject({ user: { id: MEMBER }, channel: { type: 3 }, context: 2 });
    expect(inGroup.authorizing_integration_owners).toEqual({ '1': MEMBER });
    // The same private channel next time.
    const again = runKey(simulator, 'private');
    expect(again.payload.channel?.id).toBe(inGroup.channel?.id);

    const away = runKey(simulator, { guildId: foreign });
    const inForeign = await received(bot, away, 1);
    expect(inForeign).toMatchObject({
      guild_id: foreign,
      member: { user: { id: MEMBER } },
      context: 0,
      channel: { type: 0, guild_id: foreign },
    });
    expect(inForeign.authorizing_integration_owners).toEqual({ '1': MEMBER });

    // /ping is installed to guilds only: the bot's guild and its DM, nowhere else.
    expect(
      simulator.interact({ user: MEMBER, where: { guildId: GUILD }, command: 'ping' }).payload,
    ).toMatchObject({
      authorizing_integration_owners: { '0': GUILD },
    });
    expect(simulator.interact({ user: MEMBER, where: 'dm', command: 'ping' }).payload).toMatchObject({
      authorizing_integration_owners: { '0': '0' },
    });
    expect(() => simulator.interact({ user: MEMBER, where: 'private', command: 'ping' })).toThrow(
      /integration type 1 \(user install\)/,
    );
    expect(() => simulator.interact({ user: MEMBER, where: { guildId: foreign }, command: 'ping' })).toThrow(
      /where the bot is not/,
    );

    // A public reply in a guild the bot is not in is the bot's message there, but no event reaches it.
    await callback(bot, away, { type: 4, data: { content: 'Hi from afar' } });
    expect(simulator.sentMessages(inForeign.channel_id)).toMatchObject([{ content: 'Hi from afar' }]);
    await callback(bot, dm, { type: 4, data: { content: 'Hi in the DM' } });
    await until(() => expect(bot.of(GatewayDispatchEvents.MessageCreate)).toHaveLength(1));
    expect(bot.of<APIMessage>(GatewayDispatchEvents.MessageCreate)).toMatchObject([
      { content: 'Hi in the DM' },
    ]);
  });

  it.each([
    ['an unregistered command', { command: 'nope' }, /no command \/nope is registered/],
    ['no subcommand', { subcommand: [] }, /needs a subcommand \(one of key, kv, card\)/],
    ['an unknown subcommand', { subcommand: ['kv', 'drop'] }, /kv needs one subcommand \(one of set\)/],
    ['a group alone', { subcommand: ['kv'] }, /kv needs one subcommand/],
    [
      'a missing required option',
      { subcommand: ['kv', 'set'], options: { value: 'x' } },
      /option key is required/,
    ],
    ['an unknown option', { subcommand: ['card'], options: { colour: 'red' } }, /has no option colour/],
    ['a string for an integer', { subcommand: ['card'], options: { size: '64' } }, /size takes an integer/],
    ['a fraction for an integer', { subcommand: ['card'], options: { size: 1.5 } }, /size takes an integer/],
    ['a string for a number', { subcommand: ['card'], options: { scale: 'big' } }, /scale takes a number/],
    [
      'a string for a boolean',
      { subcommand: ['kv', 'set'], options: { key: 'k', value: 'v', public: 'yes' } },
      /public takes true or false/,
    ],
    [
      'a value not among the choices',
      { subcommand: ['card'], options: { theme: 'blue' } },
      /must be one of "dark", "light"/,
    ],
    ['a value below min_value', { subcommand: ['card'], options: { size: 8 } }, /size is below 16/],
    [
      'a string over max_length',
      { subcommand: ['kv', 'set'], options: { key: 'k'.repeat(11), value: 'v' } },
      /key is longer than 10/,
    ],
    ['a user who is not a member', { user: userId(7) }, /is not a member of guild/],
    ['a guild id that is no snowflake', { where: { guildId: 'home' } }, /home is not a guild id/],
  ])('refuses to send %s, as Discord’s client would', async (_what, change, message) => {
    const simulator = await startSimulator();
    await restFor(simulator).put(Routes.applicationCommands(simulator.botUser.id), { body: COMMANDS });
    const input = {
      user: MEMBER,
      where: { guildId: GUILD },
      command: 'presently',
      subcommand: ['key'],
      ...change,
    } as Parameters<DiscordSimulator['interact']>[0];
    expect(() => simulator.interact(input)).toThrow(message);
  });

  it('refuses a command outside its contexts, and one that needs permissions the member lacks', async () => {
    const simulator = await startSimulator();
    const rest = restFor(simulator);
    await rest.put(Routes.applicationCommands(simulator.botUser.id), {
      body: [
        { name: 'here', description: 'Guilds only', contexts: [0] },
        { name: 'admin', description: 'For admins', default_member_permissions: '8' },
      ],
    });
    expect(() => simulator.interact({ user: MEMBER, where: 'dm', command: 'here' })).toThrow(
      /cannot be used in the bot's DM/,
    );
    expect(() => simulator.interact({ user: MEMBER, where: { guildId: GUILD }, command: 'admin' })).toThrow(
      /needs permissions 8/,
    );
    // The owner has every permission.
    expect(
      simulator.interact({ user: OWNER, where: { guildId: GUILD }, command: 'admin' }).payload,
    ).toMatchObject({
      member: { permissions: expect.stringMatching(/^\d+$/) },
    });
  });

  it('defers, fills the thinking message in with PATCH @original, and posts, edits and deletes follow-ups', async () => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const appId = simulator.botUser.id;
    const interaction = await receivedKey(simulator, bot);

    await callback(bot, interaction, { type: 5, data: { flags: 64 } });
    expect(interaction.messages()).toMatchObject([
      { content: '', flags: MessageFlags.Ephemeral | MessageFlags.Loading },
    ]);
    const filled = interaction.waitForMessage((message) => message.content === 'Your key: prs_x');

    const edited = (await bot.rest.patch(Routes.webhookMessage(appId, interaction.token, '@original'), {
      body: { content: 'Your key: prs_x' },
      auth: false,
    })) as APIMessage;
    expect(edited).toMatchObject({
      content: 'Your key: prs_x',
      flags: MessageFlags.Ephemeral,
      edited_timestamp: null,
    });
    expect(await filled).toEqual(edited);
    expect(
      await bot.rest.get(Routes.webhookMessage(appId, interaction.token, '@original'), { auth: false }),
    ).toEqual(edited);

    const followup = (await bot.rest.post(Routes.webhook(appId, interaction.token), {
      body: { content: 'Keep it secret', flags: 64 },
      auth: false,
    })) as APIMessage;
    expect(followup).toMatchObject({
      flags: MessageFlags.Ephemeral,
      interaction_metadata: { id: interaction.id, original_response_message_id: edited.id },
    });
    await bot.rest.patch(Routes.webhookMessage(appId, interaction.token, followup.id), {
      body: { content: 'Keep it very secret' },
      auth: false,
    });
    expect(interaction.messages().map((message) => [message.content, message.flags])).toEqual([
      ['Your key: prs_x', 64],
      ['Keep it very secret', 64],
    ]);
    expect(interaction.messages()[1]?.edited_timestamp).not.toBeNull();

    await bot.rest.delete(Routes.webhookMessage(appId, interaction.token, followup.id), { auth: false });
    expect(interaction.messages().map((message) => message.content)).toEqual(['Your key: prs_x']);
    expect(simulator.interactionMessages().every((message) => message.flags === MessageFlags.Ephemeral)).toBe(
      true,
    );
    expect(simulator.sentMessages()).toEqual([]);
    expect(simulator.requestCount('PATCH /webhooks/:id/:token/messages/:messageId')).toBe(2);
  });

  it('lets the first follow-up after a public deferral fill it in, as Discord still does', async () => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const interaction = await receivedKey(simulator, bot);
    await callback(bot, interaction, { type: 5 });
    await until(() => expect(bot.of(GatewayDispatchEvents.MessageCreate)).toHaveLength(1));

    const filled = (await bot.rest.post(Routes.webhook(simulator.botUser.id, interaction.token), {
      body: { content: 'Done', flags: 64 },
      auth: false,
    })) as APIMessage;
    // The deferral was public: the message stays so.
    expect(filled).toMatchObject({ content: 'Done', flags: 0 });
    expect(interaction.messages()).toEqual([filled]);
    await until(() =>
      expect(bot.of<APIMessage>(GatewayDispatchEvents.MessageUpdate)).toMatchObject([
        { id: filled.id, content: 'Done' },
      ]),
    );
    expect(bot.of<APIMessage>(GatewayDispatchEvents.MessageCreate)).toMatchObject([
      { id: filled.id, content: '', flags: MessageFlags.Loading },
    ]);
    expect(simulator.sentMessages()).toMatchObject([{ id: filled.id, content: 'Done' }]);
  });

  it('refuses a second callback (40060), and webhooks before the callback, for another app or after 15 minutes (10015)', async () => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const appId = simulator.botUser.id;
    const interaction = await receivedKey(simulator, bot);

    const early = await failure(
      bot.rest.post(Routes.webhook(appId, interaction.token), { body: { content: 'too soon' }, auth: false }),
    );
    expect(early).toMatchObject({ status: 404, code: 10015, message: 'Unknown Webhook' });
    expect(
      await failure(callback(bot, { id: interaction.id, token: 'forged' } as SimInteraction, { type: 5 })),
    ).toMatchObject({ status: 404, code: 10062, message: 'Unknown interaction' });

    await callback(bot, interaction, { type: 5 });
    expect(await failure(callback(bot, interaction, { type: 4, data: { content: 'again' } }))).toMatchObject({
      status: 400,
      code: 40060,
      message: 'Interaction has already been acknowledged.',
    });
    expect(
      await failure(
        bot.rest.patch(Routes.webhookMessage('1234567890123456780', interaction.token, '@original'), {
          body: { content: 'x' },
          auth: false,
        }),
      ),
    ).toMatchObject({ status: 404, code: 10015 });

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    vi.setSystemTime(Date.now() + 15 * 60_000);
    expect(
      await failure(
        bot.rest.patch(Routes.webhookMessage(appId, interaction.token, '@original'), {
          body: { content: 'too late' },
          auth: false,
        }),
      ),
    ).toMatchObject({ status: 404, code: 10015 });
  });

  it('closes the response window: response() rejects, and a late callback gets 10062', async () => {
    const simulator = await startSimulator({ interactionResponseMs: 50 });
    const bot = await connect(simulator);
    const interaction = await receivedKey(simulator, bot, 'dm');
    await expect(interaction.response()).rejects.toThrow(/did not respond to interaction \d+ within 50 ms/);

    expect(await failure(callback(bot, interaction, { type: 4, data: { content: 'late' } }))).toMatchObject({
      status: 404,
      code: 10062,
    });
    expect(interaction.messages()).toEqual([]);
  });

  it('dispatches a button press as a component interaction; UPDATE_MESSAGE replaces the message, ephemeral as it was', async () => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const appId = simulator.botUser.id;
    const interaction = await receivedKey(simulator, bot);
    const components = [
      {
        type: ComponentType.ActionRow,
        components: [
          { type: ComponentType.Button, style: ButtonStyle.Danger, label: 'Rotate', custom_id: 'rotate' },
          { type: ComponentType.Button, style: ButtonStyle.Secondary, label: 'Later', custom_id: 'later' },
          {
            type: ComponentType.Button,
            style: ButtonStyle.Link,
            label: 'Docs',
            url: 'https://example.com/docs',
          },
        ],
      },
    ];
    await callback(bot, interaction, {
      type: 4,
      data: { content: 'Your key: prs_a', flags: 64, components },
    });
    const [original] = interaction.messages();
    expect(() => interaction.click('nope')).toThrow(/no button with custom_id nope/);

    // A command is not a component interaction: no UPDATE_MESSAGE for it.
    const other = runKey(simulator);
    const refused = await failure(callback(bot, other, { type: 7, data: { content: 'x' } }));
    expect(refused).toMatchObject({ status: 400, code: 50035 });
    expect(errorPaths(refused)).toEqual(['type']);

    const press = interaction.click('rotate');
    const pressed = await received(bot, press);
    expect(pressed).toMatchObject({
      type: 3,
      data: { custom_id: 'rotate', component_type: 2 },
      message: { id: original?.id, flags: 64, components },
      guild_id: GUILD,
      member: { user: { id: MEMBER } },
      authorizing_integration_owners: { '0': GUILD, '1': MEMBER },
    });
    expect(press.token).not.toBe(interaction.token);

    const result = await callback(
      bot,
      press,
      { type: 7, data: { content: 'Rotated: prs_b', components: [] } },
      { query: new URLSearchParams({ with_response: 'true' }) },
    );
    expect(result).toMatchObject({
      resource: { type: 7, message: { id: original?.id, content: 'Rotated: prs_b' } },
    });
    expect(await press.response()).toMatchObject({ type: 7 });
    expect(interaction.messages()).toMatchObject([
      {
        id: original?.id,
        content: 'Rotated: prs_b',
        flags: 64,
        components: [],
        interaction_metadata: { id: interaction.id },
      },
    ]);
    expect(press.messages()).toEqual(interaction.messages());
    expect(() => interaction.click('rotate')).toThrow(/no button/);

    // DEFERRED_UPDATE_MESSAGE, then the click's own token edits the message.
    const second = await receivedKey(simulator, bot);
    await callback(bot, second, { type: 4, data: { content: 'Sure?', flags: 64, components } });
    const later = second.click('later');
    await received(bot, later);
    await callback(bot, later, { type: 6 });
    await bot.rest.patch(Routes.webhookMessage(appId, later.token, '@original'), {
      body: { content: 'Not now', components: [] },
      auth: false,
    });
    expect(second.messages()).toMatchObject([{ content: 'Not now', flags: 64, components: [] }]);
    expect(simulator.sentMessages()).toEqual([]);
  });

  it('takes files in multipart callbacks and edits, and hands their bytes back with file(name)', async () => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const appId = simulator.botUser.id;
    const bytes = Buffer.from(JSON.stringify({ kv: { mood: 'sleepy' } }));

    const interaction = await receivedKey(simulator, bot, 'dm');
    await bot.rest.post(Routes.interactionCallback(interaction.id, interaction.token), {
      body: {
        type: 4,
        data: { content: 'Your export', flags: 64, attachments: [{ id: 0, filename: 'export.json' }] },
      },
      files: [{ name: 'export.json', data: bytes, contentType: 'application/json' }],
      auth: false,
    });
    expect(interaction.file('export.json')?.equals(bytes)).toBe(true);
    expect(interaction.file('other.json')).toBeUndefined();
    expect(interaction.messages()[0]?.attachments).toMatchObject([
      { filename: 'export.json', size: bytes.length, content_type: 'application/json', ephemeral: true },
    ]);

    // The way a deferred answer carries a file: PATCH @original, multipart.
    const deferred = await receivedKey(simulator, bot, 'dm');
    await callback(bot, deferred, { type: 5, data: { flags: 64 } });
    const card = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    await bot.rest.patch(Routes.webhookMessage(appId, deferred.token, '@original'), {
      body: { content: 'Your card', attachments: [{ id: 0, filename: 'card.png' }] },
      files: [{ name: 'card.png', data: card }],
      auth: false,
    });
    expect(deferred.file('card.png')?.equals(card)).toBe(true);
    expect(deferred.messages()).toMatchObject([
      { content: 'Your card', flags: 64, attachments: [{ filename: 'card.png' }] },
    ]);

    const tooLarge = await failure(
      bot.rest.post(Routes.webhook(appId, deferred.token), {
        body: { content: 'huge', flags: 64 },
        files: [{ name: 'huge.bin', data: Buffer.alloc(10 * 1024 * 1024 + 1) }],
        auth: false,
      }),
    );
    expect(tooLarge).toMatchObject({ status: 413, code: 40005 });
  });

  it.each([
    ['PONG', { type: 1 }, 50035, 'type'],
    ['an autocomplete result', { type: 8, data: { choices: [] } }, 50035, 'type'],
    ['2,001 characters', { type: 4, data: { content: 'x'.repeat(2001) } }, 50035, 'data.content'],
    ['no data', { type: 4 }, 50006, null],
    ['nothing to show', { type: 4, data: { content: '' } }, 50006, null],
    ['a flag a reply cannot carry', { type: 4, data: { content: 'x', flags: 2 } }, 50035, 'data.flags'],
    [
      'a button outside a row',
      { type: 4, data: { components: [{ type: 2, style: 1, label: 'a', custom_id: 'a' }] } },
      50035,
      'data.components.0.type',
    ],
    [
      'six buttons in a row',
      {
        type: 4,
        data: {
          components: [
            {
              type: 1,
              components: Array.from({ length: 6 }, (_, n) => ({
                type: 2,
                style: 1,
                label: 'b',
                custom_id: `b${n}`,
              })),
            },
          ],
        },
      },
      50035,
      'data.components.0.components',
    ],
    [
      'a label of 81 characters',
      {
        type: 4,
        data: {
          components: [
            { type: 1, components: [{ type: 2, style: 1, label: 'l'.repeat(81), custom_id: 'a' }] },
          ],
        },
      },
      50035,
      'data.components.0.components.0.label',
    ],
    [
      'a custom_id of 101 characters',
      {
        type: 4,
        data: {
          components: [
            { type: 1, components: [{ type: 2, style: 1, label: 'a', custom_id: 'c'.repeat(101) }] },
          ],
        },
      },
      50035,
      'data.components.0.components.0.custom_id',
    ],
    [
      'one custom_id twice',
      {
        type: 4,
        data: {
          components: [
            { type: 1, components: [{ type: 2, style: 1, label: 'a', custom_id: 'same' }] },
            { type: 1, components: [{ type: 2, style: 2, label: 'b', custom_id: 'same' }] },
          ],
        },
      },
      50035,
      'data.components.1.components.0.custom_id',
    ],
    [
      'a link button with a custom_id',
      {
        type: 4,
        data: {
          components: [
            { type: 1, components: [{ type: 2, style: 5, label: 'a', url: 'https://x.y', custom_id: 'a' }] },
          ],
        },
      },
      50035,
      'data.components.0.components.0.custom_id',
    ],
    [
      'a link button without a url',
      { type: 4, data: { components: [{ type: 1, components: [{ type: 2, style: 5, label: 'a' }] }] } },
      50035,
      'data.components.0.components.0.url',
    ],
    [
      'a button style 7',
      {
        type: 4,
        data: { components: [{ type: 1, components: [{ type: 2, style: 7, label: 'a', custom_id: 'a' }] }] },
      },
      50035,
      'data.components.0.components.0.style',
    ],
  ])('refuses a callback with %s, leaving the interaction to answer', async (_what, body, code, path) => {
    const simulator = await startSimulator();
    const bot = await connect(simulator);
    const interaction = await receivedKey(simulator, bot);

    const error = await failure(callback(bot, interaction, body));
    expect(error).toMatchObject({ status: 400, code });
    if (path !== null) expect(errorPaths(error)).toContain(path);
    await callback(bot, interaction, { type: 4, data: { content: 'Fine now', flags: 64 } });
    expect(interaction.messages()).toMatchObject([{ content: 'Fine now' }]);
  });
});
