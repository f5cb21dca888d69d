import { createHash } from 'node:crypto';
import type { APIMessage } from 'discord-api-types/v10';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BusMessages } from '../../src/bus/ports.js';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { API_KEY_SHAPE, keyFrom, keysIn, obtainApiKey, untilLive } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * The bot end to end: users talk to it through the simulated Discord (DMs and server channels), the real
 * gateway client delivers the messages, and what the bot did is checked in its replies, over real HTTP
 * and in the store.
 */

const GUILD = '400000000000000001';
/** A second text channel of GUILD, made by the simulator on first use. */
const CHANNEL = '400000000000000010';
const USER = '80351110224678912';
const OTHER = '80351110224678913';
/** Every command the contract lists (docs/api.md). */
const COMMANDS = [
  'apikey',
  'forget',
  'kv',
  'get',
  'set',
  'del',
  'webhooks',
  'privacy',
  'start',
  'stop',
  'help',
];

type Envelope<T> = { success: true; data: T } | { success: false; error: { code: string; message: string } };
type PresenceBody = { discord_user: { id: string }; discord_status: string; kv: Record<string, string> };

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/**
 * USER and OTHER online in GUILD, both monitored. With MESSAGE_CONTENT on (the legacy path), as these tests
 * read `?` commands and leaked keys in server channels too.
 */
async function start(env: Record<string, string> = {}): Promise<Harness> {
  harness = await startHarness({
    env: { MESSAGE_CONTENT: 'on', ...env },
    setup: (sim) => {
      sim.createGuild({
        id: GUILD,
        name: 'Bot Guild',
        members: [
          { user: { id: USER, username: 'user' }, presence: { status: 'online' } },
          { user: { id: OTHER, username: 'other' }, presence: { status: 'online' } },
        ],
      });
    },
  });
  const h = harness;
  await eventually(() => {
    expect(h.app.registry.isMonitored(USER)).toBe(true);
    expect(h.app.registry.isMonitored(OTHER)).toBe(true);
  });
  return h;
}

/** A user writes; resolves with their message and the bot's reply to it (in the same channel). */
async function say(
  h: Harness,
  content: string,
  where: { author?: string; guildId?: string; channelId?: string } = {},
): Promise<{ sent: APIMessage; reply: APIMessage }> {
  const author = where.author ?? USER;
  const sent = h.simulator.sendMessage({
    author,
    content,
    ...(where.guildId === undefined ? {} : { guildId: where.guildId }),
    ...(where.channelId === undefined ? {} : { channelId: where.channelId }),
  });
  const reply = await h.simulator.waitForMessage(
    (message) => message.message_reference?.message_id === sent.id,
  );
  expect(reply.channel_id).toBe(sent.channel_id);
  return { sent, reply };
}

