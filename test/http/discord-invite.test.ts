import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../support/http-server.js';

const INVITE = 'https://discord.gg/presently';
const servers: FastifyInstance[] = [];

/** A server with `DISCORD_INVITE_URL` set to `inviteUrl` (null: unset), and a read limit. */
async function serve(inviteUrl: string | null): Promise<string> {
  const { app, base } = await startHttpServer({ inviteUrl, rateLimits: { read: 100, write: 0 } });
  servers.push(app);
  return base;
}

afterAll(async () => {
  await Promise.all(servers.map((app) => app.close()));
});

describe('GET /discord', () => {
  it('redirects to DISCORD_INVITE_URL, counted as a read', async () => {
    const base = await serve(INVITE);
    const response = await fetch(`${base}/discord`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(INVITE);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('ratelimit-limit')).toBe('100');
  });

  it('answers 404 not_found in the envelope when no invite is configured', async () => {
    const base = await serve(null);
    const response = await fetch(`${base}/discord`, { redirect: 'manual' });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = (await response.json()) as { success: boolean; error: { code: string; message: string } };
    expect(body).toMatchObject({ success: false, error: { code: 'not_found' } });
    expect(body.error.message).toContain('DISCORD_INVITE_URL');
  });

  it("is the discord_invite of GET / (Lanyard's info), null when none is configured", async () => {
    for (const [inviteUrl, expected] of [
      [INVITE, INVITE],
      [null, null],
    ] as const) {
      const base = await serve(inviteUrl);
      const body = (await (await fetch(`${base}/`)).json()) as { data: { discord_invite: string | null } };
      expect(body.data.discord_invite).toBe(expected);
    }
  });
});
