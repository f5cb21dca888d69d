import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isSnowflake } from '../../src/presence/snowflake.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { type Frame, SocketClient, terminateAll } from './client.js';
import { FIXTURE_USERS, fixtureReady, NOBODY, type PresenceData, seed } from './fixture.js';

/**
 * Property-based: arbitrary sequences of client frames — text and binary, fragmented or whole, JSON or not,
 * right and wrong ops and field types, over the size limit, invalid UTF-8 — against the live socket
 * gateway. The expected outcome of each sequence comes from a model of the contract (docs/api.md, "WebSocket:
 * /socket"), written here independently of src/socket/protocol.ts: every valid op 2 is answered with its
 * INIT_STATE, the first bad frame closes the socket with the contract's code, and whatever happened, the
 * socket's subscriptions are released and the process carries on.
 */

/** Socket sessions per run of the property: each opens, talks and closes a real socket. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 120);
/** Small, so sequences reach it. */
const MAX_IDS = 6;
const MAX_FRAME_BYTES = 64 * 1024;

const REASONS: Record<number, string> = {
  4004: 'unknown_opcode',
  4005: 'requires_data_object',
  4006: 'invalid_payload',
};

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ setup: seed, env: { SUBSCRIPTIONS_PER_SOCKET: String(MAX_IDS) } });
  await fixtureReady(h);
});

afterEach(async () => {
  await terminateAll();
});

afterAll(async () => {
  await h?.close();
});

// ---- the model -----------------------------------------------------------------------------------------

type Outcome =
  | { kind: 'ok' }
  | { kind: 'subscribe'; ids: string[]; all: boolean; single: string | undefined }
  | { kind: 'unsubscribe'; ids: string[]; all: boolean }
  | { kind: 'close'; code: number };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The ids of `…_id` and `…_ids`, or null when either is not what the contract allows. */
function idsOf(single: unknown, many: unknown): string[] | null {
  const ids: string[] = [];
  if (single !== undefined) {
    if (typeof single !== 'string' || !isSnowflake(single)) return null;
    ids.push(single);
  }
  if (many !== undefined) {
    if (!Array.isArray(many) || many.length > MAX_IDS) return null;
    for (const id of many) {
      if (typeof id !== 'string' || !isSnowflake(id)) return null;
      ids.push(id);
    }
  }
  return ids;
}

/** What the contract says one frame (its whole message, as received) does. */
function outcomeOf(payload: Buffer, text: boolean): Outcome {
  const close = (code: number): Outcome => ({ kind: 'close', code });
  if (payload.length > MAX_FRAME_BYTES) return close(1009);
  // RFC 6455: a text message that is not UTF-8 fails the connection with 1007.
  if (text && !Buffer.from(payload.toString('utf8')).equals(payload)) return close(1007);
  let frame: unknown;
  try {
    frame = JSON.parse(payload.toString('utf8'));
  } catch {
    return close(4006);
  }
  if (!isObject(frame)) return close(4006);
  if (frame.op === 3) return { kind: 'ok' };
  if (frame.op !== 2 && frame.op !== 4) return close(4004);
  if (!isObject(frame.d)) return close(4005);
  const d = frame.d;
  const [single, many, all] =
    frame.op === 2
      ? [d.subscribe_to_id, d.subscribe_to_ids, d.subscribe_to_all]
      : [d.unsubscribe_from_id, d.unsubscribe_from_ids, d.unsubscribe_from_all];
  const ids = idsOf(single, many);
  if (ids === null || (all !== undefined && typeof all !== 'boolean')) return close(4006);
  if (single === undefined && many === undefined && all !== true) return close(4006);
  if (frame.op === 4) return { kind: 'unsubscribe', ids, all: all === true };
  const singleMode = many === undefined && all !== true;
  return { kind: 'subscribe', ids, all: all === true, single: singleMode ? (single as string) : undefined };
}

// ---- frames --------------------------------------------------------------------------------------------

