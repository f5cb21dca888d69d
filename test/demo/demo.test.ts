import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DEMO_USERS } from '../../src/demo/cast.js';
import { demoPresences } from '../../src/demo/script.js';
import { createLogger } from '../../src/log.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * Demo mode as a visitor tries it: the service prints an API key of the featured demo user's, whose KV
 * already holds a few entries, and the key writes it. And the demo world, every moment of it, goes
 * through the real gateway client and comes out of the API.
 */

const NOVA = DEMO_USERS.nova.id;
const GUILD = '700000000000000001';
const KEY_LINE =
  /demo mode: API key of Nova \(94490510688792576\), for the KV and privacy routes: (prs_[\w-]{43})\b/;

type Json = Record<string, unknown>;

/** A presence as the API serves it. */
async function presenceOf(
  base: string,
  id: string,
): Promise<{ activities: Json[]; kv: Record<string, string> }> {
  const response = await fetch(`${base}/v1/users/${id}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { activities: Json[]; kv: Record<string, string> } }).data;
}

/** What a viewer reads of an activity. */
function shown(activity: unknown): string {
  const { type, name, details, state } = activity as Record<string, unknown>;
  return [type, name, details, state].join(' | ');
}

function patchKv(base: string, path: string, key: string, body: Json): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: 'PATCH',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('demo mode', () => {
  const lines: string[] = [];
  let app: App;

  beforeAll(async () => {
    app = await startApp(
      loadConfig({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: '0', RATE_LIMIT_READ: '0' }),
      { logger: createLogger('info', false, { write: (line: string) => void lines.push(line) }) },
    );
    await eventually(() => expect(app.view.size).toBe(Object.keys(DEMO_USERS).length));
  });

  afterAll(async () => {
    await app?.close();
  });

  it("prints one line with an API key of Nova's; Nova's KV has entries from the start, and the key writes it", async () => {
    const keyLines = lines.filter((line) => line.includes('API key'));
    expect(keyLines).toHaveLength(1);
    const key = KEY_LINE.exec(keyLines[0] ?? '')?.[1] ?? '';
    expect(key, keyLines[0]).not.toBe('');

    await eventually(async () =>
      expect((await presenceOf(app.url, NOVA)).kv).toEqual({
        location: 'Lisbon, Portugal',
        mood: 'curious',
        website: 'https://nova.example',
      }),
    );

    const written = await patchKv(app.url, '/v1/users/@me/kv', key, {
      mood: 'sleepy',
      now: 'trying the demo',
    });
    expect(written.status).toBe(204);
    expect((await presenceOf(app.url, NOVA)).kv).toMatchObject({ mood: 'sleepy', now: 'trying the demo' });

    // Nova's key, not anyone's.
    const other = await patchKv(app.url, `/v1/users/${DEMO_USERS.kai.id}/kv`, key, { mood: 'x' });
    expect(other.status).toBe(403);
  });

  it("shows a user who hides something, and Nova's key changes what she hides, live", async () => {
    const key = KEY_LINE.exec(lines.find((line) => line.includes('API key')) ?? '')?.[1] ?? '';
    const juno = (await (await fetch(`${app.url}/v1/users/${DEMO_USERS.juno.id}`)).json()) as { data: Json };
    expect(juno.data.privacy).toEqual({ hidden: ['platforms'] });
    expect(juno.data.active_on_discord_web).toBe(false);

    const before = (await (await fetch(`${app.url}/v1/users/${NOVA}`)).json()) as { data: Json };
    expect(before.data.custom_status).not.toBeNull();
    const changed = await patchKv(app.url, '/v1/users/@me/privacy', key, { hide_custom_status: true });
    expect(changed.status).toBe(200);
    const after = (await (await fetch(`${app.url}/v1/users/${NOVA}`)).json()) as { data: Json };
    expect(after.data.custom_status).toBeNull();
    expect(after.data.privacy).toEqual({ hidden: ['custom_status'] });
  });

  it('the landing page lets a visitor try the bot: /presently as Nova, answered as Discord would', async () => {
    const page = await (await fetch(app.url, { headers: { accept: 'text/html' } })).text();
    expect(page).toContain('id="try-bot"');
    // Printed at start, and on the page: added to a server with the commands' scope and no permissions, or
    // installed by a user.
    const printed = lines.find((line) => line.includes('add the bot to a server'));
    expect(JSON.parse(printed ?? '{}')).toMatchObject({
      server: expect.stringMatching(/scope=bot\+applications\.commands&permissions=0/),
      user: expect.stringMatching(/scope=applications\.commands&integration_type=1$/),
    });
    expect(page).toMatch(
      /client_id=\d+&amp;scope=bot\+applications\.commands&amp;permissions=0&amp;integration_type=0">to a server</,
    );
    expect(page).toMatch(/scope=applications\.commands&amp;integration_type=1">install it for yourself</);
    const bot = async (body: Json) => {
      const response = await fetch(`${app.url}/demo/bot`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Json };
    };
    await eventually(async () => expect((await bot({ command: 'help' })).status).toBe(200));

    const set = await bot({ command: '/presently kv set key:tried value:the bot, from the page' });
    expect(set.body).toEqual({
      success: true,
      data: { content: 'Saved `tried`.', ephemeral: true, buttons: [], files: [] },
    });
    expect((await presenceOf(app.url, NOVA)).kv.tried).toBe('the bot, from the page');

    const asked = (await bot({ command: 'forget all:true' })).body.data as {
      buttons: Array<{ interaction: string; custom_id: string }>;
    };
    const [button] = asked.buttons;
    expect(button).toBeDefined();
    const done = await bot({ interaction: button?.interaction, button: button?.custom_id });
    expect((done.body.data as { content: string }).content).toMatch(/^Done: erased/);
    expect((await presenceOf(app.url, NOVA)).kv).toEqual({});

    const refused = await bot({ command: 'kv frobnicate' });
    expect(refused.status).toBe(400);
    expect((refused.body.error as { code: string }).code).toBe('bad_request');
  });
});

describe('with a bot token', () => {
  it('prints no API key', async () => {
    const lines: string[] = [];
    const harness = await startHarness({
      logger: createLogger('info', false, { write: (line: string) => void lines.push(line) }),
      setup: (sim) =>
        sim.createGuild({ id: GUILD, name: 'Real', members: [{ user: { id: NOVA, username: 'nova' } }] }),
    });
    try {
      await eventually(() => expect(lines.join('')).toContain('every guild loaded'));
      expect(harness.app.demo).toBeNull();
      expect(lines.join('')).not.toMatch(/API key|prs_/);
    } finally {
      await harness.close();
    }
  });
});

describe('the demo world', () => {
  const STEP_MS = 5_000;
  const SPAN_MS = 180_000;
  let harness: Harness;

  beforeAll(async () => {
    harness = await startHarness({
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Demo',
          members: Object.values(DEMO_USERS).map((user) => ({ user: { ...user, discriminator: '0' } })),
        }),
    });
  });

  afterAll(async () => {
    await harness?.close();
  });

  it('every moment of it is served, and it shows the shapes found in the wild', {
    timeout: 60_000,
  }, async () => {
    const startedAt = Date.now();
    const seen = new Set<string>();
    for (let elapsed = 0; elapsed <= SPAN_MS; elapsed += STEP_MS) {
      const presences = demoPresences(startedAt, startedAt + elapsed);
      for (const [id, presence] of presences) harness.simulator.setPresence(id, presence);
      for (const [id, presence] of presences) {
        const served = await eventually(async () => {
          const { activities } = await presenceOf(harness.base, id);
          expect(activities.map(shown)).toEqual(presence.activities.map(shown));
          return activities;
        });
        for (const activity of served) {
          expect(activity.application_id ?? '').toEqual(expect.any(String));
          const assets = (activity.assets ?? {}) as Json;
          seen.add(`${activity.type} ${activity.name}${activity.url ? ' url' : ''}`);
          if (assets.large_text === 'PreMiD • v2.7.4') seen.add('PreMiD without an album');
          if (String(assets.large_image).startsWith('mp:attachments/')) seen.add('an attachment image');
        }
      }
    }
    expect([...seen]).toEqual(
      expect.arrayContaining([
        '1 Twitch url',
        '3 Crunchyroll',
        '5 Rocket League',
        '2 Apple Music',
        '2 YouTube Music',
        '0 YouTube Music',
        'PreMiD without an album',
        '2 Foobar Radio',
        '0 Lumen Drift',
        'an attachment image',
        '2 Spotify',
      ]),
    );
    expect(harness.fatal).toEqual([]);
  });
});
