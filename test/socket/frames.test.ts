import { Duplex } from 'node:stream';
import * as zlib from 'node:zlib';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { eventJson, helloJson, SharedEvent, singleFrame } from '../../src/socket/frames.js';
import { adler32, adler32Combine, DEFLATES_AT_ONCE, deflatePiece } from '../../src/socket/zlib-pieces.js';

// The real zlib, with deflateRawSync counted (the shared tail must be deflated once per event) and the
// streams of pieces watched (how many hold zlib's state at once).
vi.mock('node:zlib', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:zlib')>();
  return {
    ...actual,
    deflateRawSync: vi.fn(actual.deflateRawSync),
    deflateRaw: vi.fn(actual.deflateRaw),
    deflate: vi.fn(actual.deflate),
  };
});

const deflateRawSpy = vi.mocked(zlib.deflateRawSync);

const PRESENCE = {
  discord_user: { id: '94490510688792576', username: 'alice' },
  discord_status: 'online',
  kv: { note: 'héllo ✓ 🎵' },
  activities: [],
};
const D_JSON = JSON.stringify({ user_id: '94490510688792576', ...PRESENCE });

/** The zlib stream's own Adler-32: its last four bytes, as node's zlib writes them. */
const zlibAdler = (data: Buffer): number => {
  const stream = zlib.deflateSync(data);
  return stream.readUInt32BE(stream.length - 4);
};

/** Reproducible pseudo-random bytes (xorshift32), so a failure can be replayed. */
let state = 0x9e3779b9;
function randomBytes(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[i] = state & 0xff;
  }
  return bytes;
}
const randomInt = (below: number): number => randomBytes(4).readUInt32BE() % below;

/** Where the shared compressed tail starts in a zlib frame: 2-byte header, 5-byte stored-block header, head. */
const headLength = (seq: number): number => Buffer.byteLength(`{"op":0,"seq":${seq},`);
const compressedTailOf = (frame: Buffer, seq: number): Buffer => frame.subarray(2 + 5 + headLength(seq), -4);

/** Text that deflate cannot shrink much, so the tail spans several deflate blocks. */
const incompressible = (bytes: number): string => randomBytes(Math.ceil(bytes / 4) * 3).toString('base64');

/** What one write of a frame put on a connection: the chunks, as written, in one writev. */
function writtenBy(write: (connection: Duplex) => void): Buffer[][] {
  const writes: Buffer[][] = [];
  const connection = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      writes.push([chunk]);
      done();
    },
    writev(chunks, done) {
      writes.push(chunks.map(({ chunk }) => chunk as Buffer));
      done();
    },
  });
  write(connection);
  return writes;
}

/** An unmasked WebSocket frame's FIN bit, opcode and payload (RFC 6455 §5.2). */
function decodeFrame(bytes: Buffer): { fin: boolean; opcode: number; payload: Buffer } {
  const short = (bytes[1] as number) & 0x7f;
  let at = 2;
  let length = short;
  if (short === 126) {
    length = bytes.readUInt16BE(2);
    at = 4;
  } else if (short === 127) {
    length = Number(bytes.readBigUInt64BE(2));
    at = 10;
  }
  expect(bytes.length).toBe(at + length);
  return {
    fin: ((bytes[0] as number) & 0x80) !== 0,
    opcode: (bytes[0] as number) & 0x0f,
    payload: bytes.subarray(at),
  };
}

/** The payload of the one frame `write` put on a connection, checked to be a whole message of `opcode`. */
function messageOf(opcode: number, write: (connection: Duplex) => void): Buffer {
  const writes = writtenBy(write);
  expect(writes).toHaveLength(1);
  const frame = decodeFrame(Buffer.concat(writes[0] as Buffer[]));
  expect(frame.fin).toBe(true);
  expect(frame.opcode).toBe(opcode);
  return frame.payload;
}

const textOf = (event: SharedEvent, seq: number): Buffer =>
  messageOf(0x1, (connection) => event.writeText(connection, seq));
const zlibOf = (event: SharedEvent, seq: number): Buffer =>
  messageOf(0x2, (connection) => event.writeZlib(connection, seq));

beforeEach(() => {
  deflateRawSpy.mockClear();
});

