import type { APIMessage } from 'discord-api-types/v10';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { keyFrom, keysIn, obtainApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';

/**
 * A key the bot DMs works the moment its owner can read it: the simulated Discord lets a reader use each
 * key it is handed before it answers the bot's request, so the reader is as fast as a reader can be. On
 * the embedded store and on PostgreSQL, whose writes take longer than a DM's answer.
 */

const hasPostgres = await postgresAvailable('key handover on PostgreSQL, end to end');
const GUILD = '400000000000000001';
const USER = '80351110224678912';
const OTHER = '80351110224678913';

let database: TestDatabase | undefined;
let harness: Harness | undefined;
beforeAll(async () => {
  if (hasPostgres) database = await createTestDatabase();
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await database?.drop();
});

async function start(env: Record<string, string>): Promise<Harness> {
  harness = await startHarness({
    // MESSAGE_CONTENT on: a key leaked in a server channel is read too.
    env: { MESSAGE_CONTENT: 'on', ...env },
    setup: (sim) => {
      sim.createGuild({
        id: GUILD,
        name: 'Keys Guild',
        members: [
          { user: { id: USER, username: 'user' }, presence: { status: 'online' } },
          { user: { id: OTHER, username: 'other' }, presence: { status: 'online' } },
        ],
      });
    },
  });
  const h = harness;
  await eventually(() => expect(h.app.registry.isMonitored(USER)).toBe(true));
  return h;
}

async function statusWith(h: Harness, key: string): Promise<number> {
  const response = await fetch(`${h.base}/v1/users/@me`, { headers: { authorization: key } });
  await response.arrayBuffer();
  return response.status;
}

/**
 * What each key in the user's DMs answered the instant it could be read, with the old key beside it;
 * the keys, in the order read.
 */
function readKeysAsTheyArrive(h: Harness, old: string) {
  const dm = h.simulator.dmChannelFor(USER);
  const readings: { fresh: number; old: number }[] = [];
  const keys: string[] = [];
  h.simulator.readEachMessage(async (message: APIMessage) => {
    if (message.channel_id !== dm || keysIn(message.content).length === 0) return;
    const key = keyFrom(message);
    keys.push(key);
    readings.push({ fresh: await statusWith(h, key), old: await statusWith(h, old) });
  });
  return { readings, keys };
}

const STORES: { name: string; env: () => Promise<Record<string, string>>; skip: boolean }[] = [
  { name: 'SQLite', env: async () => ({}), skip: false },
  {
    name: 'PostgreSQL',
    env: async () => ({ DATABASE_URL: await (database as TestDatabase).schema() }),
    skip: !hasPostgres,
  },
];

for (const { name, env, skip } of STORES) {
  describe.skipIf(skip)(`a key handed over by DM, on ${name}`, () => {
    it('?apikey: works the instant its DM can be read, beside the old key; the old key is dead once Discord answered', async () => {
      const h = await start(await env());
      const old = await obtainApiKey(h, USER);
      const { readings, keys } = readKeysAsTheyArrive(h, old);
      const dm = h.simulator.dmChannelFor(USER);
      h.simulator.sendMessage({ channelId: dm, author: USER, content: '?apikey' });
      await eventually(() => expect(readings).toHaveLength(1));
      expect(readings).toEqual([{ fresh: 200, old: 200 }]);

      await eventually(async () => expect(await statusWith(h, old)).toBe(401));
      expect(await statusWith(h, keys[0] as string)).toBe(200);
    });

    it('a leaked key: its replacement works the instant its DM can be read; the leaked one never again', async () => {
      const h = await start(await env());
      const old = await obtainApiKey(h, USER);
      const { readings, keys } = readKeysAsTheyArrive(h, old);
      h.simulator.sendMessage({ guildId: GUILD, author: OTHER, content: `found this: ${old}` });
      await eventually(() => expect(readings).toHaveLength(1));
      expect(readings).toEqual([{ fresh: 200, old: 401 }]);
      expect(await statusWith(h, keys[0] as string)).toBe(200);
    });

    it('a DM Discord refuses: the old key works on, and the key it carried never works', async () => {
      const h = await start(await env());
      const old = await obtainApiKey(h, USER);
      const added = vi.spyOn(h.app.store.apiKeys, 'addPendingKey');
      const dm = h.simulator.dmChannelFor(USER);
      h.simulator.faults.refuseNextMessage(dm);
      const sent = h.simulator.sendMessage({ channelId: dm, author: USER, content: '?apikey' });
      const reply = await h.simulator.waitForMessage(
        (message) => message.message_reference?.message_id === sent.id,
      );
      expect(reply.content).toMatch(/^I could not send you a new API key/);
      expect(added).toHaveBeenCalledTimes(1);
      const hash = added.mock.calls[0]?.[1] as Buffer;
      expect(await h.app.store.apiKeys.findKey(hash)).toBeUndefined();
      expect(await statusWith(h, old)).toBe(200);
    });
  });
}
