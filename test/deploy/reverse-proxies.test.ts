import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { ALICE, BOB, fixtureReady, restPresence, seed } from '../socket/fixture.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { type LanyardClient, startLanyardClient } from '../support/lanyard-process.js';
import { inOneReadWindow } from '../support/read-window.js';
import {
  binariesAvailable,
  httpsGet,
  type ReverseProxy,
  startCaddy,
  startNginx,
} from '../support/reverse-proxies.js';

/**
 * The deployment the guide describes, run here: the service on 127.0.0.1 with TRUST_PROXY=127.0.0.1, and in
 * front of it nginx or Caddy from deploy/, with TLS. A real Lanyard client (`use-lanyard`, which speaks only
 * https and wss when pointed at a host) reaches it on [::1], so the service can tell the client's address
 * (::1) from the proxy's (127.0.0.1): it must count the client by what the proxy forwards.
 */

const READ_LIMIT = 1000;

function playing(song: string, status: 'online' | 'dnd') {
  const start = Date.now();
  const track = { song, artists: ['The xx'], album: 'xx', imageId: 'ab67616d0000b273aaaa' };
  return {
    status,
    activities: [
      spotifyActivity({
        ...track,
        trackId: song.replace(/\W/g, '').padEnd(22, 'x'),
        start,
        end: start + 180_000,
      }),
    ],
  };
}

const PROXIES = [
  { name: 'nginx', start: startNginx, binaries: ['nginx', 'openssl'] },
  { name: 'caddy', start: startCaddy, binaries: ['caddy'] },
];

describe.each(PROXIES)('behind $name with TLS', ({ name, start, binaries }) => {
  const available = binariesAvailable(`behind ${name}`, binaries, binaries.join(' '));
  let h: Harness;
  let proxy: ReverseProxy;
  let client: LanyardClient;

  beforeAll(async () => {
    if (!available) return;
    h = await startHarness({
      setup: seed,
      env: { TRUST_PROXY: '127.0.0.1', RATE_LIMIT_READ: String(READ_LIMIT) },
    });
    await fixtureReady(h);
    h.simulator.setPresence(ALICE, playing('Intro', 'online'));
    proxy = await start(Number(new URL(h.base).port));
    client = await startLanyardClient(`[::1]:${proxy.httpsPort}`, proxy.ca);
  }, 60_000);

  afterEach(() => {
    vi.useRealTimers();
  });

  afterAll(async () => {
    await client?.close();
    await proxy?.stop();
    await h?.close();
  });

  it.runIf(available)('use-lanyard reads a presence over https and follows it over wss', async () => {
    client.watch(ALICE);
    await eventually(() => {
      const latest = client.presences.at(-1) as { discord_status?: string; spotify?: { song: string } };
      expect(latest?.discord_status).toBe('online');
      expect(latest?.spotify?.song).toBe('Intro');
    });
    expect(client.socketUrls).toEqual([`wss://[::1]:${proxy.httpsPort}/socket`]);

    h.simulator.setPresence(ALICE, playing('Crystalised', 'dnd'));
    await eventually(() => {
      const latest = client.presences.at(-1) as { discord_status?: string; spotify?: { song: string } };
      expect(latest?.discord_status).toBe('dnd');
      expect(latest?.spotify?.song).toBe('Crystalised');
    });
    // One socket carried it all: the proxy passed the upgrade and kept the socket open.
    expect(client.socketUrls).toHaveLength(1);
    expect(h.app.sockets.socketCount).toBe(1);

    const read = await client.get(ALICE);
    expect(read).toMatchObject({ success: true, data: await restPresence(h, ALICE) });
  });

  it.runIf(available)("counts the client by the proxy's X-Forwarded-For, not the proxy", async () => {
    await inOneReadWindow();
    expect(await client.get(BOB)).toMatchObject({ success: true });
    // The same client, naming another address: the proxy appends the one it saw, and that is believed.
    const same = await httpsGet(proxy.httpsPort, `/v1/users/${BOB}`, proxy.ca, {
      'x-forwarded-for': '203.0.113.9',
    });
    expect(same.status).toBe(200);
    expect(same.headers['ratelimit-remaining']).toBe(String(READ_LIMIT - 2));
    // The proxy's own address has a budget of its own, untouched by the client's reads.
    const direct = await fetch(`${h.base}/v1/users/${BOB}`);
    expect(direct.headers.get('ratelimit-remaining')).toBe(String(READ_LIMIT - 1));
  });

  it.runIf(available)('answers plain http with a redirect to https', async () => {
    const response = await fetch(`http://[::1]:${proxy.httpPort}/v1/health`, { redirect: 'manual' });
    expect(response.status).toBeGreaterThanOrEqual(301);
    expect(response.status).toBeLessThanOrEqual(308);
    expect(response.headers.get('location')).toMatch(/^https:\/\/.*\/v1\/health$/);
  });
});
