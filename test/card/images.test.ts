import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { imageSize } from '../../src/card/image-size.js';
import {
  cardImageSources,
  IMAGE_FETCH_TIMEOUT_MS,
  ImageCache,
  type ImageCacheOptions,
  imageType,
  MAX_IMAGE_BYTES,
} from '../../src/card/images.js';
import { solidPng } from '../../src/simulator/png.js';
import { eventually, within } from '../support/eventually.js';

/**
 * The image cache against a real HTTP server on loopback that answers, errs, hangs, redirects and serves
 * too much, as image hosts do.
 */

const PNG = solidPng(16, [1, 2, 3]);
const PNG_URI = `data:image/png;base64,${PNG.toString('base64')}`;
const requests = new Map<string, number>();
/** Answers to /held.png, held until the test lets them go. */
const held: Array<() => void> = [];
let server: Server;
let base: string;

function handle(request: IncomingMessage, response: ServerResponse): void {
  const path = (request.url ?? '/').split('?')[0] ?? '/';
  requests.set(path, (requests.get(path) ?? 0) + 1);
  const png = (): void => {
    response.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
    response.end(PNG);
  };
  switch (path) {
    case '/ok.png':
    case '/a.png':
    case '/b.png':
    case '/c.png':
      png();
      return;
    case '/held.png':
      held.push(png);
      return;
    case '/hang.png':
      return; // never answers
    case '/stall-body.png':
      response.writeHead(200, { 'content-type': 'image/png' });
      response.write(PNG.subarray(0, 10));
      return; // headers and a little body, then nothing
    case '/missing.png':
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('nope');
      return;
    case '/error.png':
      response.writeHead(500);
      response.end();
      return;
    case '/big.png':
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': MAX_IMAGE_BYTES + 1 });
      response.end(Buffer.concat([PNG, Buffer.alloc(MAX_IMAGE_BYTES + 1 - PNG.length)]));
      return;
    case '/big-chunked.png': {
      // No Content-Length: the cap has to be enforced while reading.
      response.writeHead(200, { 'content-type': 'image/png' });
      response.write(PNG);
      const chunk = Buffer.alloc(64 * 1024);
      for (let i = 0; i < 5; i++) response.write(chunk);
      response.end();
      return;
    }
    case '/text.png':
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end('this is not an image');
      return;
    case '/image.svg':
      response.writeHead(200, { 'content-type': 'image/svg+xml' });
      response.end('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
      return;
    case '/huge.png': {
      // A small file that says it is 8,000 × 8,000: what a decoder would allocate for, not what it weighs.
      const bomb = Buffer.from(PNG);
      bomb.writeUInt32BE(8_000, 16);
      bomb.writeUInt32BE(8_000, 20);
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': bomb.length });
      response.end(bomb);
      return;
    }
    case '/redirect.png':
      response.writeHead(302, { location: '/ok.png' });
      response.end();
      return;
    default:
      response.writeHead(404);
      response.end();
  }
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => requests.clear());

afterEach(() => {
  vi.useRealTimers();
  releaseHeld();
});

/** Sends every held answer. */
function releaseHeld(): void {
  for (const answer of held.splice(0)) answer();
}

/** A cache allowed to fetch from the test server's /, with a clock the test moves. */
function cache(options: Partial<ImageCacheOptions> = {}): { images: ImageCache; clock: { now: number } } {
  const clock = { now: 1_000_000 };
  const images = new ImageCache({
    allowedPrefixes: [`${base}/`],
    timeoutMs: 300,
    now: () => clock.now,
    ...options,
  });
  return { images, clock };
}

const count = (path: string): number => requests.get(path) ?? 0;

describe('ImageCache', () => {
  it('inlines an image as a data: URI and answers the next request from the cache', async () => {
    const { images } = cache();
    expect(await images.get(`${base}/ok.png`)).toBe(PNG_URI);
    expect(await images.get(`${base}/ok.png`)).toBe(PNG_URI);
    expect(count('/ok.png')).toBe(1);
  });

  it('shares one fetch among concurrent requests for the same URL', async () => {
    const { images } = cache();
    const all = Promise.all(Array.from({ length: 20 }, () => images.get(`${base}/held.png`)));
    await eventually(() => expect(count('/held.png')).toBe(1));
    releaseHeld();
    const results = await all;
    expect(new Set(results)).toEqual(new Set([PNG_URI]));
    expect(count('/held.png')).toBe(1);
    expect(images.pending).toBe(0);
  });

  it('gives up on a host that does not answer within the timeout, and remembers the failure', async () => {
    const { images, clock } = cache({ timeoutMs: 200, failureTtlMs: 60_000 });
    // The fetch's timeout is a timer: the test moves it, the request itself is real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const answer = images.get(`${base}/hang.png`);
    await eventually(() => expect(count('/hang.png')).toBe(1));
    vi.advanceTimersByTime(199);
    // A round trip to the same host, after which a timer that had fired would have ended the fetch.
    expect((await fetch(`${base}/ok.png`)).status).toBe(200);
    expect(images.pending).toBe(1);
    vi.advanceTimersByTime(1);
    expect(await within(answer, 5_000, 'the fetch given up')).toBeNull();

    // Remembered: answered from the cache, no fetch started.
    const again = images.get(`${base}/hang.png`);
    expect(images.pending).toBe(0);
    expect(await again).toBeNull();
    expect(count('/hang.png')).toBe(1);

    clock.now += 60_001;
    const later = images.get(`${base}/hang.png`);
    await eventually(() => expect(count('/hang.png')).toBe(2));
    vi.advanceTimersByTime(200);
    expect(await within(later, 5_000, 'the fetch given up')).toBeNull();
  });

  it('the timeout covers a body that stalls, not only the headers', async () => {
    let headed = false;
    const { images } = cache({
      timeoutMs: 200,
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        headed = true;
        return response;
      },
    });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const answer = images.get(`${base}/stall-body.png`);
    // The headers are in and the body is being read when the time is up.
    await eventually(() => expect(headed).toBe(true));
    vi.advanceTimersByTime(200);
    expect(await within(answer, 5_000, 'the fetch given up')).toBeNull();
  });

  it.each([
    ['/missing.png', 'a 404'],
    ['/error.png', 'a 500'],
    ['/big.png', 'a declared size over the cap'],
    ['/big-chunked.png', 'an undeclared size over the cap'],
    ['/text.png', 'bytes that are no image, whatever the Content-Type'],
    ['/image.svg', 'an SVG (it could carry script)'],
    ['/redirect.png', 'a redirect'],
  ])('%s: %s is a failure (null)', async (path) => {
    const { images } = cache();
    expect(await images.get(`${base}${path}`)).toBeNull();
    expect(count(path)).toBe(1);
  });

  it('never fetches outside its allowed prefixes', async () => {
    const { images } = cache({ allowedPrefixes: [`${base}/cdn/`] });
    for (const url of [
      `${base}/ok.png`,
      `${base}/cdn/../ok.png`,
      `${base}/cdnx/ok.png`,
      `http://user:pass@${base.slice('http://'.length)}/cdn/ok.png`,
      'not a url',
      'file:///etc/passwd',
    ]) {
      expect(await images.get(url)).toBeNull();
    }
    expect([...requests.values()].reduce((a, b) => a + b, 0)).toBe(0);
  });

  it('serves an expired image at once and refreshes it behind the response', async () => {
    const { images, clock } = cache({ ttlMs: 1_000 });
    const first = images.get(`${base}/held.png`);
    await eventually(() => expect(count('/held.png')).toBe(1));
    releaseHeld();
    expect(await first).toBe(PNG_URI);
    clock.now += 1_001;
    // Answered while the refresh is still held at the host: the answer did not wait for it.
    expect(await images.get(`${base}/held.png`)).toBe(PNG_URI);
    expect(images.pending).toBe(1);
    await eventually(() => expect(count('/held.png')).toBe(2));
    releaseHeld();
    await eventually(() => expect(images.pending).toBe(0));
    // Refreshed: the next answer comes from the cache, with no fetch.
    expect(await images.get(`${base}/held.png`)).toBe(PNG_URI);
    expect(images.pending).toBe(0);
    expect(count('/held.png')).toBe(2);
  });

  it('keeps serving an expired image when its refresh fails', async () => {
    let fail = false;
    let fetches = 0;
    const { images, clock } = cache({
      ttlMs: 1_000,
      fetch: (url, init) => {
        fetches++;
        return fail ? Promise.reject(new Error('down')) : fetch(url, init);
      },
    });
    expect(await images.get(`${base}/ok.png`)).toBe(PNG_URI);
    fail = true;
    clock.now += 1_001;
    expect(await images.get(`${base}/ok.png`)).toBe(PNG_URI);
    // The refresh has run and failed.
    await eventually(() => expect(images.pending).toBe(0));
    expect(fetches).toBe(2);
    expect(await images.get(`${base}/ok.png`)).toBe(PNG_URI);
  });

  it('evicts the least recently used entry past its entry limit', async () => {
    const { images } = cache({ maxEntries: 2 });
    await images.get(`${base}/a.png`);
    await images.get(`${base}/b.png`);
    await images.get(`${base}/a.png`); // a is now the most recent
    await images.get(`${base}/c.png`); // evicts b
    expect(images.size).toBe(2);
    await images.get(`${base}/a.png`);
    await images.get(`${base}/b.png`);
    expect(count('/a.png')).toBe(1);
    expect(count('/b.png')).toBe(2);
  });

  it('evicts past its byte budget', async () => {
    const { images } = cache({ maxTotalBytes: PNG_URI.length * 2 });
    await images.get(`${base}/a.png`);
    await images.get(`${base}/b.png`);
    await images.get(`${base}/c.png`);
    expect(images.size).toBe(2);
  });

  it('refuses an image whose header declares more pixels than a card could use, and remembers it', async () => {
    const { images } = cache();
    expect(await images.get(`${base}/huge.png`)).toBeNull();
    expect(await images.get(`${base}/huge.png`)).toBeNull();
    expect(count('/huge.png')).toBe(1);
    expect(await images.get(`${base}/ok.png`)).toBe(PNG_URI);
  });

  it('has production limits that keep a card fast', () => {
    expect(IMAGE_FETCH_TIMEOUT_MS).toBeLessThanOrEqual(2_000);
    expect(MAX_IMAGE_BYTES).toBe(256 * 1024);
  });

  it('allows the CDN, Spotify album art and the Discord media proxy', () => {
    expect(cardImageSources('http://127.0.0.1:1/cdn/')).toEqual([
      'http://127.0.0.1:1/cdn/',
      'https://i.scdn.co/image/',
      'https://media.discordapp.net/',
    ]);
  });
});

