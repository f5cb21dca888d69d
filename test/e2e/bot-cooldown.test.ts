import { createHash } from 'node:crypto';
import type { APIMessage } from 'discord-api-types/v10';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SqliteStore } from '../../src/store/sqlite/index.js';
import { keyFrom, keysIn, untilLive } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * A user who floods the bot with commands: through the simulated Discord's DMs and the real gateway
 * client, as a spammer would. Past their budget the commands are not run — ?apikey and ?set write — and
 * the bot says "slow down" once rather than answering each, so the spam does not become the bot's spam.
 */

const GUILD = '400000000000000001';
const USER = '80351110224678912';
const OTHER = '80351110224678913';
/** Three commands in a row, then one every two seconds. */
const BURST = 3;
const PER_MINUTE = 30;
const REFILL_MS = 60_000 / PER_MINUTE;

let harness: Harness | undefined;

afterEach(async () => {
  vi.useRealTimers();
  await harness?.close();
  harness = undefined;
});

async function start(): Promise<Harness> {
  harness = await startHarness({
    // MESSAGE_CONTENT on: commands in a server channel count too.
    env: {
      BOT_COMMAND_BURST: String(BURST),
      BOT_COMMANDS_PER_MINUTE: String(PER_MINUTE),
      MESSAGE_CONTENT: 'on',
    },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Spam Guild',
        members: [
          { user: { id: USER, username: 'spammer' }, presence: { status: 'online' } },
          { user: { id: OTHER, username: 'bystander' }, presence: { status: 'online' } },
        ],
      }),
  });
  const h = harness;
  await eventually(() => expect(h.app.registry.isMonitored(OTHER)).toBe(true));
  return h;
}

function replyTo(h: Harness, sent: APIMessage): APIMessage | undefined {
  return h.simulator.sentMessages().find((message) => message.message_reference?.message_id === sent.id);
}

function storedKeyHash(h: Harness, userId: string): Buffer | undefined {
  const row = (h.app.store as SqliteStore).db
    .prepare('SELECT key_hash FROM api_keys WHERE user_id = ?')
    .get(userId) as { key_hash: Buffer } | undefined;
  return row?.key_hash;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

describe('bot command cooldown', () => {
  it('runs a burst, says "slow down" once, and runs nothing else until the budget refills', async () => {
    // The budget refills on the wall clock: here the test's, which moves only when told.
    vi.useFakeTimers({ toFake: ['Date'] });
    const h = await start();
    const dm = h.simulator.dmChannelFor(USER);
    const send = (content: string) => h.simulator.sendMessage({ channelId: dm, author: USER, content });

    // Sent back to back, the way a script would.
    const flood = [
      send('?apikey'),
      send('?apikey'),
      send('?apikey'),
      send('?set spam 1'),
      send('?apikey'),
      send('?set spam 2'),
      send('?help'),
    ];
    const answered = await eventually(() => {
      const replies = flood.slice(0, BURST + 1).map((sent) => replyTo(h, sent));
      expect(replies.every((reply) => reply !== undefined)).toBe(true);
      return replies as APIMessage[];
    });
    const keys = answered.slice(0, BURST).map((reply) => keyFrom(reply));
    expect(new Set(keys).size).toBe(BURST);
    const slowDown = answered[BURST] as APIMessage;
    expect(slowDown.channel_id).toBe(dm);
    expect(slowDown.content).toMatch(/slow down/i);
    expect(slowDown.content).toMatch(/try again in [12] s/i);
    expect(keysIn(slowDown.content)).toEqual([]);

    // Short of a command's worth, the user is still ignored.
    vi.advanceTimersByTime(REFILL_MS - 1);
    const early = send('?apikey');
    // Another user's command, once answered, was taken after it: the early one was judged by now.
    const other = h.simulator.sendMessage({
      channelId: h.simulator.dmChannelFor(OTHER),
      author: OTHER,
      content: '?help',
    });
    await h.simulator.waitForMessage((m) => m.message_reference?.message_id === other.id);
    // No key was made but the burst's.
    const stored = storedKeyHash(h, USER);
    expect(keys.map(sha256).some((hash) => stored?.equals(hash))).toBe(true);

    // Once a command's worth has refilled, the user is answered again, and ?apikey works.
    vi.advanceTimersByTime(1);
    const again = send('?apikey');
    const reply = await h.simulator.waitForMessage((m) => m.message_reference?.message_id === again.id);
    // Its answer, in the same channel, comes after any the commands before it could have had: the rest
    // of the flood and the early one got none, and made no key and wrote nothing.
    // (A user's keys are handed over one after another, so the "slow down" may come between them.)
    for (const sent of [...flood.slice(BURST + 1), early]) expect(replyTo(h, sent)).toBeUndefined();
    const inChannel = h.simulator.sentMessages(dm);
    expect(inChannel.at(-1)).toEqual(reply);
    expect(new Set(inChannel.map((message) => message.id))).toEqual(
      new Set([...answered, reply].map((message) => message.id)),
    );
    expect(inChannel).toHaveLength(answered.length + 1);
    expect((await h.app.store.kv.getKv(USER)).kv).toEqual({});
    const fresh = keyFrom(reply);
    await untilLive(h.base, fresh);
    expect(storedKeyHash(h, USER)).toEqual(sha256(fresh));
    const write = await fetch(`${h.base}/v1/users/@me/kv/after`, {
      method: 'PUT',
      headers: { authorization: fresh },
      body: 'calm again',
    });
    expect(write.status).toBe(204);
  });

  it("is per user: one user's flood does not slow anyone else down", async () => {
    const h = await start();
    const dm = h.simulator.dmChannelFor(USER);
    for (let i = 0; i < BURST + 3; i++)
      h.simulator.sendMessage({ channelId: dm, author: USER, content: '?kv' });
    await h.simulator.waitForMessage((m) => m.channel_id === dm && /slow down/i.test(m.content));

    const other = h.simulator.dmChannelFor(OTHER);
    for (const content of ['?help', '?set mine yes', '?get mine']) {
      const sent = h.simulator.sendMessage({ channelId: other, author: OTHER, content });
      const reply = await h.simulator.waitForMessage((m) => m.message_reference?.message_id === sent.id);
      expect(reply.content).not.toMatch(/slow down/i);
    }
    expect((await h.app.store.kv.getKv(OTHER)).kv).toEqual({ mine: 'yes' });
  });

  it('counts commands in servers too, and answers the flood there once', async () => {
    const h = await start();
    const sent = Array.from({ length: BURST + 3 }, () =>
      h.simulator.sendMessage({ guildId: GUILD, author: USER, content: '?help' }),
    );
    await eventually(() => expect(replyTo(h, sent[BURST] as APIMessage)?.content).toMatch(/slow down/i));
    // Another user's command in the same channel is answered after anything the flood could have had.
    const marker = h.simulator.sendMessage({ guildId: GUILD, author: OTHER, content: '?help' });
    await h.simulator.waitForMessage((m) => m.message_reference?.message_id === marker.id);
    const answered = sent.filter((message) => replyTo(h, message) !== undefined);
    expect(answered).toHaveLength(BURST + 1);
  });
});
