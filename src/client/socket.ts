import { DEFAULT_RECONNECT_DELAY, reconnectDelay } from './backoff.js';
import { Emitter } from './emitter.js';
import { frameText, type ServerFrame } from './frames.js';
import type { Presence, PresenceUpdate, UserId } from './types.js';
import { checkedUserId } from './user-id.js';

/** The part of a WebSocket the client uses: the browser's, Node 22's global one and `ws` all fit. */
export interface WebSocketLike {
  readonly readyState: number;
  binaryType: string;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'error', listener: (event: unknown) => void): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface PresentlySocketOptions {
  /** Where the service is, e.g. `https://presently.example.com` (`ws(s)://` works too). */
  baseUrl: string;
  /** `zlib_json`: every frame zlib-compressed (less traffic, a little CPU to inflate). */
  compression?: 'none' | 'zlib_json';
  /** Default: the global WebSocket. Node 20 has none: pass `ws`'s (`import WebSocket from 'ws'`). */
  WebSocket?: WebSocketConstructor;
  /** What to subscribe to from the start; `subscribe()` and `subscribeAll()` add more later. */
  subscribe?: UserId | UserId[] | 'all';
  /** Reconnect back-off: doubling from `minMs` to `maxMs`, jittered. Default 1 s to 30 s. */
  reconnectDelay?: { minMs?: number; maxMs?: number };
}

export interface SocketClose {
  code: number;
  reason: string;
  /** When the next attempt starts; null when the client will not reconnect (closed, or refused). */
  reconnectInMs: number | null;
}

export interface PresentlySocketEvents {
  /** Connected and greeted; the subscriptions have been sent again. */
  open: () => void;
  /** The presences a subscription starts with, by user id (users not monitored left out). */
  init: (presences: Record<UserId, Presence>) => void;
  /** A subscribed user's presence changed (KV changes included). */
  update: (presence: PresenceUpdate) => void;
  close: (close: SocketClose) => void;
  error: (error: Error) => void;
}

const Op = { Event: 0, Hello: 1, Initialize: 2, Heartbeat: 3, Unsubscribe: 4 } as const;

/**
 * Closes caused by what this client sent (an unknown op, a payload the server refused, a frame too
 * large): sending it again would be refused again, so the client stops instead of looping. Everything
 * else (heartbeat timeout, slow consumer, a restart, the network) is worth a reconnect.
 */
export const NO_RECONNECT_CLOSE_CODES: ReadonlySet<number> = new Set([1009, 4004, 4005, 4006]);

const OPEN = 1;

/**
 * A live connection to `/socket` (Lanyard's protocol) that stays live: it heartbeats at the interval the
 * server gives, reconnects with a capped, jittered back-off, and subscribes again to everything it held.
 * `close()` ends it for good.
 */
export class PresentlySocket extends Emitter<PresentlySocketEvents> {
  private readonly url: string;
  private readonly WebSocket: WebSocketConstructor;
  private readonly delay: { minMs: number; maxMs: number };
  private readonly ids = new Set<UserId>();
  private all = false;
  private ws: WebSocketLike | null = null;
  /** Hello received on `ws`: subscriptions can be sent. */
  private greeted = false;
  private attempt = 0;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Frames are inflated asynchronously; this keeps them in the order they arrived. */
  private inbox: Promise<void> = Promise.resolve();