describe('imageSize', () => {
  it('reads the size from the header of each format', () => {
    expect(imageSize(solidPng(48, [0, 0, 0]), 'image/png')).toEqual({ width: 48, height: 48 });
    const gif = Buffer.from('GIF89a\x40\x01\xf0\x00', 'latin1');
    expect(imageSize(gif, 'image/gif')).toEqual({ width: 320, height: 240 });
    // SOI, an APP0 segment of 16 bytes, then SOF0 with height 600 and width 800.
    const jpeg = Buffer.concat([
      Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]),
      Buffer.alloc(14),
      Buffer.from([0xff, 0xc0, 0x00, 0x11, 0x08, 0x02, 0x58, 0x03, 0x20, 0x03]),
      Buffer.alloc(16),
    ]);
    expect(imageSize(jpeg, 'image/jpeg')).toEqual({ width: 800, height: 600 });
    const webp = (chunk: string, body: number[]) =>
      Buffer.concat([
        Buffer.from(`RIFF\0\0\0\0WEBP${chunk}\0\0\0\0`, 'latin1'),
        Buffer.from(body),
        Buffer.alloc(16),
      ]);
    // VP8X: flags and reserved (4 bytes), then width − 1 and height − 1 in 24 bits each.
    expect(imageSize(webp('VP8X', [0, 0, 0, 0, 0xff, 0x03, 0x00, 0x7f, 0x02, 0x00]), 'image/webp')).toEqual({
      width: 1024,
      height: 640,
    });
    // VP8L: a signature byte, then 14 bits of width − 1 and 14 of height − 1.
    const bits = (99 & 0x3fff) | ((49 & 0x3fff) << 14);
    expect(
      imageSize(
        webp('VP8L', [0x2f, bits & 255, (bits >>> 8) & 255, (bits >>> 16) & 255, (bits >>> 24) & 255]),
        'image/webp',
      ),
    ).toEqual({ width: 100, height: 50 });
    // VP8: a frame tag (3 bytes) and start code (3), then 14-bit width and height.
    expect(
      imageSize(webp('VP8 ', [0, 0, 0, 0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01]), 'image/webp'),
    ).toEqual({
      width: 640,
      height: 480,
    });
    expect(imageSize(Buffer.from([0xff, 0xd8, 0x00]), 'image/jpeg')).toBeNull();
  });
});

describe('imageType', () => {
  it('knows PNG, JPEG, GIF and WebP by their first bytes', () => {
    expect(imageType(PNG)).toBe('image/png');
    expect(imageType(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('image/jpeg');
    expect(imageType(Buffer.from('GIF89a'))).toBe('image/gif');
    expect(imageType(Buffer.from('RIFF\0\0\0\0WEBPVP8 '))).toBe('image/webp');
    expect(imageType(Buffer.from('RIFF\0\0\0\0WAVE'))).toBeNull();
    expect(imageType(Buffer.from('<svg'))).toBeNull();
    expect(imageType(Buffer.alloc(0))).toBeNull();
  });
});
