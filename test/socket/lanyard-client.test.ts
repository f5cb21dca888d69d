import { createElement } from 'react';
import TestRenderer, { type ReactTestRenderer } from 'react-test-renderer';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { ALICE, apiKeyFor, BOB, fixtureReady, NOBODY, restPresence, seed } from './fixture.js';

/**
 * `use-lanyard` (npm), the React hooks many Lanyard users embed, pointed at this server with nothing but its
 * `api.hostname` (and `secure: false`, as the server here speaks plain HTTP). It runs in Node with
 * react-test-renderer; the hook wants a browser's `window.WebSocket`, so `ws` stands in for it.
 */
type UseLanyard = typeof import('use-lanyard');
let lanyard: UseLanyard;
let h: Harness;
let hostname: string;
const socketUrls: string[] = [];
const renderers: ReactTestRenderer[] = [];

/** What the hook returned on its latest render. */
interface Probe<T> {
  latest: T | undefined;
  renders: number;
}

const SONG = { song: 'Intro', artists: ['The xx'], album: 'xx', imageId: 'ab67616d0000b273aaaa' };

function playing(song: string, status: 'online' | 'dnd') {
  const start = Date.now();
  return {
    status,
    activities: [
      spotifyActivity({
        ...SONG,
        song,
        trackId: `${song.replace(/\W/g, '')}`.padEnd(22, 'x'),
        start,
        end: start + 180_000,
      }),
    ],
  };
}

/** Renders the hook's result into `probe` on every render. */
function HookProbe<T>({ hook, probe }: { hook: () => T; probe: Probe<T> }): null {
  probe.latest = hook();
  probe.renders++;
  return null;
}

function renderHook<T>(hook: () => T): Probe<T> {
  const probe: Probe<T> = { latest: undefined, renders: 0 };
  renderers.push(TestRenderer.create(createElement(HookProbe<T>, { hook, probe })));
  return probe;
}

beforeAll(async () => {
  const global = globalThis as Record<string, unknown>;
  global.window ??= globalThis;
  // The hook builds `new WebSocket(url)`; record the URLs it builds.
  global.WebSocket = class RecordingWebSocket extends WebSocket {
    constructor(url: string | URL, ...rest: unknown[]) {
      socketUrls.push(String(url));
      super(url, ...(rest as []));
    }
  };
  lanyard = await import('use-lanyard');
  h = await startHarness({ setup: seed });
  await fixtureReady(h);
  hostname = new URL(h.base).host;
  h.simulator.setPresence(ALICE, playing('Intro', 'online'));
  await eventually(async () => expect((await restPresence(h, ALICE)).now_playing?.song).toBe('Intro'));
});

afterEach(() => {
  // Unmounting closes the hook's socket (and stops it from reconnecting) before the server goes away.
  for (const renderer of renderers.splice(0)) renderer.unmount();
});

afterAll(async () => {
  await eventually(() => expect(h.app.sockets.socketCount).toBe(0));
  await h?.close();
});

describe('use-lanyard against this server', () => {
  it('useLanyardWS: receives the presence, then live updates (presence and KV)', async () => {
    const options = { api: { hostname, secure: false } };
    const probe = renderHook(() => lanyard.useLanyardWS(ALICE, options));

    await eventually(() => {
      expect(probe.latest?.discord_user.id).toBe(ALICE);
      expect(probe.latest?.discord_status).toBe('online');
      expect(probe.latest?.listening_to_spotify).toBe(true);
      expect(probe.latest?.spotify?.song).toBe('Intro');
      expect((probe.latest as { now_playing?: { song: string } }).now_playing?.song).toBe('Intro');
    });
    expect(socketUrls.at(-1)).toBe(`ws://${hostname}/socket`);
    expect(h.app.sockets.socketCount).toBe(1);

    h.simulator.setPresence(ALICE, playing('Crystalised', 'dnd'));
    await eventually(() => {
      expect(probe.latest?.discord_status).toBe('dnd');
      expect(probe.latest?.spotify?.song).toBe('Crystalised');
    });
    const { user_id: _, ...fromHook } = probe.latest as unknown as Record<string, unknown>;
    expect(fromHook).toEqual(await restPresence(h, ALICE));

    const key = await apiKeyFor(h, ALICE);
    const put = await fetch(`${h.base}/v1/users/@me/kv/location`, {
      method: 'PUT',
      headers: { Authorization: key },
      body: 'Lisbon',
    });
    expect(put.status).toBe(204);
    await eventually(() => expect(probe.latest?.kv).toEqual({ location: 'Lisbon' }));
  });

  it('useLanyardWS: a user nobody monitors gives the empty presence, and nothing breaks', async () => {
    const probe = renderHook(() => lanyard.useLanyardWS(NOBODY, { api: { hostname, secure: false } }));
    await eventually(() => expect(probe.latest).toEqual({}));
  });

  it('get() and useLanyard (REST) read the same presence', async () => {
    const options = { api: { hostname, secure: false } };
    const result = await lanyard.get(BOB, options);
    expect(result.success).toBe(true);
    expect(result.data).toEqual(await restPresence(h, BOB));

    const missing = await lanyard.get(NOBODY, options);
    expect(missing.success).toBe(false);
    expect(missing.error?.code).toBe(404);

    const probe = renderHook(() => lanyard.useLanyard(BOB, options));
    await eventually(() => {
      expect(probe.latest?.state).toBe('loaded');
      expect(probe.latest?.data?.discord_status).toBe('idle');
    });
  });
});
