import { MEDIA_PROXY_URL, SPOTIFY_IMAGE_URL } from '../presence/normalize/images.js';
import { cdnBase } from '../presence/normalize/values.js';
import type { CardContent } from './content.js';
import { imageSize } from './image-size.js';
import type { TrackCardContent } from './track-content.js';
import type { TrackImages } from './track-list.js';

/**
 * The card's images, fetched and kept as `data:` URIs: GitHub's image proxy does not load images an SVG
 * links to, so every image has to travel inside the card. A card is answered from this cache; a fetch is
 * short, capped in size, shared by concurrent requests for the same URL, and a failure is remembered
 * briefly so a host that is down does not slow every card.
 */

/** A card waits at most this long for one image; past it the card draws a placeholder. */
export const IMAGE_FETCH_TIMEOUT_MS = 1_500;
/** Larger images are refused: each one is inlined (a third bigger as base64) into every card. */
export const MAX_IMAGE_BYTES = 256 * 1024;
/**
 * Pixels an image may have (1024 × 1024): more than any the card asks the CDN for, and a bound on what
 * the PNG renderer decodes, which a small file of a huge size would otherwise make it allocate.
 */
export const MAX_IMAGE_PIXELS = 1024 * 1024;
/** Avatars and emoji are content-addressed and album art never changes: an hour is safe. */
export const IMAGE_TTL_MS = 60 * 60_000;
/** A failed or refused fetch is not retried for this long; cards draw the placeholder meanwhile. */
export const IMAGE_FAILURE_TTL_MS = 60_000;
export const IMAGE_CACHE_ENTRIES = 2_000;
/** Total size of the cached data URIs. */
export const IMAGE_CACHE_BYTES = 64 * 1024 * 1024;

/** The images of one status card as `data:` URIs; null draws a placeholder. */
export interface CardImages {
  avatar: string | null;
  emoji: string | null;
  /** The album art or the activity's image. */
  art: string | null;
  /** The server tag's badge. */
  badge: string | null;
  decoration: string | null;
  /** The images of the activities in panels below the main one, in their order; absent: placeholders. */
  more?: readonly (string | null)[];
}

/** The image types browsers draw inside an SVG `<image>`; SVG itself is not one we inline. */
export type ImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface ImageLogger {
  debug(details: object, message: string): void;
}

export interface ImageCacheOptions {
  /**
   * URL prefixes the cache may fetch (see `cardImageSources`); anything else is a failure without a
   * request, so activity text cannot make the server fetch arbitrary URLs.
   */
  allowedPrefixes: readonly string[];
  fetch?: FetchLike;
  now?: () => number;
  timeoutMs?: number;
  maxBytes?: number;
  ttlMs?: number;
  failureTtlMs?: number;
  maxEntries?: number;
  maxTotalBytes?: number;
  logger?: ImageLogger;
}

/** The hosts whose images a card shows: Discord's CDN, Spotify's album art, Discord's media proxy. */
export function cardImageSources(cdnUrl: string): string[] {
  return [`${cdnBase(cdnUrl)}/`, `${SPOTIFY_IMAGE_URL}/`, `${MEDIA_PROXY_URL}/`];
}

interface Entry {
  /** null: the last fetch failed. */
  uri: string | null;
  bytes: number;
  expiresAt: number;
}

/** Why a fetch gave no image; logged, never shown. */
class ImageFetchError extends Error {}

/** Fetches images into `data:` URIs, with an LRU cache (entries and bytes) whose entries expire. */
export class ImageCache {
  private readonly entries = new Map<string, Entry>();
  private readonly inflight = new Map<string, Promise<string | null>>();
  private totalBytes = 0;
  private readonly fetch: FetchLike;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly ttlMs: number;
  private readonly failureTtlMs: number;
  private readonly maxEntries: number;
  private readonly maxTotalBytes: number;

  constructor(private readonly options: ImageCacheOptions) {
    this.fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
    this.now = options.now ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? IMAGE_FETCH_TIMEOUT_MS;
    this.maxBytes = options.maxBytes ?? MAX_IMAGE_BYTES;
    this.ttlMs = options.ttlMs ?? IMAGE_TTL_MS;
    this.failureTtlMs = options.failureTtlMs ?? IMAGE_FAILURE_TTL_MS;
    this.maxEntries = options.maxEntries ?? IMAGE_CACHE_ENTRIES;
    this.maxTotalBytes = options.maxTotalBytes ?? IMAGE_CACHE_BYTES;
  }

  /** Cached entries, failures included. */
  get size(): number {
    return this.entries.size;
  }

  /** Requests running now. */
  get pending(): number {
    return this.inflight.size;
  }

  /**
   * The image as a data URI, or null when it cannot be had. Fresh entries answer at once; an expired image
   * answers at once too, while a new fetch refreshes it behind the response; a URL never seen (or whose
   * failure has expired) waits for one fetch, which every concurrent caller shares.
   */
  get(url: string): Promise<string | null> {
    const entry = this.entries.get(url);
    if (entry) {
      // Re-inserting moves the entry to the young end of the LRU order.
      this.entries.delete(url);
      this.entries.set(url, entry);
      if (entry.expiresAt > this.now()) return Promise.resolve(entry.uri);
      if (entry.uri !== null) {
        void this.load(url);
        return Promise.resolve(entry.uri);
      }
    }
    return this.load(url);
  }

