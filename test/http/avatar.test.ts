import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AVATAR_CACHE_CONTROL } from '../../src/http/routes/avatar.js';
import type { DiscordSimulator } from '../../src/simulator/index.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { inOneReadWindow } from '../support/read-window.js';

const GUILD = '100000000000000001';
const STILL = { id: '80351110224678912', username: 'still', avatar: '8342729096ea3675442027381ff50dfe' };
const ANIMATED = {
  id: '80351110224678913',
  username: 'moving',
  avatar: 'a_1269e74af4df7417b13759eae50c83dc',
};
/** On the new username system, no avatar: default avatar (id >> 22) % 6 = 3. */
const NEW_NAME = { id: '94490510688792576', username: 'nova', discriminator: '0', avatar: null };
/** A legacy discriminator, no avatar: default avatar 1337 % 5 = 2. */
const LEGACY = { id: '80351110224678914', username: 'legacy', discriminator: '1337', avatar: null };
const NOBODY = '123456789012345678';

let h: Harness;
let cdn: string;

function seed(sim: DiscordSimulator): void {
  sim.createGuild({
    id: GUILD,
    name: 'Guild',
    members: [STILL, ANIMATED, NEW_NAME, LEGACY].map((user) => ({
      user,
      presence: { status: 'online' as const },
    })),
  });
}

/** The answer to a quick link, not followed. */
const quick = (path: string, init: RequestInit = {}) =>
  fetch(`${h.base}${path}`, { redirect: 'manual', ...init });

async function expectError(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(response.headers.get('access-control-allow-origin')).toBe('*');
  const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(body.error.message).not.toBe('');
}

beforeAll(async () => {
  h = await startHarness({ setup: seed, env: { RATE_LIMIT_READ: '1000' } });
  cdn = h.simulator.cdnUrl;
  await h.simulator.waitForReady();
  await eventually(() => {
    for (const { id } of [STILL, ANIMATED, NEW_NAME, LEGACY]) expect(h.app.view.get(id)).toBeDefined();
  });
});

afterAll(async () => {
  await h?.close();
});

describe('GET /:id.<format>: avatar quick links', () => {
  it.each(['png', 'jpg', 'jpeg', 'webp'])(
    'redirects .%s to the avatar in that format at 1024 px',
    async (format) => {
      const response = await quick(`/${STILL.id}.${format}`);
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toBe(
        `${cdn}/avatars/${STILL.id}/${STILL.avatar}.${format}?size=1024`,
      );
      expect(response.headers.get('cache-control')).toBe(AVATAR_CACHE_CONTROL);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
    },
  );

  it('follows to an image a browser can show', async () => {
    const response = await fetch(`${h.base}/${STILL.id}.png`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await response.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
  });

  it('gives the GIF of an animated avatar, and the JPEG (as Lanyard) when the avatar does not move', async () => {
    expect((await quick(`/${ANIMATED.id}.gif`)).headers.get('location')).toBe(
      `${cdn}/avatars/${ANIMATED.id}/${ANIMATED.avatar}.gif?size=1024`,
    );
    expect((await quick(`/${STILL.id}.gif`)).headers.get('location')).toBe(
      `${cdn}/avatars/${STILL.id}/${STILL.avatar}.jpg?size=1024`,
    );
    // An animated avatar asked for as a still image: its first frame, as Discord's CDN gives it.
    expect((await quick(`/${ANIMATED.id}.png`)).headers.get('location')).toBe(
      `${cdn}/avatars/${ANIMATED.id}/${ANIMATED.avatar}.png?size=1024`,
    );
  });

  it("gives Discord's default avatar to users without one, by Discord's rule for each kind of name", async () => {
    for (const format of ['png', 'gif', 'webp']) {
      expect((await quick(`/${NEW_NAME.id}.${format}`)).headers.get('location')).toBe(
        `${cdn}/embed/avatars/3.png`,
      );
      expect((await quick(`/${LEGACY.id}.${format}`)).headers.get('location')).toBe(
        `${cdn}/embed/avatars/2.png`,
      );
    }
  });

  it("passes Discord's sizes on; another size is 400 invalid_query; other parameters are ignored", async () => {
    expect((await quick(`/${STILL.id}.webp?size=64&v=2`)).headers.get('location')).toBe(
      `${cdn}/avatars/${STILL.id}/${STILL.avatar}.webp?size=64`,
    );
    await expectError(await quick(`/${STILL.id}.png?size=100`), 400, 'invalid_query');
    await expectError(await quick(`/${STILL.id}.png?size=big`), 400, 'invalid_query');
  });

  it('follows a new avatar', async () => {
    h.simulator.updateUser({ id: STILL.id, avatar: 'a_00000000000000000000000000000001' });
    await eventually(async () =>
      expect((await quick(`/${STILL.id}.gif`)).headers.get('location')).toBe(
        `${cdn}/avatars/${STILL.id}/a_00000000000000000000000000000001.gif?size=1024`,
      ),
    );
    h.simulator.updateUser({ id: STILL.id, avatar: STILL.avatar });
    await eventually(async () =>
      expect((await quick(`/${STILL.id}.gif`)).headers.get('location')).toContain(STILL.avatar),
    );
  });

  it('answers 404 user_not_monitored for a valid id nobody shares a server with', async () => {
    await expectError(await quick(`/${NOBODY}.png`), 404, 'user_not_monitored');
  });

  it('answers 400 invalid_user_id for what is not a snowflake', async () => {
    for (const id of ['abc', '@me', '18446744073709551616', '1.2', '']) {
      await expectError(await quick(`/${id}.png`), 400, 'invalid_user_id');
    }
  });

  it('leaves other paths alone: unknown extensions and routes are 404 not_found', async () => {
    for (const path of [`/${STILL.id}.svg`, `/${STILL.id}.PNG`, `/${STILL.id}`, '/favicon.ico']) {
      await expectError(await quick(path), 404, 'not_found');
    }
    expect((await quick(`/v1/users/${STILL.id}`)).status).toBe(200);
    expect((await quick('/v1/version')).status).toBe(200);
  });

  it('counts against the read rate limit, with the presence reads', async () => {
    await inOneReadWindow();
    const first = await quick(`/${STILL.id}.png`);
    const second = await quick(`/v1/users/${STILL.id}`);
    const third = await quick(`/${NEW_NAME.id}.webp`);
    expect(first.headers.get('ratelimit-limit')).toBe('1000');
    const remaining = [first, second, third].map((response) =>
      Number(response.headers.get('ratelimit-remaining')),
    );
    expect(remaining[1]).toBe((remaining[0] as number) - 1);
    expect(remaining[2]).toBe((remaining[0] as number) - 2);
  });

  it('answers HEAD like GET, without a body', async () => {
    const response = await quick(`/${STILL.id}.png`, { method: 'HEAD' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toContain(`/avatars/${STILL.id}/`);
  });
});