const validId = fc.constantFrom(...FIXTURE_USERS, NOBODY, '0', '18446744073709551615', '70000000000000000');
const invalidId = fc.constantFrom('', 'abc', '18446744073709551616', ' 1', '1'.repeat(21), 80351110224678912);
const anyJson = fc.jsonValue({ maxDepth: 2 });
/** Absent more often than not; when there, right (mostly) or wrong in type or value. */
const field = <T>(right: fc.Arbitrary<T>, wrong: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 6, arbitrary: right as fc.Arbitrary<unknown> },
    wrong,
  );
const idField = field(validId, fc.oneof(invalidId, anyJson));
const idsField = field(
  fc.array(validId, { maxLength: 3 }),
  fc.oneof(
    fc.array(validId, { minLength: MAX_IDS + 1, maxLength: MAX_IDS + 2 }),
    fc.array(fc.oneof(validId, invalidId), { minLength: 1, maxLength: 3 }),
    anyJson,
  ),
);
const allField = field(fc.boolean(), anyJson);

/** op 2 or 4 with its three fields (or the other op's: a near miss), and maybe keys nobody knows. */
const data = fc
  .record({
    unsubscribe: fc.boolean(),
    single: idField,
    many: idsField,
    all: allField,
    extra: fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 1 }),
  })
  .map(({ unsubscribe, single, many, all, extra }) => {
    const [id, ids, toAll] = unsubscribe
      ? ['unsubscribe_from_id', 'unsubscribe_from_ids', 'unsubscribe_from_all']
      : ['subscribe_to_id', 'subscribe_to_ids', 'subscribe_to_all'];
    const d: Record<string, unknown> = { ...extra };
    if (single !== undefined) d[id] = single;
    if (many !== undefined) d[ids] = many;
    if (all !== undefined) d[toAll] = all;
    return { unsubscribe, d };
  });

const command = fc
  .record({
    op: fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom(2, 3, 4) },
      // Missing (undefined is left out of the JSON), or anything that is not 2, 3 or 4.
      fc.constantFrom(undefined, 0, 1, 5, -1, 2.5, '2', null, true, [2], { op: 2 }),
    ),
    d: fc.oneof(
      { weight: 12, arbitrary: data },
      anyJson.map((value) => ({ unsubscribe: null, d: value })),
      fc.constant(null),
    ),
  })
  .map(({ op, d }) => {
    // Mostly the op that goes with the fields drawn; now and then the other one.
    const matched = d?.unsubscribe === true && op === 2 ? 4 : d?.unsubscribe === false && op === 4 ? 2 : op;
    return JSON.stringify(d === null ? { op: matched } : { op: matched, d: d.d });
  });

interface Send {
  payload: Buffer;
  binary: boolean;
  /** Split into this many fragments of one message. */
  fragments: number;
}

const payload = fc.oneof(
  { weight: 30, arbitrary: command.map((text) => Buffer.from(text)) },
  fc.string({ maxLength: 30 }).map((text) => Buffer.from(text)),
  anyJson.map((value) => Buffer.from(JSON.stringify(value))),
  // Exactly at and just over the limit: a heartbeat padded with spaces.
  fc.constantFrom(MAX_FRAME_BYTES, MAX_FRAME_BYTES + 1, 200 * 1024).map((size) => {
    const heartbeat = Buffer.from('{"op":3}');
    return Buffer.concat([heartbeat, Buffer.alloc(size - heartbeat.length, 0x20)]);
  }),
  // Not UTF-8: a lone continuation byte, an overlong encoding, a surrogate.
  fc
    .constantFrom([0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff])
    .map((bytes) => Buffer.concat([Buffer.from('{"op":3,"x":"'), Buffer.from(bytes), Buffer.from('"}')])),
);

/** A counterexample shows its payload as text, not as a list of bytes. */
function readable(bytes: Buffer): Buffer {
  return Object.assign(bytes, {
    [fc.toStringMethod]: () =>
      `utf8(${JSON.stringify(bytes.toString('utf8').slice(0, 200))}, ${bytes.length} B)`,
  });
}

const send: fc.Arbitrary<Send> = fc.record({
  payload: payload.map(readable),
  binary: fc.boolean(),
  fragments: fc.constantFrom(1, 1, 1, 2, 3),
});

const session = fc.record({
  zlib: fc.boolean(),
  sends: fc.array(send, { minLength: 1, maxLength: 6 }),
});