  constructor(options: PresentlySocketOptions) {
    super();
    const WebSocketImpl = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WebSocketImpl) {
      throw new TypeError('no global WebSocket here (Node 20): pass one, e.g. { WebSocket } from "ws"');
    }
    this.WebSocket = WebSocketImpl;
    const base = options.baseUrl.replace(/\/+$/, '').replace(/^http/, 'ws');
    this.url = `${base}/socket${options.compression === 'zlib_json' ? '?compression=zlib_json' : ''}`;
    this.delay = { ...DEFAULT_RECONNECT_DELAY, ...options.reconnectDelay };
    const initial = options.subscribe;
    if (initial === 'all') this.all = true;
    else if (initial !== undefined) this.add(initial);
    this.connect();
  }

  /** Subscribes to one user or several (added to what is held). */
  subscribe(ids: UserId | UserId[]): void {
    const added = this.add(ids);
    if (added.length > 0) this.send(Op.Initialize, { subscribe_to_ids: added });
  }

  /** Subscribes to every monitored user, present and future. */
  subscribeAll(): void {
    if (this.all) return;
    this.all = true;
    this.send(Op.Initialize, { subscribe_to_all: true });
  }

  unsubscribe(ids: UserId | UserId[]): void {
    const removed = (Array.isArray(ids) ? ids : [ids]).filter((id) => this.ids.delete(id));
    if (removed.length > 0) this.send(Op.Unsubscribe, { unsubscribe_from_ids: removed });
  }

  /** Drops every subscription, ids and `all` alike. */
  unsubscribeAll(): void {
    this.ids.clear();
    this.all = false;
    this.send(Op.Unsubscribe, { unsubscribe_from_all: true });
  }

  /** Whether the socket is connected and greeted right now. */
  get connected(): boolean {
    return this.greeted && this.ws?.readyState === OPEN;
  }

  /** Closes for good: no reconnect, no timers left. Resolves once the socket has closed. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    clearTimeout(this.retry);
    this.stopHeartbeat();
    const ws = this.ws;
    this.closing =
      ws === null
        ? Promise.resolve()
        : new Promise((resolve) => {
            ws.addEventListener('close', () => resolve());
            ws.close(1000);
          });
    return this.closing;
  }

  private add(ids: UserId | UserId[]): UserId[] {
    // Checked first: the server would close the socket over a bad id.
    const list = (Array.isArray(ids) ? ids : [ids]).map(checkedUserId);
    const added = [...new Set(list)].filter((id) => !this.ids.has(id));
    for (const id of added) this.ids.add(id);
    return added;
  }

  private connect(): void {
    const ws = new this.WebSocket(this.url);
    this.ws = ws;
    this.greeted = false;
    ws.binaryType = 'arraybuffer';
    ws.addEventListener('message', (event) => {
      if (this.ws !== ws) return;
      const next = this.inbox.then(async () => {
        try {
          const text = await frameText(event.data);
          if (this.ws === ws) this.received(ws, JSON.parse(text) as ServerFrame);
        } catch (error) {
          this.emit('error', asError(error));
        }
      });
      // One bad frame (or a listener that throws) must not stop the frames after it.
      this.inbox = next.catch(() => undefined);
    });
    ws.addEventListener('error', () => {
      if (this.ws === ws && !this.closed) this.emit('error', new Error(`socket error on ${this.url}`));
    });
    ws.addEventListener('close', (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.greeted = false;
      this.stopHeartbeat();
      this.lost(event.code, event.reason);
    });
  }

  private received(ws: WebSocketLike, frame: ServerFrame): void {
    if (frame.op === Op.Hello) {
      this.greeted = true;
      this.attempt = 0;
      this.stopHeartbeat();
      this.heartbeat = setInterval(() => this.send(Op.Heartbeat), frame.d.heartbeat_interval);
      this.resubscribe(ws);
      this.emit('open');
    } else if (frame.op === Op.Event && frame.t === 'INIT_STATE') {
      this.emit('init', frame.d);
    } else if (frame.op === Op.Event && frame.t === 'PRESENCE_UPDATE') {
      this.emit('update', frame.d);
    }
  }

  /** Everything held, in one op 2: each reconnect starts from what the client wants, not what it had. */
  private resubscribe(ws: WebSocketLike): void {
    if (this.ids.size === 0 && !this.all) return;
    const d: Record<string, unknown> = {};
    if (this.ids.size > 0) d.subscribe_to_ids = [...this.ids];
    if (this.all) d.subscribe_to_all = true;
    ws.send(JSON.stringify({ op: Op.Initialize, d }));
  }

  private lost(code: number, reason: string): void {
    if (this.closed) {
      this.emit('close', { code, reason, reconnectInMs: null });
      return;
    }
    if (NO_RECONNECT_CLOSE_CODES.has(code)) {
      this.closed = true;
      this.closing = Promise.resolve();
      this.emit('close', { code, reason, reconnectInMs: null });
      this.emit('error', new Error(`the server refused what this client sent (${code} ${reason})`));
      return;
    }
    const wait = reconnectDelay(this.attempt++, this.delay);
    this.retry = setTimeout(() => this.connect(), wait);
    this.emit('close', { code, reason, reconnectInMs: wait });
  }

  /** Sent now when greeted; otherwise the subscription state goes out with the next Hello. */
  private send(op: number, d?: Record<string, unknown>): void {
    if (!this.connected || !this.ws) return;
    this.ws.send(JSON.stringify(d === undefined ? { op } : { op, d }));
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
