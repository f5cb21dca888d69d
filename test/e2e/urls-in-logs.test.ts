import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { type App, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { eventually } from '../support/eventually.js';

/**
 * Discord reached through a proxy that asks for credentials: DISCORD_API_URL carries a password. The real
 * app with the real logger (at `trace`) must not write it, neither in its start-up line nor in the failure
 * of a request, here the proxy answering 502 to everything.
 */

const PASSWORD = 'hunter2-proxy-password';
let proxy: Server | undefined;
let app: App | undefined;

afterEach(async () => {
  await app?.close();
  proxy?.close();
});

it('a password in DISCORD_API_URL reaches no log line', async () => {
  proxy = createServer((_request, response) => response.writeHead(502).end('Bad Gateway'));
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const { port } = proxy.address() as AddressInfo;
  const lines: string[] = [];
  app = await startApp(
    loadConfig({
      DISCORD_TOKEN: 'token',
      DISCORD_API_URL: `http://presently:${PASSWORD}@127.0.0.1:${port}/api`,
      DATABASE_URL: 'sqlite::memory:',
      HOST: '127.0.0.1',
      PORT: '0',
    }),
    { logger: createLogger('trace', false, { write: (line: string) => void lines.push(line) }) },
  );
  await eventually(() => expect(lines.join('')).toContain('could not connect to Discord'));
  const logs = lines.join('');
  expect(logs).toContain(`"api":"http://presently:***@127.0.0.1:${port}/api"`);
  expect(logs).toContain(`"url":"http://presently:***@127.0.0.1:${port}/api/v10/gateway/bot"`);
  expect(logs).not.toContain(PASSWORD);
});
