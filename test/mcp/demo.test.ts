import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DEMO_USERS } from '../../src/demo/cast.js';
import { eventually } from '../support/eventually.js';
import { agentClient, call } from './client.js';

/** Demo mode, no Discord token: the agent endpoint can be tried at once, on both of its answers. */
describe('the agent endpoint in demo mode', () => {
  let app: App;
  let client: Client;

  beforeAll(async () => {
    app = await startApp(
      loadConfig({ DATABASE_URL: 'sqlite::memory:', HOST: '127.0.0.1', PORT: '0', RATE_LIMIT_READ: '0' }),
      { logger: pino({ level: 'silent' }) },
    );
    await eventually(() => expect(app.view.size).toBe(Object.keys(DEMO_USERS).length));
    client = await agentClient(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`)));
  });

  afterAll(async () => {
    await client?.close();
    await app?.close();
  });

  it('most demo users let agents read them, and some do not', async () => {
    const allowed: string[] = [];
    const notAllowed: string[] = [];
    for (const [name, user] of Object.entries(DEMO_USERS)) {
      const { isError, texts } = await call(client, 'get_presence', { user_id: user.id });
      expect(isError, name).toBe(false);
      if (texts[0]?.includes('has not allowed AI agents')) notAllowed.push(name);
      else {
        expect(JSON.parse(texts[0] as string), name).toMatchObject({ discord_user: { id: user.id } });
        allowed.push(name);
      }
    }
    expect(allowed).toContain('nova');
    expect(allowed.length).toBeGreaterThan(notAllowed.length);
    expect(notAllowed.length).toBeGreaterThan(0);
  });
});
