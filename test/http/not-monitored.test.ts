import { afterEach, describe, expect, it } from 'vitest';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * `user_not_monitored` says how to become monitored: the bot to share a server with, by the name the
 * gateway gave it, and the instance's invite when it has one. Every route that answers it says the same.
 */

const WATCHED = '80351110224678912';
const STRANGER = '123456789012345678';
const GUILD = '300000000000000003';
const INVITE = 'https://discord.gg/presently-test';

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(env: Record<string, string> = {}): Promise<Harness> {
  harness = await startHarness({
    env,
    simulator: { botUser: { username: 'Watcher', discriminator: '4242' } },
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [{ user: { id: WATCHED, username: 'watched' }, presence: { status: 'online' } }],
      }),
  });
  const h = harness;
  // Members are listed after READY: once one is known, so is the bot.
  await eventually(() => expect(h.app.view.get(WATCHED)).toBeDefined());
  return h;
}

/** The message of each route that answers `user_not_monitored`, for a user nobody shares a server with. */
async function messages(h: Harness): Promise<string[]> {
  const key = await insertApiKey(h.app.store, STRANGER);
  const reads: [string, RequestInit][] = [
    [`/v1/users/${STRANGER}`, {}],
    [`/v1/users/%3${STRANGER.slice(0, 1)}${STRANGER.slice(1)}`, {}],
    ['/v1/users/@me', { headers: { authorization: key } }],
    [`/${STRANGER}.png`, { redirect: 'manual' }],
  ];
  return Promise.all(
    reads.map(async ([path, init]) => {
      const response = await fetch(`${h.base}${path}`, init);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(response.status, path).toBe(404);
      expect(body.error.code, path).toBe('user_not_monitored');
      return body.error.message;
    }),
  );
}

describe('user_not_monitored', () => {
  it('names the bot and the invite when DISCORD_INVITE_URL is set', async () => {
    const h = await start({ DISCORD_INVITE_URL: INVITE });
    const expected = `User ${STRANGER} is not being monitored by Presently: join a server the bot Watcher#4242 is in (invite: ${INVITE})`;
    expect(await messages(h)).toEqual([expected, expected, expected, expected]);
  });

  it('names the bot alone without one', async () => {
    const h = await start();
    const expected = `User ${STRANGER} is not being monitored by Presently: join a server the bot Watcher#4242 is in`;
    expect(await messages(h)).toEqual([expected, expected, expected, expected]);
  });

  it('follows a new name of the bot', async () => {
    const h = await start();
    h.simulator.updateUser({ id: h.simulator.botUser.id, username: 'Lookout', discriminator: '0' });
    await eventually(async () => {
      const response = await fetch(`${h.base}/v1/users/${STRANGER}`);
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error.message).toContain('the bot Lookout is in');
    });
  });
});
