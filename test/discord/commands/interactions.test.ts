import {
  type APIInteraction,
  type APIInteractionResponse,
  ApplicationCommandOptionType,
  ApplicationCommandType,
  ComponentType,
  InteractionContextType,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
  Routes,
} from 'discord-api-types/v10';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Bot } from '../../../src/discord/commands/index.js';
import type { Messenger } from '../../../src/discord/messenger.js';
import type { ApiKeyService } from '../../../src/keys/service.js';
import type { KvService } from '../../../src/kv/service.js';
import { withDefaults } from '../../../src/presence/privacy.js';

/**
 * The interaction transport on its own, with Discord's REST and the callback faked: what it does with
 * interactions Discord would not send from our own messages, and when Discord did not take a callback.
 */

const USER = '80351110224678912';
const APP = '1204567890123456789';
/** An id made now, as Discord makes an interaction's. */
const freshId = () => String((BigInt(Date.now()) - 1_420_070_400_000n) << 22n);

function setup(
  options: { webhooks?: { list(): Promise<unknown[]> }; serves?: (userId: string) => boolean } = {},
) {
  const rest: Array<{ method: string; route: string; body: unknown }> = [];
  const handOvers: string[] = [];
  const messenger = {
    rest: {
      patch: async (route: string, request: { body: unknown }) =>
        void rest.push({ method: 'PATCH', route, body: request.body }),
      post: async (route: string, request: { body: unknown }) =>
        void rest.push({ method: 'POST', route, body: request.body }),
    },
  } as unknown as Messenger;
  const bot = new Bot({
    prefix: '?',
    keys: {
      handOver: async (userId: string) => {
        handOvers.push(userId);
        return { outcome: 'not-sent', sent: { accepted: false, reason: 'test' } };
      },
      revokeAll: async () => 0,
    } as unknown as ApiKeyService,
    kv: {
      read: async () => ({ kv: {}, revision: 0 }),
      set: async () => ({ ok: true }),
    } as unknown as KvService,
    history: { forget: () => Promise.reject(new Error('not used')) },
    account: { erase: () => Promise.reject(new Error('not used')) },
    accounts: { details: async () => ({ key: null, historyErasedAt: null }) },
    webhooks: {
      list: async () => [],
      remove: async () => 'not_found',
      create: async () => ({}),
      maxPerUser: 100,
      ...options.webhooks,
    } as never,
    privacy: { settings: async () => withDefaults(undefined), change: async () => withDefaults(undefined) },
    messenger,
    logger: pino({ level: 'silent' }),
    ...(options.serves ? { serves: options.serves } : {}),
  });
  const responses: APIInteractionResponse[] = [];
  const respond =
    (accepted = true) =>
    async (response: APIInteractionResponse) => {
      responses.push(response);
      return accepted
        ? ({ accepted: true } as const)
        : ({ accepted: false, reason: 'already acknowledged' } as const);
    };
  return { bot, rest, responses, respond, handOvers };
}

/** `/name sub`, or `/name sub inGroup` when `sub` is a group. */
function slash(
  name: string,
  sub: string,
  options: Array<{ name: string; value: string }> = [],
  inGroup?: string,
): APIInteraction {
  const subcommand = {
    type: ApplicationCommandOptionType.Subcommand,
    name: inGroup ?? sub,
    options: options.map((option) => ({ ...option, type: ApplicationCommandOptionType.String })),
  };
  return {
    id: freshId(),
    application_id: APP,
    type: InteractionType.ApplicationCommand,
    token: 'token',
    version: 1,
    context: InteractionContextType.BotDM,
    user: { id: USER, username: 'user', discriminator: '0', global_name: null, avatar: null },
    data: {
      id: '1',
      name,
      type: ApplicationCommandType.ChatInput,
      options: [
        inGroup === undefined
          ? subcommand
          : { type: ApplicationCommandOptionType.SubcommandGroup, name: sub, options: [subcommand] },
      ],
    },
  } as unknown as APIInteraction;
}

function button(customId: string, flags: number): APIInteraction {
  return {
    id: freshId(),
    application_id: APP,
    type: InteractionType.MessageComponent,
    token: 'token',
    version: 1,
    context: InteractionContextType.BotDM,
    user: { id: USER, username: 'user', discriminator: '0', global_name: null, avatar: null },
    message: { id: '2', flags, content: '', components: [] },
    data: { custom_id: customId, component_type: ComponentType.Button },
  } as unknown as APIInteraction;
}

describe('interactions', () => {
  it('a button runs nothing but a confirmation, and only under an answer its user alone saw', async () => {
    const { bot, responses, respond, handOvers } = setup();
    await bot.interactions.handle(button('presently:rotate?confirm=true', MessageFlags.Ephemeral), respond());
    await bot.interactions.handle(button('presently:forget?all=true&confirm=true', 0), respond());
    await bot.interactions.handle(button('elsewhere:thing', MessageFlags.Ephemeral), respond());
    expect(handOvers).toEqual([]);
    expect(responses.map((response) => response.type)).toEqual([
      InteractionResponseType.DeferredMessageUpdate,
      InteractionResponseType.DeferredMessageUpdate,
      InteractionResponseType.DeferredMessageUpdate,
    ]);
  });

  it('a command that is not ours is answered, to its user alone', async () => {
    const { bot, responses, respond } = setup();
    await bot.interactions.handle(slash('other', 'thing'), respond());
    expect(responses).toEqual([
      {
        type: InteractionResponseType.ChannelMessageWithSource,
        data: { content: 'I do not know that command.', flags: MessageFlags.Ephemeral },
      },
    ]);
  });

  it('when the callback is not taken (acknowledged already), the answer edits the original', async () => {
    const { bot, rest, respond } = setup();
    await bot.interactions.handle(slash('presently', 'help'), respond(false));
    expect(rest).toEqual([
      expect.objectContaining({ method: 'PATCH', route: Routes.webhookMessage(APP, 'token', '@original') }),
    ]);
    expect((rest[0] as { body: { content: string } }).body.content).toContain('/presently key');
  });

  it('an answer longer than a message holds is cut to 2,000 characters', async () => {
    const hooks = Array.from({ length: 30 }, (_, n) => ({
      id: `wh_${String(n).padStart(16, 'A')}`,
      url: `https://example.com/${'a'.repeat(150)}`,
      events: ['presence'],
      disabled_at: null,
      deliveries: [],
    }));
    const { bot, responses, respond } = setup({ webhooks: { list: async () => hooks } });
    await bot.interactions.handle(slash('presently', 'webhooks', [], 'list'), respond());
    const content = (responses[0] as { data: { content: string } }).data.content;
    expect(content.length, content).toBe(2_000);
    expect(content.endsWith('…')).toBe(true);
  });

  it('an instance for some users answers everyone else that it does not serve them, and runs nothing', async () => {
    const { bot, responses, respond, handOvers } = setup({ serves: (userId) => userId !== USER });
    await bot.interactions.handle(slash('presently', 'rotate'), respond());
    expect(handOvers).toEqual([]);
    expect((responses[0] as { data: { content: string } }).data.content).toMatch(
      /serves only the users its operator chose/,
    );
  });
});