async function rest(
  h: Harness,
  method: string,
  path: string,
  options: { key?: string; bearer?: boolean; body?: string; type?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined)
    headers.authorization = options.bearer ? `Bearer ${options.key}` : options.key;
  if (options.type !== undefined) headers['content-type'] = options.type;
  return fetch(`${h.base}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
}

async function presence(h: Harness, id: string, key?: string): Promise<PresenceBody> {
  const response = await rest(h, 'GET', `/v1/users/${id}`, key === undefined ? {} : { key });
  expect(response.status).toBe(200);
  const body = (await response.json()) as Envelope<PresenceBody>;
  if (!body.success) throw new Error(`GET /v1/users/${id}: ${body.error.code}`);
  return body.data;
}

async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(await response.json()).toEqual({ success: false, error: { code, message: expect.any(String) } });
}

/** A write with `key` that must be accepted. */
async function put(h: Harness, key: string, name: string, value: string): Promise<void> {
  const response = await rest(h, 'PUT', `/v1/users/@me/kv/${name}`, { key, body: value });
  expect(response.status).toBe(204);
}

function db(h: Harness) {
  return (h.app.store as SqliteStore).db;
}

function keyRow(h: Harness, userId: string): { key_hash: Buffer } | undefined {
  return db(h).prepare('SELECT key_hash FROM api_keys WHERE user_id = ?').get(userId) as
    | { key_hash: Buffer }
    | undefined;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Bot messages that carry something shaped like an API key. */
function messagesWithKeys(h: Harness, channelId?: string): APIMessage[] {
  return h.simulator.sentMessages(channelId).filter((message) => keysIn(message.content).length > 0);
}

/** The store refuses the next key write, as a full disk would; restore the spy after. */
function failNextKeyWrite(h: Harness) {
  return vi
    .spyOn(h.app.store.apiKeys, 'activateKey')
    .mockRejectedValueOnce(new Error('SQLITE_FULL: database or disk is full'));
}

/** Waits for the DM that tells `userId` their key leaked; returns the new key it carries. */
async function leakNotice(h: Harness, userId: string): Promise<{ notice: APIMessage; key: string }> {
  const dm = h.simulator.dmChannelFor(userId);
  const notice = await h.simulator.waitForMessage(
    (message) =>
      message.channel_id === dm && /appeared/.test(message.content) && keysIn(message.content).length > 0,
  );
  const key = keyFrom(notice);
  await untilLive(h.base, key);
  return { notice, key };
}

describe('?apikey', () => {
  it('DMs a key that writes the KV (bare and Bearer) and reads @me', async () => {
    const h = await start();
    const dm = h.simulator.dmChannelFor(USER);
    const { reply } = await say(h, '?apikey', { channelId: dm });
    expect(reply.channel_id).toBe(dm);
    const key = keyFrom(reply);
    expect(key).toMatch(API_KEY_SHAPE);
    expect(reply.content).toMatch(/Authorization/);
    await untilLive(h.base, key);

    expect((await rest(h, 'PUT', '/v1/users/@me/kv/greeting', { key, body: 'hello' })).status).toBe(204);
    expect((await presence(h, USER)).kv).toEqual({ greeting: 'hello' });

    const patched = await rest(h, 'PATCH', `/v1/users/${USER}/kv`, {
      key,
      body: JSON.stringify({ a: '1', b: '2' }),
      type: 'application/json',
    });
    expect(patched.status).toBe(204);
    expect((await presence(h, USER)).kv).toEqual({ greeting: 'hello', a: '1', b: '2' });

    expect((await rest(h, 'DELETE', `/v1/users/${USER}/kv/a`, { key })).status).toBe(204);
    expect((await presence(h, USER)).kv).toEqual({ greeting: 'hello', b: '2' });

    const me = await presence(h, '@me', key);
    expect(me.discord_user.id).toBe(USER);
    expect(me.discord_status).toBe('online');
    expect(me.kv).toEqual({ greeting: 'hello', b: '2' });

    // Bearer works for writes and for @me alike.
    const bearer = await rest(h, 'PUT', `/v1/users/${USER}/kv/mood`, { key, bearer: true, body: 'sunny' });
    expect(bearer.status).toBe(204);
    const meBearer = await rest(h, 'GET', '/v1/users/@me', { key, bearer: true });
    expect(meBearer.status).toBe(200);
    expect(((await meBearer.json()) as { data: PresenceBody }).data.kv).toEqual({
      greeting: 'hello',
      b: '2',
      mood: 'sunny',
    });
  });

  it('leaves only the SHA-256 of the key in the store, never the key', async () => {
    const h = await start();
    const key = await obtainApiKey(h, USER);
    await put(h, key, 'note', 'written with the key');

    expect(keyRow(h, USER)?.key_hash).toEqual(sha256(key));
    const needles = [
      key,
      key.slice(4),
      Buffer.from(key).toString('hex'),
      Buffer.from(key).toString('base64'),
    ];
    const tables = db(h).prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as {
      name: string;
    }[];
    expect(tables.map((table) => table.name)).toContain('api_keys');
    let cells = 0;
    for (const { name } of tables) {
      const rows = db(h).prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[];
      for (const row of rows) {
        for (const [column, value] of Object.entries(row)) {
          cells++;
          const text = Buffer.isBuffer(value) ? value.toString('latin1') : String(value);
          for (const needle of needles) {
            expect(text.includes(needle), `${name}.${column} holds the key`).toBe(false);
          }
          if (Buffer.isBuffer(value)) expect(value.includes(Buffer.from(key))).toBe(false);
        }
      }
    }
    expect(cells).toBeGreaterThan(0);
  });

  it('revokes the previous key at once when asked again', async () => {
    const h = await start();
    const first = await obtainApiKey(h, USER);
    await put(h, first, 'one', '1');
    const second = await obtainApiKey(h, USER);
    expect(second).not.toBe(first);

    await expectError(
      await rest(h, 'PUT', '/v1/users/@me/kv/two', { key: first, body: 'x' }),
      401,
      'invalid_api_key',
    );
    await expectError(await rest(h, 'GET', '/v1/users/@me', { key: first }), 401, 'invalid_api_key');
    await put(h, second, 'two', '2');
    expect((await presence(h, USER)).kv).toEqual({ one: '1', two: '2' });
    expect(keyRow(h, USER)?.key_hash).toEqual(sha256(second));
  });

  it('when Discord refuses the message with the key, keeps the previous key and says why, without a key', async () => {
    const h = await start();
    const old = await obtainApiKey(h, USER);
    const dm = h.simulator.dmChannelFor(USER);

    h.simulator.faults.refuseNextMessage(dm);
    const refused = await say(h, '?apikey', { channelId: dm });
    expect(refused.reply.content).toMatch(/^I could not send you a new API key: Discord refused it because/);
    expect(refused.reply.content).toMatch(/direct messages from me are not allowed/);
    expect(refused.reply.content).toMatch(/Your previous key still works/);

    // A server error Discord keeps answering, through the REST client's retries.
    for (let i = 0; i < 4; i++) {
      h.simulator.faults.refuseNextMessage(dm, { status: 500, code: 0, message: 'Internal Server Error' });
    }
    const failed = await say(h, '?apikey', { channelId: dm });
    expect(failed.reply.content).toMatch(/Discord failed to take it \(HTTP 500\)/);
    expect(failed.reply.content).toMatch(/Your previous key still works/);

    await put(h, old, 'still', 'works');
    expect(keyRow(h, USER)?.key_hash).toEqual(sha256(old));
    // The only key ever shown is the first one.
    expect(messagesWithKeys(h).map((message) => keyFrom(message))).toEqual([old]);
  });

  it('when the key cannot be stored after Discord took it, says it is not active; the previous key works', async () => {
    const h = await start();
    const old = await obtainApiKey(h, USER);
    const activateKey = failNextKeyWrite(h);
    const dm = h.simulator.dmChannelFor(USER);
    const sent = h.simulator.sendMessage({ channelId: dm, author: USER, content: '?apikey' });
    const isReply = (message: APIMessage) => message.message_reference?.message_id === sent.id;
    const unsaved = keyFrom(await h.simulator.waitForMessage(isReply));
    const notice = await h.simulator.waitForMessage(isReply);
    activateKey.mockRestore();
    expect(notice.content).toMatch(
      /^The key above is not active: I could not save it, and it stops working within 10 minutes if it works at all\. Your previous key still works/,
    );
    expect(keysIn(notice.content)).toEqual([]);

    await expectError(
      await rest(h, 'PUT', '/v1/users/@me/kv/k', { key: unsaved, body: 'x' }),
      401,
      'invalid_api_key',
    );
    await put(h, old, 'k', 'old key');
  });

  it('in a server channel, replies there to use DMs and makes no key', async () => {
    const h = await start();
    const general = await say(h, '?apikey', { guildId: GUILD });
    expect(general.sent.channel_id).not.toBe(h.simulator.dmChannelFor(USER));
    expect(general.reply.content).toMatch(/DMs? only|direct message/i);

    const other = await say(h, '?apikey', { guildId: GUILD, channelId: CHANNEL });
    expect(other.sent.channel_id).toBe(CHANNEL);
    expect(other.reply.channel_id).toBe(CHANNEL);
    expect(other.reply.content).toMatch(/DMs? only|direct message/i);

    // A command in the DMs, answered there after anything the two before it could have sent there.
    const marker = await say(h, '?help');
    expect(keyRow(h, USER)).toBeUndefined();
    expect(messagesWithKeys(h)).toEqual([]);
    expect(h.simulator.sentMessages(h.simulator.dmChannelFor(USER))).toEqual([marker.reply]);
  });
});

describe('leaked keys', () => {
  it('rotates a key its owner posts in a server channel and DMs the owner the new one', async () => {
    const h = await start();
    const old = await obtainApiKey(h, USER);
    await put(h, old, 'before', 'leak');

    h.simulator.sendMessage({
      guildId: GUILD,
      channelId: CHANNEL,
      author: USER,
      content: `my key is ${old} lol`,
    });
    const { notice, key } = await leakNotice(h, USER);
    expect(notice.content).toMatch(/replaced/);
    expect(notice.content).toMatch(/no longer works/);
    expect(key).not.toBe(old);

    await expectError(
      await rest(h, 'PUT', '/v1/users/@me/kv/after', { key: old, body: 'x' }),
      401,
      'invalid_api_key',
    );
    await put(h, key, 'after', 'rotated');
    expect((await presence(h, USER)).kv).toEqual({ before: 'leak', after: 'rotated' });
    // Nothing with a key was said in the server.
    expect(messagesWithKeys(h, CHANNEL)).toEqual([]);
  });

  it('revokes a leaked key of an owner who takes no DMs, and tells them where it appeared: no key, no ping', async () => {
    const h = await start();
    const old = await obtainApiKey(h, USER);
    h.simulator.faults.closeDms(USER);

    const sent = h.simulator.sendMessage({
      guildId: GUILD,
      channelId: CHANNEL,
      author: OTHER,
      content: `found this: ${old}`,
    });
    const notice = await h.simulator.waitForMessage(
      (message) => message.message_reference?.message_id === sent.id,
    );
    expect(notice.channel_id).toBe(CHANNEL);
    expect(notice.content).toMatch(
      new RegExp(`^<@${USER}>, your Presently API key appeared here, so I revoked it`),
    );
    expect(notice.content).toMatch(
      /I could not DM you a new one: Discord refused it because direct messages/,
    );
    expect(notice.content).toMatch(/Allow direct messages from me, then send me `\?apikey` in a DM/);
    expect(keysIn(notice.content)).toEqual([]);
    // Mentioned by name, notified never: neither the owner nor the poster replied to.
    expect(notice.mentions).toEqual([]);

    await expectError(await rest(h, 'GET', '/v1/users/@me', { key: old }), 401, 'invalid_api_key');
    expect(keyRow(h, USER)).toBeUndefined();
    // No key was sent anywhere but the first one, DMed before the leak.
    expect(messagesWithKeys(h).map((message) => keyFrom(message))).toEqual([old]);

    h.simulator.faults.closeDms(USER, false);
    await put(h, await obtainApiKey(h, USER), 'back', 'with a new key');
  });

  it('a leaked key whose replacement cannot be stored stays revoked; the owner is told the new one is not active', async () => {
    const h = await start();
    const old = await obtainApiKey(h, USER);
    const activateKey = failNextKeyWrite(h);
    h.simulator.sendMessage({ guildId: GUILD, channelId: CHANNEL, author: USER, content: old });
    const dm = h.simulator.dmChannelFor(USER);
    const unsaved = keyFrom(
      await h.simulator.waitForMessage(
        (message) => message.channel_id === dm && /appeared/.test(message.content),
      ),
    );
    const notice = await h.simulator.waitForMessage(
      (message) => message.channel_id === dm && /not active/.test(message.content),
    );
    activateKey.mockRestore();
    expect(notice.content).toMatch(
      /^The key above is not active: I could not save it, and it stops working within 10 minutes if it works at all\. Your old key is revoked/,
    );
    expect(keysIn(notice.content)).toEqual([]);
    for (const key of [old, unsaved]) {
      await expectError(await rest(h, 'GET', '/v1/users/@me', { key }), 401, 'invalid_api_key');
    }
    expect(keyRow(h, USER)).toBeUndefined();
  });

  it('rotates a key that ANOTHER user posts, and DMs its owner, not the poster', async () => {
    const h = await start();
    const old = await obtainApiKey(h, USER);
    h.simulator.sendMessage({ guildId: GUILD, author: OTHER, content: `found this: ${old}` });
    const { key } = await leakNotice(h, USER);
    expect(key).not.toBe(old);

    await expectError(await rest(h, 'GET', '/v1/users/@me', { key: old }), 401, 'invalid_api_key');
    await put(h, key, 'still', 'mine');
    expect(messagesWithKeys(h, h.simulator.dmChannelFor(OTHER))).toEqual([]);
    expect(keyRow(h, OTHER)).toBeUndefined();
  });

  it('rotates a key another user sends the bot in a DM', async () => {
    const h = await start();
    const old = await obtainApiKey(h, USER);
    h.simulator.sendMessage({ author: OTHER, content: old });
    const { key } = await leakNotice(h, USER);
    await expectError(await rest(h, 'GET', '/v1/users/@me', { key: old }), 401, 'invalid_api_key');
    await put(h, key, 'k', 'v');
  });

  it("does not rotate keys on the bot's own DMs (echoed back as MESSAGE_CREATE)", async () => {
    const h = await start();
    const key = await obtainApiKey(h, USER);
    // Replies to a later message arrive after the echo of the key's DM has been handled.
    await say(h, '?kv');
    await say(h, '?help');
    await put(h, key, 'works', 'yes');
    expect(keyRow(h, USER)?.key_hash).toEqual(sha256(key));

    // The same holds for the DM that hands over a rotated key.
    h.simulator.sendMessage({ guildId: GUILD, author: USER, content: key });
    const { key: rotated } = await leakNotice(h, USER);
    await say(h, '?kv');
    await put(h, rotated, 'works', 'still');
    expect(keyRow(h, USER)?.key_hash).toEqual(sha256(rotated));
    const dm = h.simulator.dmChannelFor(USER);
    expect(h.simulator.sentMessages(dm).filter((message) => /appeared/.test(message.content))).toHaveLength(
      1,
    );
  });
});

describe('KV commands', () => {
  it('?set keeps a multi-word, multi-line value exactly; ?get, ?kv and ?del', async () => {
    const h = await start();
    const value = 'first line  with two spaces\nsecond line\n\n  indented 😀 café\tend';
    const saved = await say(h, `?set note ${value}`);
    expect(saved.reply.content).toMatch(/Saved/);
    expect(saved.reply.channel_id).toBe(h.simulator.dmChannelFor(USER));
    expect((await presence(h, USER)).kv).toEqual({ note: value });
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({ note: value });

    const got = await say(h, '?get note');
    expect(got.reply.content).toContain(value);
    await say(h, '?set other x');

    const listed = await say(h, '?kv');
    expect(listed.reply.content).toMatch(/note = first line/);
    expect(listed.reply.content).toMatch(/other = x/);

    const missing = await say(h, '?get nothing_here');
    expect(missing.reply.content).toMatch(/not set/);

    const deleted = await say(h, '?del note');
    expect(deleted.reply.content).toMatch(/Deleted/);
    expect((await presence(h, USER)).kv).toEqual({ other: 'x' });
    expect((await say(h, '?get note')).reply.content).toMatch(/not set/);
  });

  it('?set with a bad key explains the rule and writes nothing', async () => {
    const h = await start();
    await say(h, '?set fine 1');
    const before = await h.app.store.kv.getKv(USER);
    const { reply } = await say(h, '?set bad-key! x');
    expect(reply.content).toMatch(/Not saved/);
    expect(reply.content).toMatch(/letters, digits or underscores/);
    expect(reply.content).toMatch(/255/);
    expect(await h.app.store.kv.getKv(USER)).toEqual(before);
    expect((await presence(h, USER)).kv).toEqual({ fine: '1' });
  });

  it('?set past KV_MAX_BYTES says why and writes nothing; a write that fits, or changes nothing, is saved', async () => {
    const h = await start({ KV_MAX_BYTES: '1024' });
    const value = 'x'.repeat(1_000);
    expect((await say(h, `?set note ${value}`)).reply.content).toMatch(/Saved/);
    const before = await h.app.store.kv.getKv(USER);
    const { reply } = await say(h, `?set more ${'y'.repeat(20)}`);
    expect(reply.content).toBe(
      'Not saved: this write would leave 1,028 bytes of KV; the limit is 1,024 (KV_MAX_BYTES).',
    );
    expect(await h.app.store.kv.getKv(USER)).toEqual(before);
    expect((await presence(h, USER)).kv).toEqual({ note: value });

    expect((await say(h, '?set more yy')).reply.content).toMatch(/Saved/);
    expect((await say(h, '?set more yy')).reply.content).toMatch(/Saved/);
    expect((await say(h, '?del never_set')).reply.content).toMatch(/Deleted/);
    expect(await h.app.store.kv.getKv(USER)).toEqual({
      kv: { more: 'yy', note: value },
      revision: before.revision + 1,
    });
  });

  it('?set without a value answers the usage and writes nothing', async () => {
    const h = await start();
    for (const content of ['?set', '?set lonely', '?get', '?del']) {
      const { reply } = await say(h, content);
      expect(reply.content, content).toMatch(/Usage: `\?(set|get|del) /);
    }
    expect(await h.app.store.kv.getKv(USER)).toEqual({ kv: {}, revision: 0 });
  });

  it('?help lists every command, in a server and in DMs', async () => {
    const h = await start();
    const inDm = await say(h, '?help');
    const inServer = await say(h, '?help', { guildId: GUILD });
    for (const { reply } of [inDm, inServer]) {
      for (const name of COMMANDS) expect(reply.content).toContain(`?${name}`);
    }
    expect(inServer.reply.channel_id).not.toBe(h.simulator.dmChannelFor(USER));
  });

  it('an unknown command gets a hint in a DM and no reply in a server', async () => {
    const h = await start();
    const { reply } = await say(h, '?nope');
    expect(reply.content).toContain('?help');

    const ignored = h.simulator.sendMessage({ guildId: GUILD, author: USER, content: '?nope' });
    // Answered in the same channel after any answer the unknown command could have had.
    await say(h, '?help', { guildId: GUILD });
    expect(h.simulator.sentMessages().filter((m) => m.message_reference?.message_id === ignored.id)).toEqual(
      [],
    );
  });

  it('KV commands in a server channel answer "DMs only" and write nothing', async () => {
    const h = await start();
    for (const content of ['?set k v', '?kv', '?get k', '?del k', '?SET k v']) {
      const { reply } = await say(h, content, { guildId: GUILD });
      expect(reply.content, content).toMatch(/DMs only/);
      expect(reply.content).not.toMatch(/Saved|Deleted|not set|Your KV/);
    }
    expect(await h.app.store.kv.getKv(USER)).toEqual({ kv: {}, revision: 0 });
    expect((await presence(h, USER)).kv).toEqual({});
  });
});

