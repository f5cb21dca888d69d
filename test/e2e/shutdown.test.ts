import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayActivity } from 'discord-api-types/v10';
import { afterEach, describe, expect, it } from 'vitest';
import { DRAIN_TIMEOUT_MS } from '../../src/http/server.js';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import { spotifyActivity } from '../../src/simulator/activities.js';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { solidPng } from '../../src/simulator/png.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SocketClient } from '../socket/client.js';
import { eventually } from '../support/eventually.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';
import { lastJsonBody, RawConnection, statusLines } from '../support/raw-http.js';

/**
 * SIGTERM to the real service, as a deployment sends it, with work in flight: a KV write whose body is
 * still arriving, a card waiting on a slow image from the CDN, a subscribed socket, and history changes
 * still waiting in the recorder's batch. The process must stop taking new connections, finish what it
 * took, close the socket with 1001, write the batch, and exit 0 by itself: what does not finish (a client
 * that stalls for good) is cut after the drain time, which is shorter than the 10 s a deployment waits.
 */

const GUILD = '400000000000000001';
/** Plays music and changes status just before the SIGTERM. */
const LISTENER = '80351110224678912';
/** Has an avatar, which the card fetches from the slow CDN. */
const POSED = '80351110224678913';
const AVATAR_HASH = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
const SHUTDOWN_DEADLINE_MS = 10_000;

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A CDN that answers every image with one PNG, but only once the test lets it. */
async function slowCdn(): Promise<{
  url: string;
  png: Buffer;
  requested: Promise<string>;
  release(): void;
  server: Server;
}> {
  const png = solidPng(64, [0x12, 0x34, 0x56]);
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let onRequest = (_path: string): void => undefined;
  const requested = new Promise<string>((resolve) => {
    onRequest = resolve;
  });
  const server = createServer((request, response) => {
    onRequest(request.url ?? '');
    void released.then(() => {
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      response.end(png);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/cdn`, png, requested, release, server };
}

function spotify(name: string, start: number): GatewayActivity {
  return spotifyActivity({
    song: `Song ${name}`,
    artists: [`Artist ${name}`],
    album: `Album ${name}`,
    imageId: `ab67616d0000b273${Buffer.from(name).toString('hex').padEnd(24, '0').slice(0, 24)}`,
    trackId: `trk${name}`.padEnd(22, 'x'),
    start,
    end: start + 200_000,
  });
}

/** Whether a new TCP connection to the port is refused (nothing listens any more). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

async function presenceOf(service: NodeProcess, id: string): Promise<{ discord_status: string }> {
  const response = await fetch(`${service.url}/v1/users/${id}`);
  expect(response.status, service.output()).toBe(200);
  return ((await response.json()) as { data: { discord_status: string } }).data;
}

describe('SIGTERM', () => {
  it('stops accepting, finishes in-flight requests, flushes history, closes sockets with 1001, exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'presently-shutdown-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'p.db');
    const key = generateApiKey();
    const seed = openSqliteStore({ kind: 'sqlite', path });
    await seed.apiKeys.replaceKey(LISTENER, hashApiKey(key), Date.now());
    await seed.close();

    const simulator = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    await simulator.start();
    cleanups.push(() => simulator.stop());
    simulator.createGuild({
      id: GUILD,
      name: 'Shutdown Guild',
      members: [
        { user: { id: LISTENER, username: 'listener' }, presence: { status: 'online' } },
        { user: { id: POSED, username: 'posed', avatar: AVATAR_HASH }, presence: { status: 'online' } },
      ],
    });
    const cdn = await slowCdn();
    cleanups.push(() => {
      cdn.release();
      cdn.server.closeAllConnections();
      cdn.server.close();
    });

    const service = await startNodeProcess('shutdown', {
      DISCORD_TOKEN: simulator.token,
      DISCORD_API_URL: simulator.apiUrl,
      DISCORD_CDN_URL: cdn.url,
      DATABASE_URL: `sqlite:${path}`,
    });
    cleanups.push(async () => {
      await service.stop(0);
    });
    await eventually(
      async () => expect((await presenceOf(service, POSED)).discord_status).toBe('online'),
      15_000,
      100,
    );

    // A subscriber, who must be told to go away (1001) rather than be cut.
    const socket = await SocketClient.connect(service.url);
    await socket.subscribe({ subscribe_to_id: LISTENER });
    // And one whose client never answers the close handshake: it must hold up neither the refusal of
    // new connections nor the exit.
    const deaf = await RawConnection.open(service.url);
    await deaf.write(
      'GET /socket HTTP/1.1\r\nHost: presently\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    await deaf.waitFor(/^HTTP\/1\.1 101 /);

    // A client that starts a write and then stalls for good: it is cut, not waited for past the deadline.
    const stalled = await RawConnection.open(service.url);
    await stalled.write(
      `PUT /v1/users/@me/kv/stalled HTTP/1.1\r\nHost: presently\r\nAuthorization: ${key}\r\n` +
        'Content-Length: 100\r\n\r\nonly the start',
    );

    // A KV write whose body is half here.
    const value = 'written across a shutdown ✓';
    const body = Buffer.from(value, 'utf8');
    const write = await RawConnection.open(service.url);
    await write.write(
      `PUT /v1/users/@me/kv/across HTTP/1.1\r\nHost: presently\r\nAuthorization: ${key}\r\n` +
        `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await write.write(body.subarray(0, 10).toString('latin1'));

    // History the recorder has taken but (most likely: it writes at most a second later) not written yet.
    const now = Date.now();
    simulator.setPresence(LISTENER, { status: 'dnd', activities: [spotify('A', now)] });
    simulator.setPresence(LISTENER, { status: 'idle', activities: [spotify('B', now + 1_000)] });
    await eventually(async () => expect((await presenceOf(service, LISTENER)).discord_status).toBe('idle'));

    // A card that waits on the CDN for the avatar.
    let cardAnswered = false;
    const card = fetch(`${service.url}/v1/users/${POSED}/card.svg`).finally(() => {
      cardAnswered = true;
    });
    expect(await cdn.requested).toContain(`/avatars/${POSED}/${AVATAR_HASH}.png`);

    const terminatedAt = Date.now();
    service.child.kill('SIGTERM');

    // No new connections, at once: while the write and the card are still in flight (the card cannot be
    // answered before the CDN is let go), the port is closed and the socket told to go.
    await eventually(async () => expect(await refused(service.port)).toBe(true), 3_000, 10);
    expect(write.isClosed).toBe(false);
    expect(cardAnswered).toBe(false);
    expect((await socket.closedWith()).code).toBe(1001);

    // The card finishes, with the image that arrived after the shutdown began.
    cdn.release();
    const cardResponse = await card;
    expect(cardResponse.status).toBe(200);
    expect(await cardResponse.text()).toContain(`data:image/png;base64,${cdn.png.toString('base64')}`);

    // The write finishes, and is acknowledged; a read the client pipelined behind it, which arrives after
    // the SIGTERM, is answered too (not refused outside the envelope), and then the connection closes.
    await write.write(
      `${body.subarray(10).toString('latin1')}GET /v1/users/${LISTENER} HTTP/1.1\r\nHost: presently\r\n\r\n`,
    );
    await write.closed;
    expect(statusLines(write.text)).toEqual(['HTTP/1.1 204 No Content', 'HTTP/1.1 200 OK']);
    expect(write.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(lastJsonBody(write.text)).toMatchObject({ success: true, data: { discord_status: 'idle' } });

    // It exits by itself, 0: the stalled write did not hold it, since the drain cuts what is left in time.
    expect(DRAIN_TIMEOUT_MS).toBeLessThan(SHUTDOWN_DEADLINE_MS);
    const code = await service.exited;
    expect(code, service.output()).toBe(0);

    // The deaf socket was sent its 1001 (a close frame: 0x88, length, code) and then cut.
    expect(deaf.isClosed).toBe(true);
    const frame = deaf.text.indexOf('\x88');
    expect(frame).toBeGreaterThan(0);
    expect((deaf.text.charCodeAt(frame + 2) << 8) | deaf.text.charCodeAt(frame + 3)).toBe(1001);
    // The stalled write was cut without an answer, and wrote nothing.
    expect(stalled.isClosed).toBe(true);
    expect(statusLines(stalled.text)).toEqual([]);

    const store = openSqliteStore({ kind: 'sqlite', path });
    cleanups.push(() => store.close());
    expect(store.db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect((await store.kv.getKv(LISTENER)).kv).toEqual({ across: value });
    const { status, tracks } = await store.history.history(LISTENER, 10);
    expect(status.slice(0, 2).map((entry) => entry.status)).toEqual(['idle', 'dnd']);
    expect(tracks.slice(0, 2).map((entry) => entry.song)).toEqual(['Song B', 'Song A']);
    // last_seen of users still online is written by the shutdown's own flush, and by nothing else.
    const stats = await store.history.stats(LISTENER);
    expect(stats.lastSeen).toBeGreaterThanOrEqual(terminatedAt);
    expect(stats.lastSeen).toBeLessThanOrEqual(Date.now());
  }, 60_000);
});