  /**
   * The first of `urls` that can be had (the user's avatar, then Discord's default one), or null. They are
   * asked for together: a fallback is one of a few images cached for an hour, and waiting for the first to
   * fail before asking would double the wait.
   */
  async first(urls: readonly string[]): Promise<string | null> {
    const found = await Promise.all(urls.map((url) => this.get(url)));
    return found.find((uri) => uri !== null) ?? null;
  }

  private load(url: string): Promise<string | null> {
    const running = this.inflight.get(url);
    if (running) return running;
    const loading = this.download(url).then(
      (uri) => {
        this.store(url, uri, this.ttlMs);
        return uri;
      },
      (error: unknown) => {
        this.options.logger?.debug({ url, reason: (error as Error).message }, 'card image not loaded');
        const stale = this.entries.get(url)?.uri ?? null;
        // A stale image beats a placeholder; it is retried after the failure period either way.
        this.store(url, stale, this.failureTtlMs);
        return stale;
      },
    );
    const settled = loading.finally(() => this.inflight.delete(url));
    this.inflight.set(url, settled);
    return settled;
  }

  private async download(url: string): Promise<string> {
    if (!this.allowed(url)) throw new ImageFetchError('not an allowed image source');
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new ImageFetchError(`no answer within ${this.timeoutMs} ms`)),
      this.timeoutMs,
    );
    try {
      const response = await this.fetch(url, {
        signal: controller.signal,
        redirect: 'error',
        headers: { accept: 'image/png,image/jpeg,image/gif,image/webp' },
      });
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw new ImageFetchError(`HTTP ${response.status}`);
      }
      const declared = Number(response.headers.get('content-length') ?? Number.NaN);
      if (declared > this.maxBytes) {
        await response.body?.cancel().catch(() => {});
        throw new ImageFetchError(`${declared} bytes is over the ${this.maxBytes}-byte cap`);
      }
      const bytes = await readCapped(response, this.maxBytes);
      const type = imageType(bytes);
      if (type === null) throw new ImageFetchError('not a PNG, JPEG, GIF or WebP image');
      const size = imageSize(bytes, type);
      if (size === null || size.width * size.height > MAX_IMAGE_PIXELS) {
        throw new ImageFetchError(
          size === null
            ? 'no readable size'
            : `${size.width} × ${size.height} is past ${MAX_IMAGE_PIXELS} pixels`,
        );
      }
      return `data:${type};base64,${bytes.toString('base64')}`;
    } catch (error) {
      // An abort surfaces as the reason given to abort(), or as a DOMException from older fetches.
      if (controller.signal.aborted) throw controller.signal.reason ?? error;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private allowed(url: string): boolean {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return false;
    }
    if (parsed.username !== '' || parsed.password !== '') return false;
    // The normalized form: `..` segments and odd spellings of the host cannot step outside a prefix.
    return this.options.allowedPrefixes.some((prefix) => parsed.href.startsWith(prefix));
  }

  private store(url: string, uri: string | null, ttlMs: number): void {
    const previous = this.entries.get(url);
    if (previous) {
      this.totalBytes -= previous.bytes;
      this.entries.delete(url);
    }
    const bytes = uri === null ? 0 : uri.length;
    this.entries.set(url, { uri, bytes, expiresAt: this.now() + ttlMs });
    this.totalBytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.totalBytes <= this.maxTotalBytes) break;
      this.entries.delete(oldest);
      this.totalBytes -= entry.bytes;
    }
  }
}

/** The images a status card's content shows, asked for together; each is null where none could be had. */
export async function statusCardImages(cache: ImageCache, content: CardContent): Promise<CardImages> {
  const main = content.main;
  const artUrl = main?.kind === 'music' ? main.artUrl : main?.kind === 'activity' ? main.imageUrl : null;
  const emojiUrl = content.customStatus?.emoji?.url ?? null;
  const fetched = (url: string | null | undefined) => (url ? cache.get(url) : null);
  const [avatar, emoji, art, badge, decoration, more] = await Promise.all([
    cache.first(content.avatarUrls),
    fetched(emojiUrl),
    fetched(artUrl),
    fetched(content.tag?.badgeUrl),
    fetched(content.decorationUrl),
    Promise.all(content.more.map((activity) => fetched(activity.imageUrl))),
  ]);
  return { avatar, emoji, art, badge, decoration, more };
}

/** The images a track card shows: the user's avatar and each row's art, asked for together. */
export async function trackCardImages(cache: ImageCache, content: TrackCardContent): Promise<TrackImages> {
  const [avatar, ...art] = await Promise.all([
    cache.first(content.user.avatarUrls),
    ...content.rows.map((row) => (row.artUrl === null ? null : cache.get(row.artUrl))),
  ]);
  return { avatar: avatar ?? null, art };
}

async function readCapped(response: Response, maxBytes: number): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new ImageFetchError(`over the ${maxBytes}-byte cap`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

/** The type from the first bytes, not from Content-Type: only what the bytes are gets inlined. */
export function imageType(bytes: Uint8Array): ImageType | null {
  const starts = (...signature: number[]): boolean => signature.every((byte, i) => bytes[i] === byte);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x47, 0x49, 0x46, 0x38)) return 'image/gif';
  const webp = [0x57, 0x45, 0x42, 0x50].every((byte, i) => bytes[8 + i] === byte);
  if (starts(0x52, 0x49, 0x46, 0x46) && webp) return 'image/webp';
  return null;
}
