import { answerError } from './errors.js';
import { PresentlyEvents, type PresentlyEventsOptions } from './events.js';
import { PresentlySocket, type PresentlySocketOptions } from './socket.js';
import type {
  AvatarFormat,
  CardFormat,
  CardOptions,
  CreatedWebhook,
  History,
  Presence,
  Presences,
  PresenceUpdate,
  Stats,
  TopTrack,
  UserId,
  VersionInfo,
  WebhookEvent,
  WebhookList,
} from './types.js';

/** The part of a fetch Response the client reads. */
export interface FetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** The part of `fetch` the client uses: the global one fits, and so do most wrappers. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<FetchResponse>;

export interface PresentlyClientOptions {
  /** Where the service is, e.g. `https://presently.example.com`. */
  baseUrl: string;
  /** Your API key (`?apikey` to the bot): for `@me` and KV writes. */
  apiKey?: string;
  /** Default: the global `fetch`. */
  fetch?: FetchLike;
}

type Envelope<T> = { success: true; data: T } | { success: false; error: { code: string; message: string } };

/** `@me` as it is (the routes name it so); an id or key as one path segment. */
function segment(value: string): string {
  return value === '@me' ? value : encodeURIComponent(value);
}

/**
 * Presently's REST API, typed. Every method resolves with the envelope's `data` and throws a
 * PresentlyError (code, status, message) for an error answer.
 */
export class PresentlyClient {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly fetch: FetchLike;

  constructor(options: PresentlyClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    // Called bare, not as a method of this object: browsers refuse a fetch whose `this` is not the window.
    this.fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
  }

  /** `GET /v1/users/:id`; `@me` with the API key. */
  presence(userId: UserId | '@me'): Promise<Presence> {
    return this.request('GET', `/v1/users/${segment(userId)}`, { auth: userId === '@me' });
  }

  /**
   * `GET /v1/users?ids=…`: the presences of up to 50 users in one request (an id given twice counts once),
   * by id in the order given; users who are not monitored are left out. Each id counts as a read against
   * the rate limit.
   */
  async presences(userIds: readonly UserId[]): Promise<Presences> {
    const query = userIds.map(encodeURIComponent).join(',');
    const data = await this.request<Record<UserId, Presence>>('GET', `/v1/users?ids=${query}`);
    const found: Presences = new Map();
    // An object keeps small numeric keys in numeric order, whatever the JSON's: the order is the one asked.
    for (const id of userIds) {
      const presence = Object.hasOwn(data, id) ? data[id] : undefined;
      if (presence !== undefined) found.set(id, presence);
    }
    return found;
  }

  history(userId: UserId): Promise<History> {
    return this.request('GET', `/v1/users/${segment(userId)}/history`);
  }

  stats(userId: UserId): Promise<Stats> {
    return this.request('GET', `/v1/users/${segment(userId)}/stats`);
  }

  /** The user's most played tracks (played at least twice); `limit` 1–50, default 10. */
  async topTracks(userId: UserId, options: { limit?: number } = {}): Promise<TopTrack[]> {
    const query = options.limit === undefined ? '' : `?limit=${options.limit}`;
    const data = await this.request<{ top_tracks: TopTrack[] }>(
      'GET',
      `/v1/users/${segment(userId)}/top-tracks${query}`,
    );
    return data.top_tracks;
  }

  version(): Promise<VersionInfo> {
    return this.request('GET', '/v1/version');
  }

  /** The URL of the user's card (SVG unless asked for PNG), for an `<img>` or a README. */
  cardUrl(userId: UserId, options: CardOptions = {}, format: CardFormat = 'svg'): string {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(options)) {
      if (value !== undefined) query.set(name, Array.isArray(value) ? value.join(',') : String(value));
    }
    const search = query.toString() === '' ? '' : `?${query}`;
    return `${this.baseUrl}/v1/users/${segment(userId)}/card.${format}${search}`;
  }

  /** The avatar quick link: redirects to the user's avatar on Discord's CDN. */
  avatarUrl(userId: UserId, format: AvatarFormat = 'png', size?: number): string {
    return `${this.baseUrl}/${segment(userId)}.${format}${size === undefined ? '' : `?size=${size}`}`;
  }

  /** `PUT /v1/users/:id/kv/:key`: sets one key (the value as it is). */
  setKv(userId: UserId | '@me', key: string, value: string): Promise<void> {
    return this.request('PUT', `/v1/users/${segment(userId)}/kv/${segment(key)}`, {
      auth: true,
      body: value,
      type: 'text/plain; charset=utf-8',
    });
  }

  /** `PATCH /v1/users/:id/kv`: merges several keys at once, all or nothing. */
  patchKv(userId: UserId | '@me', values: Record<string, string>): Promise<void> {
    return this.request('PATCH', `/v1/users/${segment(userId)}/kv`, {
      auth: true,
      body: JSON.stringify(values),
      type: 'application/json',
    });
  }

  /** `DELETE /v1/users/:id/kv/:key` (also fine when the key does not exist). */
  deleteKv(userId: UserId | '@me', key: string): Promise<void> {
    return this.request('DELETE', `/v1/users/${segment(userId)}/kv/${segment(key)}`, { auth: true });
  }

  /**
   * `POST /v1/users/@me/webhooks`: a webhook of the key's owner, POSTed each of `events` from now on. The
   * answer carries the secret that signs its deliveries, and is the only one that does.
   */
  createWebhook(url: string, events: readonly WebhookEvent[]): Promise<CreatedWebhook> {
    return this.request('POST', '/v1/users/@me/webhooks', {
      auth: true,
      body: JSON.stringify({ url, events }),
      type: 'application/json',
    });
  }

  /** `GET /v1/users/@me/webhooks`: the key owner's webhooks with their latest deliveries. */
  webhooks(): Promise<WebhookList> {
    return this.request('GET', '/v1/users/@me/webhooks', { auth: true });
  }

  /** `DELETE /v1/users/@me/webhooks/:id`. */
  deleteWebhook(id: string): Promise<void> {
    return this.request('DELETE', `/v1/users/@me/webhooks/${segment(id)}`, { auth: true });
  }

  /**
   * The users' presences as Server-Sent Events (see PresentlyEvents): `onPresence` gets each monitored
   * user's presence first, then every change, with `user_id`.
   */
  events(
    userIds: UserId | readonly UserId[],
    onPresence: (presence: PresenceUpdate) => void,
    options: PresentlyEventsOptions = {},
  ): PresentlyEvents {
    return new PresentlyEvents(this.baseUrl, userIds, onPresence, options);
  }

  /** A live socket to this service (see PresentlySocket). */
  socket(options: Omit<PresentlySocketOptions, 'baseUrl'> = {}): PresentlySocket {
    return new PresentlySocket({ ...options, baseUrl: this.baseUrl });
  }

  private async request<T>(
    method: string,
    path: string,
    options: { auth?: boolean; body?: string; type?: string } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    // Only where needed: on a public read the header would cost browsers a CORS preflight.
    if (options.auth && this.apiKey !== undefined) headers.authorization = this.apiKey;
    if (options.type !== undefined) headers['content-type'] = options.type;
    const response = await this.fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: options.body }),
    });
    const text = await response.text();
    if (response.status === 204) return undefined as T;
    let envelope: Envelope<T> | undefined;
    try {
      envelope = JSON.parse(text) as Envelope<T>;
    } catch {
      // not the API's answer: reported below
    }
    if (envelope?.success === true && response.status < 300) return envelope.data;
    throw answerError(response.status, envelope, response.headers.get('retry-after'), `${method} ${path}`);
  }
}
