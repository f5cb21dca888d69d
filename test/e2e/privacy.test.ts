import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customStatusActivity, gameActivity } from '../../src/simulator/activities.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Privacy settings through the service as it runs: changed over REST and with the bot, applied to what
 * REST answers at once, with a private user answered exactly as one nobody monitors.
 */

const GUILD = '510000000000000001';
const NOVA = '510000000000000101';
const MIRA = '510000000000000102';
const UNKNOWN = '510000000000000199';
const GAME_APP = '1402418491272986635';
const NOW = Date.now();

describe('privacy settings, end to end', () => {
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    h = await startHarness({
      setup: (sim) => {
        sim.createGuild({
          id: GUILD,
          name: 'Privacy',
          members: [
            {
              user: { id: NOVA, username: 'nova', global_name: 'Nova', avatar: null },
              presence: {
                status: 'online',
                activities: [
                  customStatusActivity({ text: 'HIDE-ME-STATUS', createdAt: NOW }),
                  gameActivity({ name: 'HideMeGame', applicationId: GAME_APP, start: NOW, createdAt: NOW }),
                ],
                client_status: { desktop: 'online' },
              },
            },
            { user: { id: MIRA, username: 'mira', global_name: 'Mira', avatar: null } },
          ],
        });
      },
    });
    await eventually(async () => {
      expect((await fetch(`${h.base}/v1/users/${NOVA}`)).status).toBe(200);
    });
    key = await insertApiKey(h.app.store, NOVA);
  });
  afterAll(() => h?.close());

  const patch = (body: unknown, authorization = key) =>
    fetch(`${h.base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const presenceText = async (id: string, init?: RequestInit) =>
    (await fetch(`${h.base}/v1/users/${id}`, init)).text();

  it('answers every setting at its default for a user who set none', async () => {
    const response = await fetch(`${h.base}/v1/users/@me/privacy`, { headers: { authorization: key } });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { data: unknown }).data).toEqual({
      hide_activity_types: [],
      hide_application_ids: [],
      hide_music_sources: [],
      hide_custom_status: false,
      hide_platforms: false,
      hide_profile: false,
      hide_kv: false,
      record_history: true,
      show_last_seen: true,
      visibility: 'public',
      allow_agents: false,
      paused_until: null,
      opted_in: false,
    });
  });

  it('refuses an unknown field or a bad value, naming it, and changes nothing', async () => {
    for (const [body, field] of [
      [{ hide_everything: true }, 'hide_everything'],
      [{ visibility: 'friends' }, 'visibility'],
      [{ hide_custom_status: true, hide_activity_types: ['gaming'] }, 'hide_activity_types'],
    ] as const) {
      const response = await patch(body);
      expect(response.status).toBe(400);
      const answer = (await response.json()) as { error: { code: string; message: string } };
      expect(answer.error.code).toBe('invalid_privacy_setting');
      expect(answer.error.message).toContain(field);
    }
    const notJson = await fetch(`${h.base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: '{"hide_kv":',
    });
    expect(notJson.status).toBe(400);
    expect(((await notJson.json()) as { error: { code: string } }).error.code).toBe(
      'invalid_privacy_setting',
    );
    expect(await presenceText(NOVA)).toContain('HIDE-ME-STATUS');
    const settings = await fetch(`${h.base}/v1/users/@me/privacy`, { headers: { authorization: key } });
    expect(
      ((await settings.json()) as { data: { hide_custom_status: boolean } }).data.hide_custom_status,
    ).toBe(false);
  });

  it('refuses a change without a live key before reading the body', async () => {
    const response = await patch({ hide_kv: true }, 'prs_not-a-key');
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
  });

  it('hides what a change names from the next read, and keeps what it does not name', async () => {
    const first = await patch({ hide_custom_status: true });
    expect(first.status).toBe(200);
    expect(((await first.json()) as { data: unknown }).data).toMatchObject({
      hide_custom_status: true,
      hide_application_ids: [],
    });
    const text = await presenceText(NOVA);
    expect(text).not.toContain('HIDE-ME-STATUS');
    expect(JSON.parse(text).data.privacy).toEqual({ hidden: ['custom_status'] });

    const second = await patch({ hide_application_ids: [GAME_APP] });
    expect(((await second.json()) as { data: unknown }).data).toMatchObject({
      hide_custom_status: true,
      hide_application_ids: [GAME_APP],
    });
    const both = await presenceText(NOVA);
    expect(both).not.toContain('HIDE-ME-STATUS');
    expect(both).not.toContain('HideMeGame');
  });

  it('answers a private user exactly as a user nobody monitors, but to the owner', async () => {
    expect((await patch({ visibility: 'private' })).status).toBe(200);
    const strip = (text: string) => text.replaceAll(NOVA, 'ID').replaceAll(UNKNOWN, 'ID');
    const [privateAnswer, unknownAnswer] = await Promise.all([
      fetch(`${h.base}/v1/users/${NOVA}`),
      fetch(`${h.base}/v1/users/${UNKNOWN}`),
    ]);
    expect(privateAnswer.status).toBe(404);
    expect(strip(await privateAnswer.text())).toBe(strip(await unknownAnswer.text()));
    expect([...privateAnswer.headers.keys()]).toEqual([...unknownAnswer.headers.keys()]);

    const bulk = (await (await fetch(`${h.base}/v1/users?ids=${NOVA},${MIRA}`)).json()) as { data: object };
    expect(Object.keys(bulk.data)).toEqual([MIRA]);

    const own = await fetch(`${h.base}/v1/users/@me`, { headers: { authorization: key } });
    expect(own.status).toBe(200);
    const ownText = await own.text();
    expect(ownText).not.toContain('HIDE-ME-STATUS');
    expect(JSON.parse(ownText).data.discord_user.id).toBe(NOVA);

    expect((await patch({ visibility: 'public' })).status).toBe(200);
    expect((await fetch(`${h.base}/v1/users/${NOVA}`)).status).toBe(200);
  });

  it('changes settings with the bot, in a DM', async () => {
    const dm = h.simulator.dmChannelFor(NOVA);
    const sent = h.simulator.sendMessage({
      channelId: dm,
      author: NOVA,
      content: '?privacy show custom_status',
    });
    await h.simulator.waitForMessage(
      (message) => message.channel_id === dm && message.message_reference?.message_id === sent.id,
    );
    expect(await presenceText(NOVA)).toContain('HIDE-ME-STATUS');
  });
});
