import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateApiKey } from '../../src/keys/api-key.js';
import type { ApiKeyService } from '../../src/keys/service.js';
import { LINGER_MAX_BYTES, LINGER_MS, LINGER_TURN_BYTES } from '../../src/net/lingering-close.js';
import { startHttpServer } from '../support/http-server.js';

/**
 * A request refused before its body is read (a 413 from Content-Length, a 401) is answered while the
 * client is still sending. Every common client must read that answer, not a reset connection, whatever
 * the size of what it sends.
 */
const USER = '80351110224678912';
const LIVE = generateApiKey();
const keys = {
  ownerOf: async (key: string) => (key === LIVE ? USER : undefined),
} as ApiKeyService;
const MIB = 1024 * 1024;
const PATH = '/v1/users/@me/kv/big';

interface Answer {
  status: number;
  body: string;
}

/** Runs `program` with `args`, feeding it `input`, and resolves with what it printed. */
function run(program: string, args: string[], input?: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${program}: ${err}`))));
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/** A PUT of `size` bytes from Python, with urllib or requests; prints the status and the body as JSON. */
const PYTHON = `
import json, sys
library, url, size, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
body = b"x" * size
headers = {"Authorization": key} if key else {}
if library == "requests":
    import requests
    answer = requests.put(url, data=body, headers=headers)
    print(json.dumps({"status": answer.status_code, "body": answer.text}))
else:
    import urllib.error, urllib.request
    try:
        answer = urllib.request.urlopen(urllib.request.Request(url, data=body, method="PUT", headers=headers))
    except urllib.error.HTTPError as error:
        answer = error
    print(json.dumps({"status": answer.status, "body": answer.read().decode()}))
`;

type Client = (url: string, size: number, key: string | null) => Promise<Answer>;

const CLIENTS: Record<string, Client> = {
  'Node fetch': async (url, size, key) => {
    const answer = await fetch(url, {
      method: 'PUT',
      body: Buffer.alloc(size, 120),
      headers: key ? { authorization: key } : {},
    });
    return { status: answer.status, body: await answer.text() };
  },
  undici: async (url, size, key) => {
    const answer = await undiciRequest(url, {
      method: 'PUT',
      body: Buffer.alloc(size, 120),
      headers: key ? { authorization: key } : {},
    });
    return { status: answer.statusCode, body: await answer.body.text() };
  },
  'Python urllib': async (url, size, key) =>
    JSON.parse(await run('python3', ['-c', PYTHON, 'urllib', url, String(size), key ?? ''])) as Answer,
  'Python requests': async (url, size, key) =>
    JSON.parse(await run('python3', ['-c', PYTHON, 'requests', url, String(size), key ?? ''])) as Answer,
  curl: async (url, size, key) => {
    const printed = await run(
      'curl',
      [
        ...['-sS', '-X', 'PUT', '--data-binary', '@-', '-w', '\n%{http_code}'],
        ...(key ? ['-H', `authorization: ${key}`] : []),
        url,
      ],
      Buffer.alloc(size, 120),
    );
    const at = printed.lastIndexOf('\n');
    return { status: Number(printed.slice(at + 1)), body: printed.slice(0, at) };
  },
};

let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  ({ app, base } = await startHttpServer({ keys, rateLimits: { read: 0, write: 1_000 } }));
});

afterAll(async () => {
  await app?.close();
});

describe.each(Object.entries(CLIENTS))('%s', (_name, client) => {
  it.each([4, 64])('reads the 413 of a %i MiB body refused from its Content-Length', async (mib) => {
    const answer = await client(`${base}${PATH}`, mib * MIB, LIVE);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({
      success: false,
      error: { code: 'payload_too_large' },
    });
  });

  it('reads the 401 of a 4 MiB body sent without a key', async () => {
    const answer = await client(`${base}${PATH}`, 4 * MIB, null);
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toMatchObject({ success: false, error: { code: 'invalid_api_key' } });
  });
});

describe('a keyless write held in the tarpit', () => {
  let tarpit: FastifyInstance;
  let tarpitBase: string;

  beforeAll(async () => {
    ({ app: tarpit, base: tarpitBase } = await startHttpServer({
      rateLimits: { read: 0, write: 1 },
      abuseRefusalDelayMs: 0,
    }));
    // One write refused for its key spends the budget, the next is refused for it: the client is spent.
    for (const status of [401, 429]) {
      expect((await fetch(`${tarpitBase}${PATH}`, { method: 'PUT', body: 'x' })).status).toBe(status);
    }
  });

  afterAll(async () => {
    await tarpit?.close();
  });

  it.each(['Python urllib', 'curl'])('is answered 429 to %s sending 64 MiB', async (name) => {
    const answer = await (CLIENTS[name] as Client)(`${tarpitBase}${PATH}`, 64 * MIB, null);
    expect(answer.status).toBe(429);
    expect(JSON.parse(answer.body)).toMatchObject({ success: false, error: { code: 'rate_limited' } });
  });
});

/**
 * A connection that keeps its side open after the server ends its own, as a client still sending does;
 * `cut` resolves when the server has closed the connection on its side.
 */
async function halfOpen(): Promise<{
  socket: Socket;
  /** The server's side of the connection. */
  ours: Socket;
  received: () => string;
  cut: Promise<unknown>;
}> {
  const url = new URL(base);
  const accepted = once(app.server, 'connection') as Promise<[Socket]>;
  const socket = connect({ port: Number(url.port), host: url.hostname, allowHalfOpen: true });
  let text = '';
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
  });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const [ours] = await accepted;
  // On 'close', whatever came before it (the server's side errs when its client ends a body half sent).
  const cut = new Promise((resolve) => ours.once('close', resolve));
  return { socket, ours, received: () => text, cut };
}

describe('the lingering close', () => {
  /** A body announced far past the bound: a lingering close checks its bounds now and then, not per byte. */
  const ANNOUNCED = 16 * LINGER_MAX_BYTES;
  const HEAD = `PUT ${PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: ${ANNOUNCED}\r\n\r\n`;
  /** The body, written again and again: the client allocates nothing as it sends. */
  const CHUNK = Buffer.alloc(MIB, 120);

  it('ends our side with the answer, reads on, and closes LINGER_MS later', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'Date'] });
    try {
      const { socket, received, cut } = await halfOpen();
      const ended = once(socket, 'end');
      socket.write(`${HEAD}xx`);
      await ended;
      expect(received()).toMatch(/^HTTP\/1\.1 401 [\s\S]*invalid_api_key/);
      vi.advanceTimersByTime(LINGER_MS + 1_000);
      await cut;
      socket.destroy();
    } finally {
      vi.useRealTimers();
    }
  });

  /** Sends HEAD, then the body until the server cuts the connection; resolves with what was sent. */
  async function sendUntilCut(): Promise<{ sent: number; received: string }> {
    const { socket, received, cut } = await halfOpen();
    let gone = false;
    const closed = cut.then(() => {
      gone = true;
    });
    socket.write(HEAD);
    let sent = 0;
    while (!gone && !socket.destroyed && sent < ANNOUNCED) {
      if (!socket.write(CHUNK)) await Promise.race([once(socket, 'drain').catch(() => undefined), closed]);
      sent += CHUNK.length;
    }
    await closed;
    socket.destroy();
    return { sent, received: received() };
  }

  it('cuts a client that sends more than LINGER_MAX_BYTES after the answer', async () => {
    const { sent, received } = await sendUntilCut();
    expect(received).toMatch(/^HTTP\/1\.1 401 /);
    expect(sent).toBeGreaterThan(LINGER_MAX_BYTES);
    expect(sent).toBeLessThan(ANNOUNCED);
  });

  /** What one read of a lingering connection takes at most: the scratch buffer. */
  const READ_BYTES = 64 * 1024;

  /**
   * `connections` clients refused together, each sending `sent` bytes after its answer as fast as the
   * connection takes them: per turn of the event loop once the answers are out, what the lingering
   * connections read in it, and per connection the first turn in which it read.
   */
  async function lingerTogether(connections: number, sent: number) {
    // One at a time: each is told from the others by the server's next connection.
    const opened: Awaited<ReturnType<typeof halfOpen>>[] = [];
    for (let n = 0; n < connections; n++) opened.push(await halfOpen());
    const sending = opened.map(async ({ socket }) => {
      socket.write(HEAD);
      for (let bytes = 0; bytes < sent && !socket.destroyed; bytes += CHUNK.length) {
        if (!socket.write(CHUNK)) await once(socket, 'drain').catch(() => undefined);
      }
      socket.end();
    });
    await Promise.all(opened.map(({ socket }) => once(socket, 'end')));
    const readBy = () => opened.map(({ ours }) => ours.bytesRead);
    const perTurn: number[] = [];
    const firstReadTurn: Array<number | null> = opened.map(() => null);
    let before = readBy();
    let cutAll = false;
    void Promise.all(opened.map(({ cut }) => cut)).then(() => {
      cutAll = true;
    });
    while (!cutAll) {
      await new Promise((resolve) => setImmediate(resolve));
      const now = readBy();
      perTurn.push(now.reduce((sum, bytes, n) => sum + bytes - (before[n] as number), 0));
      now.forEach((bytes, n) => {
        if (bytes > (before[n] as number)) firstReadTurn[n] ??= perTurn.length;
      });
      before = now;
    }
    await Promise.all(sending);
    for (const { received, socket } of opened) {
      expect(received()).toMatch(/^HTTP\/1\.1 401 /);
      socket.destroy();
    }
    return { perTurn, firstReadTurn };
  }

  it("reads connections refused together a turn's budget at a time, however much each has waiting", async () => {
    const CONNECTIONS = 12;
    const { perTurn } = await lingerTogether(CONNECTIONS, 6 * MIB);
    // Everything was read and dropped, in many turns, none of them past the budget and the read that spent it.
    expect(perTurn.reduce((sum, bytes) => sum + bytes, 0)).toBeGreaterThan(CONNECTIONS * MIB);
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(LINGER_TURN_BYTES + READ_BYTES);
  });

  it('gives every connection held back its turn, not the first ones refused every time', async () => {
    const CONNECTIONS = 16;
    const { firstReadTurn } = await lingerTogether(CONNECTIONS, 6 * MIB);
    // Each turn, one or more that waited read: every one has read within a turn or two per connection. The
    // first ones refused, each reading until done, would keep the last waiting for hundreds of turns.
    const lastToRead = Math.max(...firstReadTurn.map((turn) => turn ?? Number.POSITIVE_INFINITY));
    expect(lastToRead).toBeLessThanOrEqual(2 * CONNECTIONS);
  });

  it('drops what it reads without allocating for it, so no full garbage collection comes of it', async () => {
    const majors: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
        if (detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(entry.duration);
      }
    });
    observer.observe({ entryTypes: ['gc'] });
    try {
      let dropped = 0;
      for (let n = 0; n < 8; n++) dropped += (await sendUntilCut()).sent;
      expect(dropped).toBeGreaterThan(8 * LINGER_MAX_BYTES);
    } finally {
      observer.disconnect();
    }
    // Half a gigabyte read at a new buffer each time makes several; one may come of the rest of the process.
    expect(majors.length).toBeLessThanOrEqual(1);
  });
});

describe('docs/limits.md', () => {
  it('gives the bounds of a lingering close the code has', () => {
    const row = readFileSync(new URL('../../docs/limits.md', import.meta.url), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('| ') && line.includes('`LINGER_MAX_BYTES`'));
    expect(row).toContain(`| ${LINGER_MAX_BYTES / MIB} MiB or ${LINGER_MS / 1000} s, whichever comes first`);
    expect(row).toContain(
      `read ${LINGER_TURN_BYTES / 1024} KiB per turn of the event loop (\`LINGER_TURN_BYTES\`)`,
    );
  });
});
