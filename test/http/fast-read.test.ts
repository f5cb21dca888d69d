import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparableHeaders } from '../support/comparable-headers.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * `GET /v1/users/:id` of a monitored user is answered outside Fastify (src/http/fast-read.ts); everything
 * around it must look the same to a client as Fastify's answers.
 */
const USER = '94490510688792576';
/** A name beyond ASCII: answered as JSON escapes, the same value to any parser. */
const ACCENTED = '94490510688792577';
const GUILD = '300000000000000002';

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [
          { user: { id: USER, username: 'nova' }, presence: { status: 'dnd' } },
          { user: { id: ACCENTED, username: 'zoë', global_name: 'Zoë 🎧' }, presence: { status: 'idle' } },
        ],
      }),
  });
  await eventually(() => expect(harness.app.view.get(ACCENTED)).toBeDefined());
});

afterAll(async () => {
  await harness.close();
});

describe('presence reads answered outside Fastify', () => {
  it('carry the same headers as the same read answered by Fastify (HEAD), and the snapshot bytes', async () => {
    const fast = await fetch(`${harness.base}/v1/users/${USER}`);
    const routed = await fetch(`${harness.base}/v1/users/${USER}`, { method: 'HEAD' });
    expect(fast.status).toBe(200);
    expect(routed.status).toBe(200);
    expect(comparableHeaders(fast)).toEqual(comparableHeaders(routed));
    expect(comparableHeaders(fast)).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      'access-control-allow-origin': '*',
      'x-content-type-options': 'nosniff',
    });
    const body = Buffer.from(await fast.arrayBuffer());
    expect(body.equals(Buffer.from(harness.app.view.get(USER)?.body ?? ''))).toBe(true);
    expect(Number(fast.headers.get('content-length'))).toBe(body.length);
    expect(routed.headers.get('content-length')).toBe(fast.headers.get('content-length'));
  });

  it('answer a presence with characters beyond ASCII as JSON escapes, with its length in bytes', async () => {
    const fast = await fetch(`${harness.base}/v1/users/${ACCENTED}`);
    const routed = await fetch(`${harness.base}/v1/users/${ACCENTED}`, { method: 'HEAD' });
    const bytes = Buffer.from(await fast.arrayBuffer());
    expect(Number(fast.headers.get('content-length'))).toBe(bytes.length);
    expect(routed.headers.get('content-length')).toBe(fast.headers.get('content-length'));
    expect(bytes.toString('latin1')).toContain('Zo\\u00eb \\ud83c\\udfa7');
    const body = JSON.parse(bytes.toString('utf8')) as { data: { discord_user: { global_name: string } } };
    expect(body.data.discord_user.global_name).toBe('Zoë 🎧');
  });

  it('give each answer its own length when reads of different presences interleave', async () => {
    const users = [USER, ACCENTED];
    const lengths = users.map((id) => harness.app.view.get(id)?.body.length);
    expect(lengths[0]).not.toBe(lengths[1]);
    const reads = await Promise.all(
      Array.from({ length: 40 }, async (_, n) => {
        const id = users[n % 2] as string;
        const response = await fetch(`${harness.base}/v1/users/${id}`);
        const text = await response.text();
        return { id, length: Number(response.headers.get('content-length')), text };
      }),
    );
    for (const { id, length, text } of reads) {
      expect(length).toBe(Buffer.byteLength(text));
      expect((JSON.parse(text) as { data: { discord_user: { id: string } } }).data.discord_user.id).toBe(id);
    }
  });

  it('answer the same with a query string, and for an id spelled with escapes (through Fastify)', async () => {
    const plain = await (await fetch(`${harness.base}/v1/users/${USER}`)).text();
    expect(await (await fetch(`${harness.base}/v1/users/${USER}?cache=${Date.now()}`)).text()).toBe(plain);
    const escaped = `%3${USER[0]}${USER.slice(1)}`;
    expect(await (await fetch(`${harness.base}/v1/users/${escaped}`)).text()).toBe(plain);
  });

  it('leave errors to the contract: unknown users, bad ids, a trailing slash', async () => {
    const codes = async (path: string) => {
      const response = await fetch(`${harness.base}${path}`);
      const body = (await response.json()) as { success: boolean; error?: { code: string } };
      expect(body.success).toBe(false);
      return [response.status, body.error?.code];
    };
    expect(await codes('/v1/users/123456789012345678')).toEqual([404, 'user_not_monitored']);
    expect(await codes(`/v1/users/0${USER}`)).toEqual([404, 'user_not_monitored']);
    expect(await codes('/v1/users/99999999999999999999')).toEqual([400, 'invalid_user_id']);
    expect(await codes('/v1/users/123456789012345678901')).toEqual([400, 'invalid_user_id']);
    expect(await codes(`/v1/users/${USER}/`)).toEqual([404, 'not_found']);
  });

  it('a user who leaves is answered 404 at once', async () => {
    const other = '381456437152087040';
    harness.simulator.addMember(GUILD, {
      user: { id: other, username: 'mira' },
      presence: { status: 'online' },
    });
    await expect.poll(async () => (await fetch(`${harness.base}/v1/users/${other}`)).status).toBe(200);
    harness.simulator.removeMember(GUILD, other);
    await expect.poll(async () => (await fetch(`${harness.base}/v1/users/${other}`)).status).toBe(404);
  });
});