describe('SharedEvent.writeText', () => {
  it.each([1, 2, 9, 10, 99, 1_000, 65_535, 2 ** 31, Number.MAX_SAFE_INTEGER])(
    'seq %d: valid JSON with that seq and the shared tail',
    (seq) => {
      const event = new SharedEvent('PRESENCE_UPDATE', D_JSON);
      const frame = textOf(event, seq);
      expect(JSON.parse(frame.toString())).toEqual({
        op: 0,
        seq,
        t: 'PRESENCE_UPDATE',
        d: JSON.parse(D_JSON),
      });
      expect(frame.subarray(frame.length - event.tail.length).equals(event.tail)).toBe(true);
      expect(event.tail.toString()).toBe(`"t":"PRESENCE_UPDATE","d":${D_JSON}}`);
    },
  );

  it('is byte for byte what eventJson builds for a single socket', () => {
    const event = new SharedEvent('INIT_STATE', D_JSON);
    expect(textOf(event, 7).toString()).toBe(eventJson(7, 'INIT_STATE', D_JSON));
  });

  it('keeps multi-byte UTF-8 intact', () => {
    const event = new SharedEvent('PRESENCE_UPDATE', D_JSON);
    expect(JSON.parse(textOf(event, 3).toString()).d.kv.note).toBe('héllo ✓ 🎵');
  });

  it('writes the shared tail itself, the same bytes for every socket, after a head of the socket’s own', () => {
    const event = new SharedEvent('PRESENCE_UPDATE', D_JSON);
    for (const seq of [1, 12, 345]) {
      const [write] = writtenBy((connection) => event.writeText(connection, seq));
      expect(write).toHaveLength(2);
      expect(write?.[1]).toBe(event.tail);
      expect(decodeFrame(Buffer.concat(write as Buffer[])).payload.toString()).toBe(
        eventJson(seq, 'PRESENCE_UPDATE', D_JSON),
      );
    }
  });

  it.each([
    ['a 7-bit length', 10],
    ['a 16-bit length', 1_000],
    ['a 64-bit length', 70_000],
  ])('%s in the frame header', (_name, bytes) => {
    const dJson = JSON.stringify({ big: 'x'.repeat(bytes) });
    const event = new SharedEvent('PRESENCE_UPDATE', dJson);
    expect(textOf(event, 9).toString()).toBe(eventJson(9, 'PRESENCE_UPDATE', dJson));
    expect(zlib.inflateSync(zlibOf(event, 9)).toString()).toBe(eventJson(9, 'PRESENCE_UPDATE', dJson));
  });

  it('builds no compressed frame unless asked', () => {
    const event = new SharedEvent('PRESENCE_UPDATE', D_JSON);
    for (let seq = 1; seq <= 10; seq++) textOf(event, seq);
    expect(deflateRawSpy).not.toHaveBeenCalled();
  });
});

