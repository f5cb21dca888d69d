import { generateKeyPairSync, sign } from 'node:crypto';
import {
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIMessage,
  ApplicationIntegrationType,
  ComponentType,
  GatewayIntentBits,
  InteractionContextType,
  InteractionResponseType,
  MessageFlags,
} from 'discord-api-types/v10';
import { afterEach, describe, expect, it } from 'vitest';
import { ALL_INTENTS } from '../../src/simulator/gateway.js';
import type { InteractInput, SimInteraction } from '../../src/simulator/index.js';
import { keysIn, untilLive } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * `/presently` end to end: the service registers it with the simulated Discord, users run it there (in a
 * server the bot is in, in the bot's DM, and as a user install in a server without the bot), the real
 * gateway client delivers INTERACTION_CREATE, and the answers come back through Discord's callback and
 * webhook routes. What a command did is checked over real HTTP.
 */

const GUILD = '400000000000000001';
/** A server the bot is not in: only a user install reaches it. */
const FOREIGN_GUILD = '400000000000000099';
const USER = '80351110224678912';
const OTHER = '80351110224678913';

type Where = InteractInput['where'];
const PLACES: ReadonlyArray<[string, Where]> = [
  ['in a server with the bot', { guildId: GUILD }],
  ["in the bot's DM", 'dm'],
  ['as a user install in a server without the bot', { guildId: FOREIGN_GUILD }],
];

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(
  env: Record<string, string> = {},
  options: { bot?: { deferAfterMs?: number } } = {},
): Promise<Harness> {
  harness = await startHarness({
    env: { WEBHOOKS_ALLOW_PRIVATE: 'true', ...env },
    ...options,
    setup: (sim) => {
      sim.createGuild({
        id: GUILD,
        name: 'Slash Guild',
        members: [
          { user: { id: USER, username: 'user' }, presence: { status: 'online' } },
          { user: { id: OTHER, username: 'other' }, presence: { status: 'online' } },
        ],
      });
    },
  });
  const h = harness;
  await eventually(() => expect(h.simulator.registeredCommands(env.COMMAND_GUILD_IDS)).toHaveLength(1));
  return h;
}

/** The user runs `/presently <path…>` there; resolves with the interaction once it is answered. */
async function slash(
  h: Harness,
  where: Where,
  path: string[],
  options: Record<string, string | number | boolean> = {},
  user = USER,
): Promise<{ interaction: SimInteraction; answer: APIMessage }> {
  const interaction = h.simulator.interact({ user, where, command: 'presently', subcommand: path, options });
  const answer = await interaction.waitForMessage(
    (message) => message.content !== '' || message.attachments.length > 0,
  );
  return { interaction, answer };
}

function buttonsOf(message: APIMessage): APIButtonComponent[] {
  return (message.components ?? []).flatMap((row) =>
    row.type === ComponentType.ActionRow
      ? (row as APIActionRowComponent<APIButtonComponent>).components.filter(
          (component) => component.type === ComponentType.Button,
        )
      : [],
  );
}

function customIdOf(message: APIMessage): string {
  const [button] = buttonsOf(message);
  if (button === undefined || !('custom_id' in button))
    throw new Error(`no button on ${JSON.stringify(message)}`);
  return button.custom_id;
}

async function kvOf(h: Harness, userId = USER): Promise<Record<string, string>> {
  const response = await fetch(`${h.base}/v1/users/${userId}`);
  const body = (await response.json()) as { data: { kv: Record<string, string> } };
  return body.data.kv;
}

const isEphemeral = (message: APIMessage) => ((message.flags ?? 0) & MessageFlags.Ephemeral) !== 0;

describe('registration', () => {
  it('registers one /presently, installable by servers and users, usable in servers, DMs and private channels', async () => {
    const h = await start();
    const [command] = h.simulator.registeredCommands();
    expect(command?.name).toBe('presently');
    expect(command?.integration_types).toEqual([
      ApplicationIntegrationType.GuildInstall,
      ApplicationIntegrationType.UserInstall,
    ]);
    expect(command?.contexts).toEqual([
      InteractionContextType.Guild,
      InteractionContextType.BotDM,
      InteractionContextType.PrivateChannel,
    ]);
    const names = (command?.options ?? []).map((option) => option.name);
    expect(names).toEqual([
      'key',
      'rotate',
      'revoke',
      'kv',
      'privacy',
      'start',
      'stop',
      'forget',
      'export',
      'webhooks',
      'card',
      'help',
    ]);
  });

  it('a restart with nothing changed reads the commands and writes none', async () => {
    const first = await start();
    expect(first.simulator.requestCount('PUT /applications/:id/commands')).toBe(1);
    const simulator = first.simulator;
    await first.app.close();
    const gets = simulator.requestCount('GET /applications/:id/commands');
    harness = await startHarness({ discord: simulator });
    const second = harness;
    await eventually(() =>
      expect(simulator.requestCount('GET /applications/:id/commands')).toBeGreaterThan(gets),
    );
    await second.app.close();
    expect(simulator.requestCount('PUT /applications/:id/commands')).toBe(1);
    await simulator.stop();
    harness = undefined;
  });

  it('with COMMAND_GUILD_IDS registers in those servers only', async () => {
    const h = await start({ COMMAND_GUILD_IDS: GUILD });
    expect(h.simulator.registeredCommands(GUILD)).toHaveLength(1);
    expect(h.simulator.registeredCommands()).toEqual([]);
    const { answer } = await slash(h, { guildId: GUILD }, ['help']);
    expect(answer.content).toContain('/presently kv');
  });
});

describe('intents', () => {
  it('by default asks for no Message Content: connects where it is not granted, and answers DMs, not server messages', async () => {
    const h = await start();
    expect(h.fatal).toEqual([]);
    // Were the server message delivered, its answer would come before the DM's.
    h.simulator.sendMessage({ guildId: GUILD, author: USER, content: '?help' });
    h.simulator.sendMessage({ author: USER, content: '?help' });
    const answer = await h.simulator.waitForMessage((message) => message.content.includes('Presently'));
    expect(answer.channel_id).toBe(h.simulator.dmChannelFor(USER));
    expect(h.simulator.sentMessages().filter((message) => message.channel_id !== answer.channel_id)).toEqual(
      [],
    );
  });

  it('MESSAGE_CONTENT=on where Discord has not granted it is refused with 4014, and says which intent', async () => {
    harness = await startHarness({
      env: { MESSAGE_CONTENT: 'on' },
      simulator: { allowedIntents: ALL_INTENTS & ~GatewayIntentBits.MessageContent },
    });
    const h = harness;
    await eventually(() => expect(h.fatal.map((fatal) => fatal.code)).toEqual([4014]));
    expect(h.fatal[0]?.reason).toContain('Message Content');
  });
});

describe.each(PLACES)('/presently %s', (_place, where) => {
  it('key: a key only the user sees, which writes the KV; kv set, get, list and delete', async () => {
    const h = await start();
    const { answer } = await slash(h, where, ['key']);
    expect(isEphemeral(answer)).toBe(true);
    const [key] = keysIn(answer.content);
    expect(key).toBeDefined();
    await untilLive(h.base, key as string);
    const put = await fetch(`${h.base}/v1/users/@me/kv/from_api`, {
      method: 'PUT',
      headers: { authorization: key as string },
      body: 'yes',
    });
    expect(put.status).toBe(204);

    expect(
      (await slash(h, where, ['kv', 'set'], { key: 'mood', value: 'calm\nand bright' })).answer.content,
    ).toBe('Saved `mood`.');
    expect(await kvOf(h)).toEqual({ from_api: 'yes', mood: 'calm\nand bright' });
    expect((await slash(h, where, ['kv', 'get'], { key: 'mood' })).answer.content).toContain(
      'calm\nand bright',
    );
    expect((await slash(h, where, ['kv', 'list'])).answer.content).toContain('mood = calm⏎and bright');
    expect((await slash(h, where, ['kv', 'set'], { key: 'bad key', value: 'x' })).answer.content).toMatch(
      /^Not saved: /,
    );
    expect((await slash(h, where, ['kv', 'delete'], { key: 'mood' })).answer.content).toBe('Deleted `mood`.');
    expect(await kvOf(h)).toEqual({ from_api: 'yes' });

    for (const message of h.simulator.interactionMessages()) expect(isEphemeral(message)).toBe(true);
  });

  it('privacy show, set, hide, unhide, pause and resume change what the API shows', async () => {
    const h = await start();
    expect((await slash(h, where, ['privacy', 'show'])).answer.content).toContain('`visibility`: public');
    expect(
      (await slash(h, where, ['privacy', 'set'], { setting: 'hide_platforms', value: 'yes' })).answer.content,
    ).toBe('Changed: `hide_platforms` is now true.');
    expect(
      (await slash(h, where, ['privacy', 'set'], { setting: 'visibility', value: 'secret' })).answer.content,
    ).toMatch(/^Not changed: `visibility`/);
    expect((await slash(h, where, ['privacy', 'hide'], { thing: 'custom_status' })).answer.content).toMatch(
      /^Hidden: your custom status/,
    );
    expect((await slash(h, where, ['privacy', 'unhide'], { thing: 'custom_status' })).answer.content).toMatch(
      /^Shown again: your custom status/,
    );
    expect((await slash(h, where, ['privacy', 'pause'], { for: '2h' })).answer.content).toMatch(
      /^Paused until/,
    );
    await eventually(async () => {
      const body = (await (await fetch(`${h.base}/v1/users/${USER}`)).json()) as {
        data: { discord_status: string };
      };
      expect(body.data.discord_status).toBe('offline');
    });
    expect((await slash(h, where, ['privacy', 'resume'])).answer.content).toMatch(/^Resumed/);
  });

  it('forget all asks with a button, and erases only when it is pressed', async () => {
    const h = await start();
    await slash(h, where, ['kv', 'set'], { key: 'mood', value: 'calm' });
    const { interaction, answer } = await slash(h, where, ['forget'], { all: true });
    expect(answer.content).toContain('This erases everything');
    expect(await kvOf(h)).toEqual({ mood: 'calm' });
    const pressed = interaction.click(customIdOf(answer));
    expect((await pressed.response()).type).toBe(InteractionResponseType.UpdateMessage);
    const done = await pressed.waitForMessage((message) => message.content.startsWith('Done'));
    expect(done.content).toContain('1 KV key');
    expect(buttonsOf(done)).toEqual([]);
    expect(await kvOf(h)).toEqual({});
  });

  it('export sends everything kept as a JSON file only the user sees', async () => {
    const h = await start();
    await slash(h, where, ['kv', 'set'], { key: 'mood', value: 'calm' });
    const { interaction, answer } = await slash(h, where, ['export']);
    expect(isEphemeral(answer)).toBe(true);
    const file = interaction.file(`presently-${USER}.json`);
    expect(file).toBeDefined();
    const exported = JSON.parse(String(file)) as { data: { kv: Record<string, string> } };
    expect(exported.data.kv).toEqual({ mood: 'calm' });
  });

  it('rotate, revoke, card, help, start and stop answer there too', async () => {
    const h = await start({ PUBLIC_URL: 'https://presence.example.com' });
    const rotated = await slash(h, where, ['rotate']);
    expect(keysIn(rotated.answer.content)).toHaveLength(1);
    expect((await slash(h, where, ['revoke'])).answer.content).toMatch(/^Done: your API key no longer works/);
    expect((await slash(h, where, ['card'])).answer.content).toContain(`/v1/users/${USER}/card.svg`);
    expect((await slash(h, where, ['help'])).answer.content).toContain('/presently privacy');
    expect((await slash(h, where, ['start'])).answer.content).toMatch(/there is nothing to start/);
    expect((await slash(h, where, ['stop'])).answer.content).toMatch(/leave them to stop/);
    for (const message of h.simulator.interactionMessages()) expect(isEphemeral(message)).toBe(true);
  });

  it('webhooks add shows the secret once, list shows it without, remove removes it', async () => {
    const h = await start();
    const added = await slash(h, where, ['webhooks', 'add'], {
      url: 'http://127.0.0.1:9/hook',
      events: 'presence, kv',
    });
    expect(added.answer.content).toMatch(/^Added `wh_/);
    const id = /`(wh_[A-Za-z0-9_-]{16})`/.exec(added.answer.content)?.[1] as string;
    const secret = /`(whsec_[^`]+)`/.exec(added.answer.content)?.[1] as string;
    expect(secret).toBeDefined();
    const listed = await slash(h, where, ['webhooks', 'list']);
    expect(listed.answer.content).toContain(id);
    expect(listed.answer.content).not.toContain(secret);
    expect((await slash(h, where, ['webhooks', 'add'], { url: 'ftp://example.com' })).answer.content).toMatch(
      /^Not added: /,
    );
    expect((await slash(h, where, ['webhooks', 'remove'], { id })).answer.content).toBe(`Removed \`${id}\`.`);
    expect((await slash(h, where, ['webhooks', 'list'])).answer.content).toContain('You have no webhooks.');
  });
});

describe('/presently', () => {
  it('rotate replaces the key, revoke ends it, and key says when one is held', async () => {
    const h = await start();
    const first = keysIn((await slash(h, 'dm', ['key'])).answer.content)[0] as string;
    await untilLive(h.base, first);
    expect((await slash(h, 'dm', ['key'])).answer.content).toMatch(/^You have an API key since <t:\d+:f>/);
    const second = keysIn((await slash(h, 'dm', ['rotate'])).answer.content)[0] as string;
    await untilLive(h.base, second);
    const me = (key: string) => fetch(`${h.base}/v1/users/@me`, { headers: { authorization: key } });
    expect((await me(first)).status).toBe(401);
    expect((await slash(h, 'dm', ['revoke'])).answer.content).toMatch(/^Done: your API key no longer works/);
    expect((await me(second)).status).toBe(401);
    expect((await slash(h, 'dm', ['revoke'])).answer.content).toMatch(/^You have no API key/);
  });

  it('no key ever appears in a message that is not ephemeral', async () => {
    const h = await start();
    for (const [, where] of PLACES) {
      await slash(h, where, ['key']);
      await slash(h, where, ['rotate']);
    }
    const all = [...h.simulator.interactionMessages(), ...h.simulator.sentMessages()];
    const withKeys = all.filter((message) => keysIn(message.content).length > 0);
    // key's first answer and each rotate: later keys answer that a key is held.
    expect(withKeys).toHaveLength(1 + PLACES.length);
    for (const message of withKeys) expect(isEphemeral(message)).toBe(true);
  });

  it('start and stop on an opt-in instance: stop asks with a button, then erases', async () => {
    const h = await start({ MONITOR: 'opt-in' });
    expect((await slash(h, { guildId: GUILD }, ['start'])).answer.content).toMatch(
      /^Done: you are monitored/,
    );
    await eventually(async () => expect((await fetch(`${h.base}/v1/users/${USER}`)).status).toBe(200));
    const { interaction, answer } = await slash(h, 'dm', ['stop']);
    expect(answer.content).toContain('This stops showing your presence');
    const pressed = interaction.click(customIdOf(answer));
    await pressed.waitForMessage((message) =>
      message.content.startsWith('Done: you are no longer monitored'),
    );
    await eventually(async () => expect((await fetch(`${h.base}/v1/users/${USER}`)).status).toBe(404));
  });

  it('forget asks first, then erases the history only', async () => {
    const h = await start();
    await slash(h, 'dm', ['kv', 'set'], { key: 'mood', value: 'calm' });
    const { interaction, answer } = await slash(h, { guildId: GUILD }, ['forget']);
    expect(answer.content).toContain('Your KV and API key stay');
    const pressed = interaction.click(customIdOf(answer));
    const done = await pressed.waitForMessage((message) => message.content.startsWith('Done'));
    expect(done.content).toContain('Your KV and API key are untouched');
    expect(await kvOf(h)).toEqual({ mood: 'calm' });
  });

  it('card gives the card link and a preview under PUBLIC_URL', async () => {
    const h = await start({ PUBLIC_URL: 'https://presence.example.com/' });
    const { answer } = await slash(h, { guildId: GUILD }, ['card'], { theme: 'light' });
    expect(answer.content).toContain(`https://presence.example.com/v1/users/${USER}/card.svg?theme=light`);
    expect(answer.embeds?.[0]?.image?.url).toBe(
      `https://presence.example.com/v1/users/${USER}/card.png?theme=light`,
    );
  });

  it('help lists every command in the slash form', async () => {
    const h = await start();
    const { answer } = await slash(h, 'private', ['help']);
    for (const name of [
      'key',
      'rotate',
      'revoke',
      'kv list|get|set|delete',
      'privacy show|set',
      'export',
      'card',
    ]) {
      expect(answer.content).toContain(`/presently ${name}`);
    }
  });

  it('a slow command is deferred within Discord’s window, then its answer fills the message', async () => {
    const h = await start({}, { bot: { deferAfterMs: 0 } });
    const interaction = h.simulator.interact({
      user: USER,
      where: 'dm',
      command: 'presently',
      subcommand: ['kv', 'list'],
    });
    const response = await interaction.response();
    expect(response.type).toBe(InteractionResponseType.DeferredChannelMessageWithSource);
    const answer = await interaction.waitForMessage((message) => message.content !== '');
    expect(answer.content).toBe('Your KV is empty.');
    expect(isEphemeral(answer)).toBe(true);
  });

  it('past the cooldown a slash command is answered "slow down", to the user alone, and not run', async () => {
    const h = await start({ BOT_COMMAND_BURST: '2', BOT_COMMANDS_PER_MINUTE: '1' });
    await slash(h, 'dm', ['kv', 'set'], { key: 'a', value: '1' });
    await slash(h, 'dm', ['kv', 'set'], { key: 'b', value: '2' });
    for (let i = 0; i < 2; i++) {
      const { answer } = await slash(h, 'dm', ['kv', 'set'], { key: 'c', value: '3' });
      expect(answer.content).toMatch(/^Slow down, please/);
      expect(isEphemeral(answer)).toBe(true);
    }
    expect(await kvOf(h)).toEqual({ a: '1', b: '2' });
  });
});

describe('? commands in DMs', () => {
  it('still work with the default intents, and point to /presently for what is slash-only', async () => {
    const h = await start();
    const dm = h.simulator.dmChannelFor(USER);
    const sent = h.simulator.sendMessage({ author: USER, content: '?set mood calm' });
    const reply = await h.simulator.waitForMessage(
      (message) => message.message_reference?.message_id === sent.id,
    );
    expect(reply.channel_id).toBe(dm);
    expect(reply.content).toBe('Saved `mood`.');
    expect(await kvOf(h)).toEqual({ mood: 'calm' });
    const asked = h.simulator.sendMessage({ author: USER, content: '?export' });
    const pointer = await h.simulator.waitForMessage(
      (message) => message.message_reference?.message_id === asked.id,
    );
    expect(pointer.content).toContain('`/presently export`');
  });
});

describe('over HTTP (INTERACTIONS_PUBLIC_KEY)', () => {
  it('a signed /presently POSTed to /interactions runs the command and is answered in the response', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const hex = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url').toString('hex');
    const h = await start({ INTERACTIONS_PUBLIC_KEY: hex });
    const id = String((BigInt(Date.now()) - 1_420_070_400_000n) << 22n);
    const body = JSON.stringify({
      id,
      application_id: h.simulator.botUser.id,
      type: 2,
      token: 'a'.repeat(100),
      version: 1,
      context: InteractionContextType.BotDM,
      user: { id: USER, username: 'user', discriminator: '0', global_name: null, avatar: null },
      data: {
        id: '1',
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
                  { type: 3, name: 'value', value: 'over http' },
                ],
              },
            ],
          },
        ],
      },
    });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = sign(null, Buffer.from(timestamp + body), privateKey).toString('hex');
    const response = await fetch(`${h.base}/interactions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-signature-ed25519': signature,
        'x-signature-timestamp': timestamp,
      },
      body,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      type: InteractionResponseType.ChannelMessageWithSource,
      data: { content: 'Saved `mood`.', flags: MessageFlags.Ephemeral },
    });
    expect(await kvOf(h)).toEqual({ mood: 'over http' });
  });
});
