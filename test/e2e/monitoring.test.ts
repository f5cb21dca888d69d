import { afterEach, describe, expect, it } from 'vitest';
import { customStatusActivity } from '../../src/simulator/activities.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Who is monitored, as the operator chooses: everyone (the default), only those who asked (`MONITOR=opt-in`:
 * `?start`, a key, the role of MONITOR_ROLE_ID), only some servers (GUILD_IDS) or users
 * (ALLOWED_USER_IDS). Whoever is not monitored is dropped where Discord's payloads come in: never held,
 * served, recorded or sent on.
 */

const GUILD = '520000000000000001';
const OTHER_GUILD = '520000000000000002';
const ROLE = '520000000000000077';
const ANNA = '520000000000000101';
const BEN = '520000000000000102';
const CARA = '520000000000000103';
const NOW = Date.now();

const online = (text: string) => ({
  status: 'online' as const,
  activities: [customStatusActivity({ text, createdAt: NOW })],
  client_status: { desktop: 'online' as const },
});

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start(env: Record<string, string>): Promise<Harness> {
  h = await startHarness({
    env,
    setup: (sim) => {
      sim.createGuild({
        id: GUILD,
        name: 'Opt-in',
        members: [
          { user: { id: ANNA, username: 'anna' }, presence: online('ANNA-STATUS') },
          { user: { id: BEN, username: 'ben' }, presence: online('BEN-STATUS'), roles: [ROLE] },
        ],
      });
      sim.createGuild({
        id: OTHER_GUILD,
        name: 'Elsewhere',
        members: [{ user: { id: CARA, username: 'cara' }, presence: online('CARA-STATUS') }],
      });
    },
  });
  const harness = h;
  // Ready: every guild listed, so whoever is not monitored by now was left out, not yet to come.
  await eventually(async () => expect((await fetch(`${harness.base}/v1/ready`)).status).toBe(200));
  await harness.app.registry.allRendered();
  return harness;
}

const status = async (id: string) => (await fetch(`${h?.base}/v1/users/${id}`)).status;

/** Sends a command in a DM and resolves with the bot's reply. */
async function command(harness: Harness, userId: string, content: string): Promise<string> {
  const dm = harness.simulator.dmChannelFor(userId);
  const sent = harness.simulator.sendMessage({ channelId: dm, author: userId, content });
  const reply = await harness.simulator.waitForMessage(
    (message) => message.channel_id === dm && message.message_reference?.message_id === sent.id,
  );
  return reply.content;
}