function transmit(client: SocketClient, { payload, binary, fragments }: Send): void {
  const size = Math.ceil(payload.length / fragments) || 1;
  for (let at = 0, part = 0; part < fragments; part++, at += size) {
    const last = part === fragments - 1;
    client.ws.send(payload.subarray(at, last ? payload.length : at + size), { binary, fin: last });
  }
}

// ---- the property --------------------------------------------------------------------------------------

describe('arbitrary socket frames', () => {
  it('get the contract’s answers and close codes, and leave nothing behind', {
    timeout: 10_000 + RUNS * 100,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(session, async ({ zlib, sends }) => {
        const client = await SocketClient.connect(h.base, zlib ? '?compression=zlib_json' : '');
        try {
          await converse(client, sends);
        } finally {
          // A failing run must not leave its socket to the next (shrinking replays many).
          client.ws.terminate();
          await client.closed;
        }
        // Whatever happened, the socket and everything it subscribed to are gone once it is closed.
        await eventually(() => {
          expect(h.app.sockets.socketCount).toBe(0);
          expect(h.app.sockets.subscriptions.count).toBe(0);
          expect(h.app.sockets.subscriptions.subscriberCount).toBe(0);
        }, 1_000);
      }),
      // Shrinking a failure replays many sessions: report what it has before the test's own timeout.
      { numRuns: RUNS, interruptAfterTimeLimit: RUNS * 100, markInterruptAsFailure: true },
    );
    // The service is still itself.
    expect((await fetch(`${h.base}/v1/users/${FIXTURE_USERS[0]}`)).status).toBe(200);
  });
});

const MONITORED: ReadonlySet<string> = new Set(FIXTURE_USERS);

/** Sends the frames, then checks what came back (and how the socket ended) against the model. */
async function converse(client: SocketClient, sends: Send[]): Promise<void> {
  // What the model expects: an INIT_STATE per subscription, up to the first frame that closes.
  const expected: Extract<Outcome, { kind: 'subscribe' }>[] = [];
  let closeCode: number | null = null;
  const held = new Set<string>();
  for (const s of sends) {
    transmit(client, s);
    const outcome = outcomeOf(s.payload, !s.binary);
    if (outcome.kind === 'close') {
      closeCode = outcome.code;
      break;
    }
    if (outcome.kind === 'unsubscribe') {
      if (outcome.all) held.clear();
      for (const id of outcome.ids) held.delete(id);
    }
    if (outcome.kind === 'subscribe') {
      for (const id of outcome.ids) held.add(id);
      // More ids than a socket may hold: the contract's invalid_payload.
      if (held.size > MAX_IDS) {
        closeCode = 4006;
        break;
      }
      expected.push(outcome);
    }
  }

  let frames: Frame[];
  if (closeCode === null) {
    // Still open and answering: one more op 2 proves every earlier frame was handled.
    client.send({ op: 2, d: { subscribe_to_ids: [] } });
    let inits = 0;
    frames = await client.until((frame) => frame.t === 'INIT_STATE' && ++inits === expected.length + 1);
    expect(frames.at(-1)?.d).toEqual({});
    frames = frames.slice(0, -1);
    await client.close();
  } else {
    const closed = await client.closedWith();
    expect(closed.code).toBe(closeCode);
    if (REASONS[closeCode]) expect(closed.reason).toBe(REASONS[closeCode]);
    frames = client.pending;
  }

  const inits = frames.filter((frame) => frame.t === 'INIT_STATE');
  expect(inits.map((frame) => frame.seq)).toEqual(expected.map((_, i) => i + 1));
  inits.forEach((frame, i) => {
    const sub = expected[i] as (typeof expected)[number];
    if (sub.single !== undefined) {
      // subscribe_to_id alone: the presence itself, or {} for a user nobody monitors.
      if (MONITORED.has(sub.single)) expect((frame.d as PresenceData).discord_user.id).toBe(sub.single);
      else expect(frame.d).toEqual({});
    } else {
      // Otherwise a map of the monitored ones among those asked for (all of them for subscribe_to_all).
      const wanted = sub.all ? [...MONITORED] : sub.ids.filter((id) => MONITORED.has(id));
      expect(Object.keys(frame.d as object).sort()).toEqual([...new Set(wanted)].sort());
    }
  });
}
