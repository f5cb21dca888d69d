import { connect } from 'node:net';
import { describe, expect, it, type TestContext } from 'vitest';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { lastJsonBody, RawConnection, statusLines } from '../support/raw-http.js';

/**
 * `/v1/health` and `/v1/ready` of the whole service against the simulated Discord: ready only while every
 * shard has a session and the store answers, not ready while shutting down.
 */

const GUILD = '600000000000000001';
const USER = '80351110224678912';

interface Answer {
  status: number;
  body: { success: boolean; data?: unknown; error?: { code: string; message: string } };
}

async function get(h: Harness, path: string): Promise<Answer> {
  const response = await fetch(`${h.base}${path}`);
  expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** Whether a new TCP connection to the service is refused (nothing listens any more). */
function refused(base: string): Promise<boolean> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

async function start(
  { onTestFinished }: TestContext,
  options: Parameters<typeof startHarness>[0] = {},
): Promise<Harness> {
  const h = await startHarness({
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Guild',
        members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
      }),
    ...options,
  });
  onTestFinished(() => h.close());
  return h;
}

/** Ready, with each of `shards` listed as live. */
function ready(shards = 1) {
  return {
    status: 200,
    body: {
      success: true,
      data: {
        status: 'ready',
        checks: { store: 'ok', gateway: 'ok' },
        shards: Array.from({ length: shards }, (_, id) => ({
          id,
          state: 'ready',
          last_event_ms: expect.any(Number),
        })),
      },
    },
  };
}
const READY = ready();

function notReady(...failed: string[]) {
  return {
    status: 503,
    body: {
      success: false,
      error: {
        code: 'not_ready',
        message: expect.stringMatching(
          new RegExp(`^not ready: ${failed.map((name) => `${name}: `).join('.*')}`),
        ),
      },
    },
  };
}

describe('GET /v1/health', () => {
  it('answers 200 in the envelope while the process runs, whatever Discord does', async (context) => {
    const h = await start(context);
    await h.simulator.waitForReady();
    h.simulator.faults.closeConnection(4014);
    await eventually(() => expect(h.fatal.map((fatal) => fatal.code)).toEqual([4014]));
    const answer = await get(h, '/v1/health');
    expect(answer).toEqual({
      status: 200,
      body: { success: true, data: { status: 'ok', uptime_seconds: expect.any(Number) } },
    });
    // Left up after a fatal close (main.ts exits instead), the node is not ready.
    expect(await get(h, '/v1/ready')).toEqual(notReady('gateway'));
  });
});

describe('GET /v1/ready', () => {
  it('is 503 until every shard has a session, then 200', async (context) => {
    // Two shards, one identify at a time: the second session starts about 5 s after the first.
    const h = await start(context, { simulator: { shardCount: 2 } });
    await h.simulator.waitForReady(0);
    expect(h.simulator.connectedShards).toEqual([0]);
    expect(await get(h, '/v1/ready')).toEqual(notReady('gateway'));
    await h.simulator.waitForReady(1, 10_000);
    await eventually(async () => expect(await get(h, '/v1/ready')).toEqual(ready(2)));
  }, 20_000);

  it("lists each shard's state and the age of its last event, and names a shard without a session", async (context) => {
    // The new session lists the guild again at once, not past Discord's 30 s window.
    const h = await start(context, { simulator: { memberRequestCooldownMs: 1_000 } });
    await eventually(async () => expect(await get(h, '/v1/ready')).toEqual(READY));
    // Not resumable: the shard identifies again, paced about 5 s after its last IDENTIFY.
    h.simulator.faults.invalidateSession(false);
    await eventually(async () =>
      expect((await get(h, '/v1/ready')).body.error?.message).toMatch(
        /gateway: .*shard 0 identifying, last event \d+\.\d s ago/,
      ),
    );
    await eventually(async () => expect(await get(h, '/v1/ready')).toEqual(READY), 15_000);
    expect(h.simulator.identifyCount).toBe(2);
  }, 20_000);

  it('is 503 from a dropped gateway connection until the session is resumed', async (context) => {
    const h = await start(context);
    await eventually(async () => expect(await get(h, '/v1/ready')).toEqual(READY));
    // Probed back to back, as a load balancer would (each probe waits for the answer to the last).
    const seen: string[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const { status } = await get(h, '/v1/ready');
        if (seen.at(-1) !== String(status)) seen.push(String(status));
      }
    })();
    await eventually(() => expect(seen).toEqual(['200']));
    h.simulator.faults.dropConnection();
    await eventually(() => expect(h.simulator.resumeCount).toBe(1));
    await eventually(() => expect(seen.at(-1)).toBe('200'));
    polling = false;
    await poller;
    expect(seen).toEqual(['200', '503', '200']);
    expect(h.simulator.identifyCount).toBe(1);
  });

  it('is 503 naming the store when the store cannot be reached', async (context) => {
    const h = await start(context);
    await eventually(async () => expect(await get(h, '/v1/ready')).toEqual(READY));
    await h.app.store.close();
    expect(await get(h, '/v1/ready')).toEqual(notReady('store'));
    expect((await get(h, '/v1/health')).status).toBe(200);
  });

  it('is 503 once shutdown has begun, for the requests still answered while it drains', async (context) => {
    const h = await start(context);
    await eventually(async () => expect(await get(h, '/v1/ready')).toEqual(READY));
    // A request whose headers are still arriving when the SIGTERM comes: it is answered during the drain.
    const connection = await RawConnection.open(h.base);
    await connection.write('GET /v1/ready HTTP/1.1\r\nHost: presently\r\n');
    const closing = h.app.close();
    // Shutdown has begun once the port refuses new connections; the request above is still to be answered.
    await eventually(async () => expect(await refused(h.base)).toBe(true));
    await connection.write('\r\n');
    const text = await connection.waitFor(/\r\n\r\n\{.*\}$/s);
    expect(statusLines(text)).toEqual(['HTTP/1.1 503 Service Unavailable']);
    expect(lastJsonBody(text)).toEqual({
      success: false,
      error: { code: 'not_ready', message: 'not ready: shutting down' },
    });
    await closing;
  });
});
