import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE_FETCH_TIMEOUT_MS } from '../../../src/card/images.js';
import { THEMES } from '../../../src/card/theme.js';
import { CARD_CONTENT_SECURITY_POLICY } from '../../../src/http/card-serving.js';
import { defaultAvatarIndex } from '../../../src/presence/normalize/avatar.js';
import {
  customStatusActivity,
  gameActivity,
  spotifyLocalFileActivity,
} from '../../../src/simulator/activities.js';
import { DEFAULT_AVATAR_COLOURS as SIMULATOR_DEFAULT_AVATAR_COLOURS } from '../../../src/simulator/cdn.js';
import { colourFor, solidPng } from '../../../src/simulator/png.js';
import { byClass, type ParsedElement, parseCard, visible, walk } from '../../card/support.js';
import { eventually } from '../../support/eventually.js';
import { type Harness, startHarness } from '../../support/harness.js';

/**
 * `GET /v1/users/:id/card.svg` over real HTTP: the service connected to the simulated Discord, whose CDN
 * serves the avatars, emoji and app assets the card inlines.
 */

const GUILD = '400000000000000001';
const NOVA = {
  id: '94490510688792576',
  username: 'nova',
  global_name: 'Nova',
  avatar: '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b',
};
const MIRA = { id: '381456437152087040', username: 'mira', global_name: 'Mira', avatar: null };
const JUNO = { id: '725054734427766827', username: 'juno_', global_name: 'Juno', avatar: null };
const UNKNOWN = '123456789012345678';
const APP = '512035578624524288';
const ASSET = '512036254624989184';
const EMOJI = '887330474925178910';
const SECOND_APP = '463097721130188830';
const SECOND_ASSET = '463097721130188831';

let harness: Harness;
let base: string;

beforeAll(async () => {
  const now = Date.now();
  harness = await startHarness({
    setup: (sim) => {
      sim.createGuild({
        id: GUILD,
        name: 'Cards',
        members: [
          {
            user: NOVA,
            presence: {
              status: 'online',
              activities: [
                customStatusActivity({ text: 'on repeat', emoji: { name: '🎧' } }),
                spotifyLocalFileActivity({ song: 'Demo tape', start: now - 30_000, end: now + 90_000 }),
              ],
            },
          },
          {
            user: MIRA,
            presence: {
              status: 'dnd',
              activities: [
                gameActivity({ name: 'Celeste', applicationId: APP, largeImage: ASSET, start: now - 60_000 }),
                gameActivity({
                  name: 'Hades',
                  applicationId: SECOND_APP,
                  largeImage: SECOND_ASSET,
                  start: now - 5_000,
                }),
              ],
            },
          },
          {
            user: JUNO,
            presence: {
              status: 'idle',
              activities: [customStatusActivity({ text: 'reading', emoji: { name: 'blob', id: EMOJI } })],
            },
          },
        ],
      });
    },
  });
  base = harness.base;
  await eventually(() => {
    for (const user of [NOVA, MIRA, JUNO]) expect(harness.app.registry.get(user.id)).toBeDefined();
  });
});

afterAll(async () => {
  await harness?.close();
});

const card = (id: string, query = '', init?: RequestInit) =>
  fetch(`${base}/v1/users/${id}/card.svg${query}`, init);

const images = (root: ParsedElement): string[] =>
  [...walk(root)]
    .filter((element) => element.tag === 'image')
    .map((element) => element.attributes.href ?? '');

const pngUri = (size: number, colour: readonly [number, number, number]): string =>
  `data:image/png;base64,${solidPng(size, colour).toString('base64')}`;

async function expectError(response: Response, status: number, code: string): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
  const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  return body.error.message;
}