describe('SharedEvent.writeZlib', () => {
  it.each([1, 2, 10, 255, 256, 65_535, 65_536, 2 ** 31, Number.MAX_SAFE_INTEGER])(
    'seq %d inflates to exactly the text frame of seq',
    (seq) => {
      const event = new SharedEvent('PRESENCE_UPDATE', D_JSON);
      const frame = zlibOf(event, seq);
      expect(frame[0]).toBe(0x78);
      expect(((frame[0] as number) * 256 + (frame[1] as number)) % 31).toBe(0); // a valid zlib header
      expect(zlib.inflateSync(frame).equals(textOf(event, seq))).toBe(true);
    },
  );

  it('frames for many seqs of one event each inflate to their own text', () => {
    const event = new SharedEvent('PRESENCE_UPDATE', D_JSON);
    for (const seq of [5, 1, 3, 1, 42, 12_345]) {
      expect(zlib.inflateSync(zlibOf(event, seq)).equals(textOf(event, seq))).toBe(true);
    }
  });

  it.each([
    ['compressible', 'a'.repeat(100 * 1024)],
    ['incompressible', incompressible(100 * 1024)],
    ['over 64 KiB of multi-byte text', '✓🎵'.repeat(15_000)],
  ])('a large (100 KB) %s payload', (_name, value) => {
    const dJson = JSON.stringify({ ...PRESENCE, kv: { big: value } });
    expect(Buffer.byteLength(dJson)).toBeGreaterThan(100 * 1024);
    const event = new SharedEvent('PRESENCE_UPDATE', dJson);
    for (const seq of [1, 2, 1_000_000]) {
      const inflated = zlib.inflateSync(zlibOf(event, seq));
      expect(inflated.equals(textOf(event, seq))).toBe(true);
      expect(JSON.parse(inflated.toString()).d.kv.big).toBe(value);
    }
  });

  it('an empty object and INIT_STATE maps work too', () => {
    for (const [t, d] of [
      ['INIT_STATE', '{}'],
      ['INIT_STATE', `{"1":${D_JSON},"2":${D_JSON}}`],
    ] as const) {
      const event = new SharedEvent(t, d);
      expect(JSON.parse(zlib.inflateSync(zlibOf(event, 1)).toString())).toEqual({
        op: 0,
        seq: 1,
        t,
        d: JSON.parse(d),
      });
    }
  });

  it('inflates with a streaming inflater fed byte by byte, as browser clients do', async () => {
    const event = new SharedEvent('PRESENCE_UPDATE', D_JSON);
    const frame = zlibOf(event, 77);
    const inflate = zlib.createInflate();
    const chunks: Buffer[] = [];
    inflate.on('data', (chunk: Buffer) => chunks.push(chunk));
    const done = new Promise<void>((resolve, reject) => {
      inflate.on('end', resolve);
      inflate.on('error', reject);
    });
    for (const byte of frame) inflate.write(Buffer.from([byte]));
    inflate.end();
    await done;
    expect(Buffer.concat(chunks).equals(textOf(event, 77))).toBe(true);
  });

  it('deflates the tail once however many zlib frames are built, sharing its bytes at the same offset', () => {
    const value = incompressible(20 * 1024);
    const event = new SharedEvent('PRESENCE_UPDATE', JSON.stringify({ ...PRESENCE, kv: { big: value } }));
    const expectedTail = zlib.deflateRawSync(event.tail);
    deflateRawSpy.mockClear();

    const frames = Array.from({ length: 1_000 }, (_, i) => zlibOf(event, i + 1));

    expect(deflateRawSpy).toHaveBeenCalledTimes(1);
    expect(deflateRawSpy.mock.calls[0]?.[0]).toEqual(event.tail);
    frames.forEach((frame, i) => {
      const seq = i + 1;
      // header, stored block of the head, shared compressed tail, Adler-32
      expect(frame.subarray(0, 2).equals(Buffer.from([0x78, 0x01]))).toBe(true);
      expect(frame[2]).toBe(0); // BFINAL 0, BTYPE 00: a stored block
      expect(frame.readUInt16LE(3)).toBe(headLength(seq));
      expect(frame.readUInt16LE(5)).toBe(~headLength(seq) & 0xffff);
      expect(frame.subarray(7, 7 + headLength(seq)).toString()).toBe(`{"op":0,"seq":${seq},`);
      expect(compressedTailOf(frame, seq).equals(expectedTail)).toBe(true);
      expect(frame.length).toBe(2 + 5 + headLength(seq) + expectedTail.length + 4);
    });
    for (const seq of [1, 500, 1_000]) {
      expect(zlib.inflateSync(frames[seq - 1] as Buffer).equals(textOf(event, seq))).toBe(true);
    }
  });

  it('each event deflates its own tail once', () => {
    const events = Array.from({ length: 5 }, (_, i) => new SharedEvent('PRESENCE_UPDATE', `{"n":${i}}`));
    for (const event of events) for (let seq = 1; seq <= 20; seq++) zlibOf(event, seq);
    expect(deflateRawSpy).toHaveBeenCalledTimes(5);
  });
});

describe('single frames', () => {
  it('Hello', () => {
    expect(JSON.parse(helloJson(30_000))).toEqual({ op: 1, d: { heartbeat_interval: 30_000 } });
    expect(JSON.parse(helloJson(200))).toEqual({ op: 1, d: { heartbeat_interval: 200 } });
  });

  it('eventJson', () => {
    expect(JSON.parse(eventJson(3, 'INIT_STATE', '{}'))).toEqual({ op: 0, seq: 3, t: 'INIT_STATE', d: {} });
  });

  it('uncompressed: the JSON text itself; compressed: zlib that inflates to it', () => {
    const json = eventJson(1, 'INIT_STATE', D_JSON);
    expect(singleFrame(json, false)).toBe(json);
    const compressed = singleFrame(json, true);
    expect(Buffer.isBuffer(compressed)).toBe(true);
    expect(zlib.inflateSync(compressed as Buffer).toString()).toBe(json);
  });
});

