import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type PresenceUpdate,
  PresentlyClient,
  PresentlyError,
  type PresentlyEvents,
  type StreamFetch,
} from '../../src/client/index.js';
import type { SseStream } from '../../src/sse/stream.js';
import { ALICE, BOB, bump, CAROL, fixtureReady, NOBODY, restPresence, seed } from '../socket/fixture.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { SseReader } from './reader.js';

/**
 * `PresentlyClient.events()` in Node 20, which has no EventSource: the stream read over fetch, reconnected
 * with the id of the last event it had, refusals reported and retried, or not when retrying cannot help.
 */

const RETRY_MS = 100;
const FAST_RECONNECT = { minMs: 50, maxMs: 200 };

interface Recorded {
  events: PresentlyEvents;
  presences: PresenceUpdate[];
  errors: Error[];
  /** How many times the stream told it opened. */
  opens: number;
  /** URLs and Last-Event-IDs of every request the client made. */
  requests: { url: string; lastEventId: string | undefined }[];
}

const running: PresentlyEvents[] = [];
const readers: SseReader[] = [];

function record(h: Harness, ids: string | string[]): Recorded {
  const recorded: Omit<Recorded, 'events'> = { presences: [], errors: [], opens: 0, requests: [] };
  const fetching: StreamFetch = (url, init) => {
    recorded.requests.push({ url, lastEventId: init.headers['last-event-id'] });
    return fetch(url, init);
  };
  const events = new PresentlyClient({ baseUrl: h.base }).events(
    ids,
    (presence) => recorded.presences.push(presence),
    {
      fetch: fetching,
      reconnectDelay: FAST_RECONNECT,
      onError: (error) => recorded.errors.push(error),
      onOpen: () => recorded.opens++,
    },
  );
  running.push(events);
  // The counters are read as they grow: the object is returned, not a copy of its numbers.
  return Object.assign(recorded, { events });
}

const textOf = (presence: PresenceUpdate | undefined) => presence?.custom_status?.text;

/** The server's own streams, to end one as a restart or a proxy would. */
const serverStreams = (h: Harness) => [...(h.app.sse as unknown as { streams: Set<SseStream> }).streams];

describe('over fetch', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      setup: seed,
      sse: { retryMs: RETRY_MS },
      env: { SUBSCRIPTIONS_PER_SOCKET: '3' },
    });
    await fixtureReady(h);
  });

  afterEach(async () => {
    for (const events of running.splice(0)) events.close();
    for (const reader of readers.splice(0)) reader.close();
    await eventually(() => expect(h.app.sse.streamCount).toBe(0));
  });

  afterAll(async () => {
    await h?.close();
  });

  it('hands over each presence with its user_id, then every change', async () => {
    const recorded = record(h, [ALICE, BOB, NOBODY]);
    await eventually(() => expect(recorded.presences).toHaveLength(2));
    expect(recorded.presences).toEqual([
      { user_id: ALICE, ...(await restPresence(h, ALICE)) },
      { user_id: BOB, ...(await restPresence(h, BOB)) },
    ]);
    const text = bump(h, BOB);
    await eventually(() => expect(textOf(recorded.presences[2])).toBe(text));
    expect(recorded.presences[2]?.user_id).toBe(BOB);
    expect(recorded.errors).toEqual([]);
  });

  it('comes back after the server ends the stream, with the last id, and is sent only what it missed', async () => {
    const recorded = record(h, [ALICE, BOB]);
    await eventually(() => expect(recorded.presences).toHaveLength(2));
    await eventually(() => expect(recorded.events.lastEventId).not.toBeNull());
    const [stream] = serverStreams(h);
    // Another stream of Alice's keeps her changes' events in the replay ring while the client is away.
    const witness = await SseReader.connect(h.base, `/v1/events?ids=${ALICE}`);
    readers.push(witness);
    await witness.eventCount(1);
    const since = recorded.events.lastEventId;
    stream?.end();
    const text = bump(h, ALICE);
    await witness.until((event) => event.id !== undefined);

    await eventually(() => expect(recorded.presences).toHaveLength(3));
    expect(textOf(recorded.presences[2])).toBe(text);
    expect(recorded.requests.map((request) => request.lastEventId)).toEqual([undefined, since]);
    expect(recorded.opens).toBe(2);
    const after = bump(h, BOB);
    await eventually(() => expect(textOf(recorded.presences[3])).toBe(after));
    expect(recorded.presences).toHaveLength(4);
  });

  it('a refusal retrying cannot help (400) is reported once, and not asked again', async () => {
    const recorded = record(h, [ALICE, BOB, CAROL, '80351110224678915']);
    await eventually(() => expect(recorded.errors).toHaveLength(1));
    const [error] = recorded.errors;
    expect(error).toBeInstanceOf(PresentlyError);
    expect(error).toMatchObject({ code: 'invalid_query', status: 400 });
    expect(recorded.events.closed).toBe(true);
    expect(recorded.requests).toHaveLength(1);
  });

  it('refuses an id that is not one before asking anything', () => {
    expect(() => new PresentlyClient({ baseUrl: h.base }).events(['12', 'abc'], () => undefined)).toThrow(
      '"abc" is not a Discord user id',
    );
  });
});

describe('MAX_SOCKETS=1', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ setup: seed, env: { MAX_SOCKETS: '1' } });
    await fixtureReady(h);
  });

  afterAll(async () => {
    for (const events of running.splice(0)) events.close();
    await h?.close();
  });

  it('503 try_again_later is reported and retried after a back-off until a slot is free', async () => {
    const blocker = await SseReader.connect(h.base, `/v1/events?ids=${ALICE}`);
    await blocker.eventCount(1);
    const recorded = record(h, ALICE);
    await eventually(() => expect(recorded.errors.length).toBeGreaterThanOrEqual(2));
    expect(recorded.errors[0]).toMatchObject({ code: 'try_again_later', status: 503 });
    expect(recorded.presences).toEqual([]);
    blocker.close();
    await eventually(() => expect(recorded.presences).toHaveLength(1));
    expect(recorded.presences[0]?.user_id).toBe(ALICE);
  });
});
