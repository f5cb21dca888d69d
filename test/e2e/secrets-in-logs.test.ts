import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateApiKey } from '../../src/keys/api-key.js';
import { createLogger } from '../../src/log.js';
import { keyFrom, keysIn, obtainApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Logs are read by more people, and kept longer, than anything else a service writes. An API key that
 * reaches them is a key anyone with log access can use. This runs the real app with the real logger
 * (createLogger, at `trace`, so nothing is filtered out by level) writing into memory, does what puts keys
 * in motion — keyed requests that succeed and fail every way, `?apikey`, a key pasted in a channel, DMs
 * that Discord refuses — and then reads every line.
 */
const GUILD = '500000000000000001';
const USER = '80351110224678912';
const OTHER = '80351110224678913';
const WRITES_PER_MINUTE = 12;

const lines: string[] = [];
const logs = () => lines.join('');
let harness: Harness;
/** Every Authorization value sent, and every key seen in the bot's messages. */
const secrets = new Set<string>();

beforeAll(async () => {
  harness = await startHarness({
    logger: createLogger('trace', false, { write: (line: string) => void lines.push(line) }),
    // MESSAGE_CONTENT on: keys leaked in a server channel are read too.
    env: {
      RATE_LIMIT_WRITE: String(WRITES_PER_MINUTE),
      MESSAGE_CONTENT: 'on',
      WEBHOOKS_ALLOW_PRIVATE: 'true',
    },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [USER, OTHER].map((id) => ({
          user: { id, username: `user${id.slice(-1)}` },
          presence: { status: 'online' as const },
        })),
      }),
  });
  const h = harness;
  await eventually(() => expect(h.app.registry.isMonitored(OTHER)).toBe(true));
});

afterAll(async () => {
  await harness?.close();
});

async function send(method: string, path: string, authorization: string, body?: string, type?: string) {
  secrets.add(authorization);
  const headers: Record<string, string> = { authorization };
  if (type) headers['content-type'] = type;
  const response = await fetch(`${harness.base}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  await response.arrayBuffer();
  return response.status;
}

/** A user writes to the bot; resolves with the bot's reply when it makes one. */
async function say(author: string, content: string, guildId?: string) {
  const sent = harness.simulator.sendMessage({ author, content, ...(guildId ? { guildId } : {}) });
  return harness.simulator.waitForMessage((message) => message.message_reference?.message_id === sent.id);
}

/** The next DM the bot sends the user that carries a key. */
function nextKeyDm(userId: string) {
  const channel = harness.simulator.dmChannelFor(userId);
  return harness.simulator.waitForMessage(
    (message) => message.channel_id === channel && keysIn(message.content).length > 0,
  );
}

describe('no API key and no Authorization value is ever logged', () => {
  it('keyed requests, succeeding and failing every way', async () => {
    const key = await obtainApiKey(harness, USER);
    secrets.add(key);
    const statuses = [
      await send('PUT', '/v1/users/@me/kv/mood', key, 'happy'),
      await send('PATCH', '/v1/users/@me/kv', `Bearer ${key}`, '{"a":"b"}', 'application/json'),
      await send('GET', '/v1/users/@me', key),
      await send('DELETE', `/v1/users/${USER}/kv/a`, key),
      // refused for the key itself
      await send('PUT', '/v1/users/@me/kv/mood', generateApiKey(), 'x'),
      await send('PUT', '/v1/users/@me/kv/mood', `Bearer not-a-key-${randomUUID()}`, 'x'),
      await send('PUT', `/v1/users/${OTHER}/kv/mood`, key, 'x'),
      // refused for what it carries
      await send('PUT', '/v1/users/@me/kv/bad-name', key, 'x'),
      await send('PUT', '/v1/users/@me/kv/mood', key, 'x'.repeat(200 * 1024)),
      await send('PATCH', '/v1/users/@me/kv', key, 'x', 'image/png'),
      await send('PATCH', '/v1/users/@me/kv', key, '{not json', 'application/json'),
      await send('GET', '/v1/users/%E0%A4%A', key),
    ];
    expect(statuses).toEqual([204, 204, 200, 204, 401, 401, 403, 400, 413, 415, 400, 400]);

    // A store that fails while a key is presented: the error handler logs the failure of that request.
    const findKey = vi
      .spyOn(harness.app.store.apiKeys, 'findKey')
      .mockRejectedValueOnce(new Error('SQLITE_BUSY: database is locked'));
    expect(await send('PUT', '/v1/users/@me/kv/mood', key, 'x')).toBe(500);
    findKey.mockRestore();

    // Past the write budget, counted per key.
    let status = 0;
    for (let i = 0; i <= WRITES_PER_MINUTE && status !== 429; i++) {
      status = await send('PUT', '/v1/users/@me/kv/mood', key, 'x');
    }
    expect(status).toBe(429);
  });

  it('the bot: ?apikey, commands, a leaked key, and DMs Discord refuses', async () => {
    secrets.add(keyFrom(await say(USER, '?apikey')));
    await say(USER, '?set mood quietly happy');
    await say(USER, '?kv');
    await say(USER, '?apikey', GUILD);

    // A key pasted in a server channel: replaced, and the new one DMed.
    const leaked = await obtainApiKey(harness, USER);
    secrets.add(leaked);
    const dm = nextKeyDm(USER);
    harness.simulator.sendMessage({ author: USER, guildId: GUILD, content: `my key is ${leaked} lol` });
    secrets.add(keyFrom(await dm));

    // The same for a user who accepts no DMs: the DM with their new key fails, and the failure is logged;
    // they are told so in the channel where the key appeared.
    const theirs = await obtainApiKey(harness, OTHER);
    secrets.add(theirs);
    harness.simulator.faults.closeDms(OTHER);
    const leak = harness.simulator.sendMessage({ author: OTHER, guildId: GUILD, content: theirs });
    await harness.simulator.waitForMessage((message) => message.message_reference?.message_id === leak.id);
    expect(logs()).toContain('a live API key appeared');
    // And a ?apikey whose reply Discord refuses: the key in it goes nowhere, the log included (as does the
    // answer saying why, refused too).
    harness.simulator.sendMessage({ author: OTHER, content: '?apikey' });
    await eventually(() => expect(logs().split('could not send a message').length).toBe(4));
  });

  it('the bot: /presently rotate and webhooks add', async () => {
    await eventually(() => expect(harness.simulator.registeredCommands()).toHaveLength(1));
    const run = async (subcommand: string[], options: Record<string, string> = {}) => {
      const interaction = harness.simulator.interact({
        user: USER,
        where: 'dm',
        command: 'presently',
        subcommand,
        options,
      });
      return interaction.waitForMessage((message) => message.content !== '');
    };
    for (const key of keysIn((await run(['rotate'])).content)) secrets.add(key);
    const added = await run(['webhooks', 'add'], { url: 'http://127.0.0.1:9/hook' });
    const webhookSecrets = added.content.match(/whsec_[A-Za-z0-9_-]+/g) ?? [];
    expect(webhookSecrets).toHaveLength(1);
    for (const secret of webhookSecrets) secrets.add(secret);
  });

  it('in any line the app wrote', () => {
    const text = logs();
    // The paths above were logged: the checks below read something.
    expect(text).toContain('request failed');
    expect(text).toContain('a live API key appeared');
    expect(text).toContain('could not send a message');
    expect(keysIn(text)).toEqual([]);
    for (const secret of secrets) expect(text).not.toContain(secret);
    // Nor the bot's own token, which @discordjs/rest sends in its Authorization.
    expect(text).not.toContain(harness.simulator.token);
  });
});