describe('Adler-32', () => {
  it('known values', () => {
    expect(adler32(Buffer.alloc(0))).toBe(1);
    expect(adler32(Buffer.from('Wikipedia'))).toBe(0x11e60398);
    expect(adler32(Buffer.from('a'))).toBe(0x00620062);
  });

  it('matches zlib on random buffers, including long runs of 0xff', () => {
    for (const length of [1, 2, 100, 5_552, 5_553, 65_521, 100_000]) {
      const data = randomBytes(length);
      expect(adler32(data)).toBe(zlibAdler(data));
      const ff = Buffer.alloc(length, 0xff);
      expect(adler32(ff)).toBe(zlibAdler(ff));
    }
  });

  it("a deflated piece carries its text's checksum and inflates back to it, megabytes long too", async () => {
    for (const length of [0, 1, 65_536, 4 * 1024 * 1024 + 3]) {
      const text = randomBytes(length);
      const piece = await deflatePiece(text);
      expect(piece).toMatchObject({ adler: zlibAdler(text), length });
      const inflated = zlib.inflateRawSync(piece.deflated, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
      expect(inflated.equals(text)).toBe(true);
    }
  });

  it('pieces asked for all at once hold zlib state a few at a time, and each comes back right', async () => {
    const mocks = { deflate: vi.mocked(zlib.deflate), deflateRaw: vi.mocked(zlib.deflateRaw) };
    const real = {
      deflate: mocks.deflate.getMockImplementation(),
      deflateRaw: mocks.deflateRaw.getMockImplementation(),
    };
    const open = { deflate: 0, deflateRaw: 0, both: 0 };
    const mostOpen = { deflate: 0, deflateRaw: 0, both: 0 };
    const watched = (name: 'deflate' | 'deflateRaw') => {
      const stream = real[name] as (...args: unknown[]) => void;
      mocks[name].mockImplementation(((...args: unknown[]) => {
        for (const key of [name, 'both'] as const) {
          open[key]++;
          mostOpen[key] = Math.max(mostOpen[key], open[key]);
        }
        const done = args.at(-1) as (error: Error | null, result: Buffer) => void;
        stream(...args.slice(0, -1), (error: Error | null, result: Buffer) => {
          open[name]--;
          open.both--;
          done(error, result);
        });
      }) as never);
    };
    watched('deflate');
    watched('deflateRaw');
    try {
      const texts = Array.from({ length: 200 }, () => randomBytes(1 + randomInt(300_000)));
      const pieces = await Promise.all(texts.map((text) => deflatePiece(text)));
      pieces.forEach((piece, i) => {
        const text = texts[i] as Buffer;
        expect(piece).toMatchObject({ adler: zlibAdler(text), length: text.length });
        const inflated = zlib.inflateRawSync(piece.deflated, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
        expect(inflated.equals(text)).toBe(true);
      });
      // A piece is one stream, or two when it is long enough to be summed by zlib too.
      expect(mostOpen.deflateRaw).toBe(DEFLATES_AT_ONCE);
      expect(mostOpen.deflate).toBeGreaterThan(0);
      expect(mostOpen.both).toBeLessThanOrEqual(2 * DEFLATES_AT_ONCE);
    } finally {
      mocks.deflate.mockImplementation(real.deflate as never);
      mocks.deflateRaw.mockImplementation(real.deflateRaw as never);
    }
  });

  it('adler32Combine equals adler32 of the concatenation on random buffers', () => {
    const lengths = [0, 1, 2, 3, 17, 255, 5_552, 65_520, 65_521, 65_522, 131_043, 200_000];
    const cases: [Buffer, Buffer][] = [];
    for (const a of lengths) {
      for (const b of lengths) cases.push([randomBytes(a), randomBytes(b)]);
    }
    for (let i = 0; i < 200; i++) {
      cases.push([randomBytes(randomInt(3_000)), randomBytes(randomInt(3_000))]);
    }
    cases.push([Buffer.alloc(70_000, 0xff), Buffer.alloc(140_000, 0xff)]);
    cases.push([Buffer.alloc(70_000, 0), Buffer.alloc(140_000, 0)]);
    for (const [first, second] of cases) {
      const expected = adler32(Buffer.concat([first, second]));
      expect(adler32Combine(adler32(first), adler32(second), second.length)).toBe(expected);
      expect(expected).toBe(zlibAdler(Buffer.concat([first, second])));
    }
  });
});