describe('MONITOR=opt-in', () => {
  it('monitors nobody who did not ask, but the role holders, and says how to ask', async () => {
    const harness = await start({ MONITOR: 'opt-in', MONITOR_ROLE_ID: ROLE });
    expect(await status(BEN)).toBe(200);
    expect(harness.app.registry.isMonitored(ANNA)).toBe(false);
    const refused = await fetch(`${harness.base}/v1/users/${ANNA}`);
    expect(refused.status).toBe(404);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('user_not_monitored');
    expect(body.error.message).toContain('send it `?start` in a direct message');
    expect(harness.changes.some((change) => change.userId === ANNA)).toBe(false);
  });

  it('monitors a member from `?start` on, at once, and lets them go when they opt out', async () => {
    const harness = await start({ MONITOR: 'opt-in' });
    expect(harness.app.registry.isMonitored(ANNA)).toBe(false);
    expect(await command(harness, ANNA, '?start')).toContain('you are monitored from now on');
    await eventually(async () => expect(await status(ANNA)).toBe(200));
    expect(await (await fetch(`${harness.base}/v1/users/${ANNA}`)).text()).toContain('ANNA-STATUS');

    const key = await insertApiKey(harness.app.store, ANNA);
    const out = await fetch(`${harness.base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ opted_in: false }),
    });
    expect(out.status).toBe(200);
    expect(await status(ANNA)).toBe(404);
    expect(harness.changes.at(-1)).toMatchObject({ kind: 'unmonitored', userId: ANNA });
    // What Discord says of them from now on is dropped where it comes in; the bot's answer to a later
    // message on the same connection says it has been handled.
    const seen = harness.changes.length;
    harness.simulator.setPresence(ANNA, online('ANNA-AGAIN'));
    await command(harness, BEN, '?help');
    expect(harness.changes.length).toBe(seen);
    expect(harness.app.registry.isMonitored(ANNA)).toBe(false);
  });

  it('opts in whoever gets a key, and whoever is given the role', async () => {
    const harness = await start({ MONITOR: 'opt-in', MONITOR_ROLE_ID: ROLE });
    await command(harness, ANNA, '?apikey');
    await eventually(async () => expect(await status(ANNA)).toBe(200));

    harness.simulator.updateMember(GUILD, { user: { id: BEN, username: 'ben' }, roles: [] });
    await eventually(async () => expect(await status(BEN)).toBe(404));
    harness.simulator.updateMember(GUILD, { user: { id: BEN, username: 'ben' }, roles: [ROLE] });
    await eventually(async () => expect(await status(BEN)).toBe(200));
  });

  it('lets a member go with `?stop confirm`, erasing what was kept, and takes them back with `?start`', async () => {
    const harness = await start({ MONITOR: 'opt-in' });
    await command(harness, ANNA, '?start');
    await eventually(async () => expect(await status(ANNA)).toBe(200));
    const key = await insertApiKey(harness.app.store, ANNA);
    const written = await fetch(`${harness.base}/v1/users/@me/kv/city`, {
      method: 'PUT',
      headers: { authorization: key },
      body: 'Lisbon',
    });
    expect(written.status).toBe(204);

    expect(await command(harness, ANNA, '?stop')).toContain('`?stop confirm`');
    expect(await status(ANNA)).toBe(200);
    expect(await command(harness, ANNA, '?stop confirm')).toContain('you are no longer monitored');
    expect(await status(ANNA)).toBe(404);
    expect((await harness.app.store.kv.getKv(ANNA)).kv).toEqual({});
    expect(await harness.app.store.privacy.getPrivacy(ANNA)).toBeUndefined();
    const refused = await fetch(`${harness.base}/v1/users/@me`, { headers: { authorization: key } });
    expect(refused.status).toBe(401);

    await command(harness, ANNA, '?start');
    await eventually(async () => expect(await status(ANNA)).toBe(200));
    const back = (await (await fetch(`${harness.base}/v1/users/${ANNA}`)).json()) as { data: { kv: object } };
    expect(back.data.kv).toEqual({});
  });

  it("takes a role as one guild's: another guild's roles neither drop nor keep its holder", async () => {
    const harness = await start({ MONITOR: 'opt-in', MONITOR_ROLE_ID: ROLE });
    harness.simulator.addMember(OTHER_GUILD, { user: { id: BEN, username: 'ben' }, roles: [] });
    harness.simulator.updateMember(OTHER_GUILD, { user: { id: BEN, username: 'ben' }, roles: [] });
    // Handled in order: once the bot answers a later message, both member payloads have been.
    await command(harness, ANNA, '?help');
    expect(await status(BEN)).toBe(200);
    expect(harness.app.registry.guildIds().sort()).toEqual([GUILD, OTHER_GUILD].sort());

    // Losing the role where it was given lets him go in every guild, not only that one.
    harness.simulator.updateMember(GUILD, { user: { id: BEN, username: 'ben' }, roles: [] });
    await eventually(async () => expect(await status(BEN)).toBe(404));
    expect(harness.app.registry.isMonitored(BEN)).toBe(false);
  });

  it('writes nothing of a member after they stop and everything kept is erased', async () => {
    const harness = await start({ MONITOR: 'opt-in' });
    await command(harness, ANNA, '?start');
    await eventually(async () => expect(await status(ANNA)).toBe(200));
    await harness.app.history.flush();
    await command(harness, ANNA, '?stop confirm');
    await harness.app.history.flush();
    expect(await harness.app.store.history.history(ANNA, 10)).toEqual({ status: [], tracks: [] });
    expect((await harness.app.store.history.stats(ANNA)).lastSeen).toBeNull();
  });

  it('tells a user of an instance that monitors everyone that there is nothing to start or stop', async () => {
    const harness = await start({});
    expect(await status(ANNA)).toBe(200);
    expect(await command(harness, ANNA, '?start')).toContain('there is nothing to start');
    expect(await command(harness, ANNA, '?stop confirm')).toContain('leave them to stop');
    expect(await status(ANNA)).toBe(200);
  });
});

describe('GUILD_IDS and ALLOWED_USER_IDS', () => {
  it('ignores the servers not named', async () => {
    const harness = await start({ GUILD_IDS: GUILD });
    expect(await status(ANNA)).toBe(200);
    expect(await status(CARA)).toBe(404);
    // Dispatched in order: once ANNA's later presence shows, CARA's earlier one has been dropped.
    harness.simulator.setPresence(CARA, online('CARA-AGAIN'));
    harness.simulator.setPresence(ANNA, online('ANNA-AGAIN'));
    await eventually(async () =>
      expect(await (await fetch(`${harness.base}/v1/users/${ANNA}`)).text()).toContain('ANNA-AGAIN'),
    );
    expect(harness.app.registry.isMonitored(CARA)).toBe(false);
    expect(harness.app.registry.guildIds()).toEqual([GUILD]);
  });

  it('serves only the users named', async () => {
    await start({ ALLOWED_USER_IDS: `${BEN},${CARA}` });
    expect(await status(BEN)).toBe(200);
    expect(await status(CARA)).toBe(200);
    expect(await status(ANNA)).toBe(404);
  });
});