describe('GET /v1/users/:id/card.svg', () => {
  it('answers an SVG card with the headers a README image needs', async () => {
    const response = await card(NOVA.id);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toBe(CARD_CONTENT_SECURITY_POLICY);
    const root = parseCard(await response.text());
    expect(byClass(root, 'name').map((e) => visible(e.text))).toEqual(['Nova']);
    expect(byClass(root, 'cs').map((e) => visible(e.text))).toEqual(['🎧 on repeat']);
    expect(byClass(root, 'title').map((e) => visible(e.text))).toEqual(['Demo tape']);
  });

  it("inlines the avatar fetched from the CDN: the simulator's image for that hash", async () => {
    const root = parseCard(await (await card(NOVA.id)).text());
    expect(images(root)[0]).toBe(pngUri(128, colourFor(NOVA.avatar)));
  });

  it("inlines Discord's default avatar for a user without one", async () => {
    const root = parseCard(await (await card(MIRA.id)).text());
    const colour = SIMULATOR_DEFAULT_AVATAR_COLOURS[defaultAvatarIndex(MIRA.id)];
    expect(colour).toBeDefined();
    // embed/avatars has no size parameter: the simulator's default size.
    expect(images(root)[0]).toBe(pngUri(64, colour as readonly [number, number, number]));
  });

  it("inlines the game's app asset and the custom emoji", async () => {
    const mira = parseCard(await (await card(MIRA.id)).text());
    expect(images(mira)[1]).toBe(pngUri(64, colourFor(`${APP}/${ASSET}`)));
    const juno = parseCard(await (await card(JUNO.id)).text());
    expect(images(juno)).toContain(pngUri(64, colourFor(EMOJI)));
  });

  it('answers 304 to If-None-Match with the ETag, in every spelling of the header', async () => {
    // Juno's card has no clock in it, so it stays the same from one second to the next.
    const first = await card(JUNO.id);
    const etag = first.headers.get('etag') ?? '';
    await first.arrayBuffer();
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const response = await card(JUNO.id, '', { headers: { 'if-none-match': header } });
      expect(response.status, header).toBe(304);
      expect(response.headers.get('etag')).toBe(etag);
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(await response.text()).toBe('');
    }
    const other = await card(JUNO.id, '', { headers: { 'if-none-match': '"something-else"' } });
    expect(other.status).toBe(200);
    expect(other.headers.get('etag')).toBe(etag);
  });

  it('a different option is a different card, with its own ETag', async () => {
    const dark = await card(JUNO.id);
    const light = await card(JUNO.id, '?theme=light', {
      headers: { 'if-none-match': dark.headers.get('etag') ?? '' },
    });
    expect(light.status).toBe(200);
    expect(await light.text()).toContain(`fill="${THEMES.light.background}"`);
  });

  it('the ETag changes when the presence does', async () => {
    const before = (await card(JUNO.id)).headers.get('etag') ?? '';
    harness.simulator.setPresence(JUNO.id, {
      status: 'online',
      activities: [customStatusActivity({ text: 'writing the docs' })],
    });
    await eventually(async () => {
      const response = await card(JUNO.id, '', { headers: { 'if-none-match': before } });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('writing the docs');
    });
  });

  it('answers HEAD with the headers and no body', async () => {
    const response = await card(JUNO.id, '', { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
    expect(response.headers.get('etag')).toBeTruthy();
    expect(await response.text()).toBe('');
  });

  it('applies the options', async () => {
    const svg = await (
      await card(NOVA.id, '?animated=false&hideStatus=true&hideTimestamp&borderRadius=4px&bg=%23101010')
    ).text();
    const root = parseCard(svg);
    expect(svg).not.toMatch(/<animate|@keyframes/);
    expect(byClass(root, 'cs')).toHaveLength(0);
    expect(byClass(root, 'time')).toHaveLength(0);
    expect(byClass(root, 'card')[0]?.attributes).toMatchObject({ rx: '4', fill: '#101010' });
  });

  it('shows the idle message when nothing is going on', async () => {
    const svg = await (await card(NOVA.id, '?hideMusic=1&idleMessage=Touching%20grass%20%3Cb%3E')).text();
    expect(byClass(parseCard(svg), 'idle').map((e) => visible(e.text))).toEqual(['Touching grass <b>']);
  });

  it('answers 200 with a card that says so for a user who is not monitored', async () => {
    const response = await card(UNKNOWN);
    expect(response.status).toBe(200);
    expect(response.headers.get('etag')).toBeTruthy();
    const root = parseCard(await response.text());
    expect(byClass(root, 'name').map((e) => visible(e.text))).toEqual(['Not monitored']);
    expect(images(root)).toHaveLength(1);
  });

  const JSON_FIRST = { headers: { accept: 'application/json, image/*;q=0.5' } };
  /** What a browser sends for an <img>, and what GitHub's image proxy passes on. */
  const IMG = { headers: { accept: 'image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8' } };

  it.each(['abc', '12a', '18446744073709551616', '123456789012345678901', '@me', '-1', '%3Cb%3E'])(
    'answers a card saying so for the id %j, and 400 invalid_user_id to a client that asks for JSON',
    async (id) => {
      for (const init of [IMG, {}, { headers: { accept: '*/*' } }]) {
        const response = await card(id, '', init);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
        const root = parseCard(await response.text());
        expect(byClass(root, 'name').map((e) => visible(e.text))).toEqual(['Not a Discord user ID']);
        expect(byClass(root, 'sub').map((e) => visible(e.text).replace(/\s+/g, ' '))).toEqual([
          `ID ${decodeURIComponent(id)}`,
        ]);
      }
      await expectError(await card(id, '', JSON_FIRST), 400, 'invalid_user_id');
    },
  );

  it.each([
    ['theme=blue', 'theme'],
    ['bg=red', 'bg'],
    ['bg=%2312345', 'bg'],
    ['borderRadius=-3', 'borderRadius'],
    ['borderRadius=100', 'borderRadius'],
    ['hideStatus=maybe', 'hideStatus'],
    ['hideTimestamp=2', 'hideTimestamp'],
    ['hideActivity=sometimes', 'hideActivity'],
    ['hideMusic=nah', 'hideMusic'],
    ['animated=nope', 'animated'],
    ['idleMessage=', 'idleMessage'],
    [`idleMessage=${'x'.repeat(101)}`, 'idleMessage'],
    ['ignoreAppId=spotify', 'ignoreAppId'],
  ])(
    '?%s: the card with the default in its place; 400 invalid_query to a client that asks for JSON',
    async (query, option) => {
      const fallback = await card(NOVA.id, `?${query}`, IMG);
      expect(fallback.status).toBe(200);
      expect(fallback.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
      const drawn = await fallback.text();
      // The defaults in place of the bad value: the dark theme's background, the default corners.
      const background = [...walk(parseCard(drawn))].find(
        (e) => e.tag === 'rect' && e.attributes.class === 'card',
      );
      expect(background?.attributes).toMatchObject({ fill: THEMES.dark.background, rx: '12' });
      expect(byClass(parseCard(drawn), 'name').map((e) => visible(e.text))).toEqual(['Nova']);
      const message = await expectError(await card(NOVA.id, `?${query}`, JSON_FIRST), 400, 'invalid_query');
      expect(message.startsWith(`${option}: `)).toBe(true);
    },
  );

  it('inlines the image of every stacked activity', async () => {
    const root = parseCard(await (await card(MIRA.id, '?maxActivities=2')).text());
    expect(byClass(root, 'title').map((e) => visible(e.text))).toEqual(['Celeste', 'Hades']);
    expect(images(root).filter((href) => href !== images(root)[0])).toEqual([
      pngUri(64, colourFor(`${APP}/${ASSET}`)),
      pngUri(64, colourFor(`${SECOND_APP}/${SECOND_ASSET}`)),
    ]);
  });

  it('an id with an encoded ? draws its own card, never the card of the query it spells', async () => {
    const smuggled = await card(`${UNKNOWN}%3FhideProfile=1`);
    expect(byClass(parseCard(await smuggled.text()), 'name').map((e) => visible(e.text))).toEqual([
      'Not a Discord user ID',
    ]);
    const real = parseCard(await (await card(UNKNOWN, '?hideProfile=1')).text());
    expect(byClass(real, 'name')).toHaveLength(0);
    expect(byClass(real, 'idle').map((e) => visible(e.text))[0]).toContain('shares no server');
  });

  it('keeps the good options beside a bad one', async () => {
    const response = await card(NOVA.id, '?theme=light&bg=nope', IMG);
    const root = parseCard(await response.text());
    const background = [...walk(root)].find((e) => e.tag === 'rect' && e.attributes.class === 'card');
    expect(background?.attributes.fill).toBe(THEMES.light.background);
  });
});

describe('card with a CDN that hangs', () => {
  let hanging: Server;
  let slow: Harness;
  /** Requests the CDN took, and how many of them the client gave up on (closed unanswered). */
  const cdn = { requested: 0, abandoned: 0 };

  beforeAll(async () => {
    hanging = createServer((request) => {
      // Accepts the request and never answers.
      cdn.requested++;
      request.socket.once('close', () => cdn.abandoned++);
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const port = (hanging.address() as AddressInfo).port;
    slow = await startHarness({
      env: { DISCORD_CDN_URL: `http://127.0.0.1:${port}/cdn` },
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Slow',
          members: [{ user: NOVA, presence: { status: 'online' } }],
        }),
    });
    await eventually(() => expect(slow.app.registry.get(NOVA.id)).toBeDefined());
  });

  afterAll(async () => {
    await slow?.close();
    hanging?.closeAllConnections();
    await new Promise((resolve) => hanging?.close(resolve));
  });

  it('answers once the image fetch is given up, with a placeholder avatar, then without asking again while the failure is remembered', async () => {
    const started = performance.now();
    const response = await fetch(`${slow.base}/v1/users/${NOVA.id}/card.svg`);
    const svg = await response.text();
    expect(response.status).toBe(200);
    // Not before the image timeout (the code's constant): the card waited for the image, then gave up on it.
    expect(performance.now() - started).toBeGreaterThanOrEqual(IMAGE_FETCH_TIMEOUT_MS - 50);
    expect(cdn.requested).toBeGreaterThan(0);
    await eventually(() => expect(cdn.abandoned).toBe(cdn.requested));
    const before = { ...cdn };
    const root = parseCard(svg);
    expect(images(root)).toHaveLength(0);
    expect(byClass(root, 'initial').map((e) => visible(e.text))).toEqual(['N']);

    // The same card again is drawn with the placeholder, and the CDN is not asked: nothing to wait for.
    const again = parseCard(await (await fetch(`${slow.base}/v1/users/${NOVA.id}/card.svg`)).text());
    expect(byClass(again, 'initial').map((e) => visible(e.text))).toEqual(['N']);
    expect(cdn).toEqual(before);
  });
});
