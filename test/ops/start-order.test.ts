import { once } from 'node:events';
import { createServer } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { DiscordSimulator } from '../../src/simulator/index.js';

/** What the service does before it serves, in what order. */
describe('starting a service', () => {
  const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
  beforeAll(() => simulator.start());
  afterAll(() => simulator.stop());

  it('that cannot bind its port fails without connecting to Discord: a restart loop spends no session starts', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as { port: number };
    try {
      const starting = startApp(
        loadConfig({
          DISCORD_TOKEN: simulator.token,
          DISCORD_API_URL: simulator.apiUrl,
          DISCORD_CDN_URL: simulator.cdnUrl,
          DATABASE_URL: 'sqlite::memory:',
          HOST: '127.0.0.1',
          PORT: String(port),
        }),
        { logger: pino({ level: 'silent' }) },
      );
      await expect(starting).rejects.toThrow(/EADDRINUSE/);
      // Shut down as it failed: nothing of the gateway was started, not even its first request.
      expect(simulator.requestCount('GET /gateway/bot')).toBe(0);
      expect(simulator.identifyCount).toBe(0);
    } finally {
      taken.close();
    }
  });
});