describe('monitoring', () => {
  it('keeps the KV of a user who leaves, and shows it again when they come back', async () => {
    const h = await start();
    const key = await obtainApiKey(h, USER);
    await put(h, key, 'kept', 'across leaving');
    await say(h, '?set also via_dm');

    h.simulator.removeMember(GUILD, USER);
    await eventually(async () =>
      expectError(await rest(h, 'GET', `/v1/users/${USER}`), 404, 'user_not_monitored'),
    );
    await expectError(await rest(h, 'GET', '/v1/users/@me', { key }), 404, 'user_not_monitored');
    // Writes while away are kept too.
    await put(h, key, 'away', 'written while away');
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({
      kept: 'across leaving',
      also: 'via_dm',
      away: 'written while away',
    });

    h.simulator.addMember(GUILD, { user: { id: USER, username: 'user' }, presence: { status: 'online' } });
    await eventually(async () => {
      expect((await presence(h, USER)).kv).toEqual({
        kept: 'across leaving',
        also: 'via_dm',
        away: 'written while away',
      });
    });
    await put(h, key, 'back', 'again');
    expect((await presence(h, USER)).kv).toMatchObject({ kept: 'across leaving', back: 'again' });
  });
});

describe('realtime', () => {
  it('publishes kv.changed once per accepted write, with the full KV and a growing revision', async () => {
    const h = await start();
    const key = await obtainApiKey(h, USER);
    const seen: BusMessages['kv.changed'][] = [];
    const unsubscribe = h.app.bus.subscribe('kv.changed', (message) => {
      if (message.userId === USER) seen.push(message);
    });

    await put(h, key, 'a', '1');
    expect(seen).toHaveLength(1);
    const patched = await rest(h, 'PATCH', '/v1/users/@me/kv', {
      key,
      body: '{"b":"2","c":"3"}',
      type: 'application/json',
    });
    expect(patched.status).toBe(204);
    expect(seen).toHaveLength(2);

    // Rejected writes: none announced.
    await expectError(
      await rest(h, 'PUT', '/v1/users/@me/kv/bad-key', { key, body: 'x' }),
      400,
      'invalid_kv_key',
    );
    await expectError(
      await rest(h, 'PATCH', '/v1/users/@me/kv', { key, body: '{"d":"4","e":5}', type: 'application/json' }),
      400,
      'invalid_kv_value',
    );
    await expectError(await rest(h, 'PUT', '/v1/users/@me/kv/z', { body: 'x' }), 401, 'invalid_api_key');
    await expectError(
      await rest(h, 'PUT', `/v1/users/${OTHER}/kv/z`, { key, body: 'x' }),
      403,
      'no_permission',
    );
    await say(h, '?set bad-key! x');
    expect(seen).toHaveLength(2);

    await say(h, '?set d 4 via the bot');
    expect((await rest(h, 'DELETE', '/v1/users/@me/kv/a', { key })).status).toBe(204);

    // Each announces the change it made.
    expect(seen.map((message) => ({ set: message.set, delete: message.delete }))).toEqual([
      { set: [['a', '1']], delete: [] },
      {
        set: [
          ['b', '2'],
          ['c', '3'],
        ],
        delete: [],
      },
      { set: [['d', '4 via the bot']], delete: [] },
      { set: [], delete: ['a'] },
    ]);
    const revisions = seen.map((message) => message.revision);
    for (let i = 1; i < revisions.length; i++) {
      expect(revisions[i]).toBeGreaterThan(revisions[i - 1] as number);
    }
    expect((await h.app.store.kv.getKv(USER)).revision).toBe(revisions.at(-1));
    unsubscribe();
  });
});
