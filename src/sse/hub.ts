import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { SocketSlots } from '../limits/socket-slots.js';
import { StreamOpenBudget } from '../limits/stream-open-budget.js';
import { SubscriptionCap } from '../limits/subscription-cap.js';
import type { Metrics } from '../ops/metrics.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceSource } from '../presence/registry/registry.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import { FanOutPacer, paceChanges } from '../socket/fanout-pace.js';
import { SEND_BUFFER_CAP_BYTES } from '../socket/protocol.js';
import { Subscriptions } from '../socket/subscriptions.js';
import { EventIds } from './event-id.js';
import { ReplayRing } from './replay.js';
import { SseStream } from './stream.js';
import { changeEvent, chunkOf, idLine, KEEP_ALIVE, presenceBody, retryChunk, type SseChunk } from './wire.js';

/** How often every stream gets a `: keep-alive` comment, so proxies and browsers see it is alive. */
export const KEEP_ALIVE_MS = 20_000;
/** The `retry:` every stream starts with: how long a client waits before reconnecting. */
export const RETRY_MS = 2_000;
/** A stream whose connection takes nothing for this long is cut: its client is not reading. */
export const STALLED_STREAM_MS = 60_000;

/** Ends an event that has only an id. */
const LINE_END = Buffer.from('\n');

export interface SseHubOptions {
  source: PresenceSource;
  /**
   * What a user reads of themselves, private or not: the source of the streams opened with their key or
   * one of their read tokens (`openOwn`). Absent: no such stream opens.
   */
  ownSource?: PresenceSource;
  /** SOCKETS_PER_IP and MAX_SOCKETS, shared with the socket gateway. */
  slots: SocketSlots;
  /** MAX_SUBSCRIPTIONS, shared with the socket gateway; none: no cap. */
  subscriptionCap?: SubscriptionCap;
  logger: Logger;
  metrics?: Metrics;
  keepAliveMs?: number;
  retryMs?: number;
  stalledStreamMs?: number;
  /** Unsent bytes a stream may hold when the next event comes; past it, it is cut. */
  sendBufferCapBytes?: number;
  /** How fast a large presence's events may follow each other (fanout-pace.ts); 0 holds none back. */
  pacedBytesPerSecond?: number;
  /** The replay ring's bounds (replay.ts). */
  replayChanges?: number;
  replayBytes?: number;
  /** Changes one reconnect may be sent again at most (replay.ts). */
  replayPerReconnect?: number;
  /** Resolves once every member is known (the start's guild listings done); absent: known from the start. */
  membersKnown?: Promise<void>;
}

/** Why a stream may not open, in the API's error codes: the route answers it. */
export interface StreamRefusal {
  code: 'rate_limited' | 'try_again_later';
  message: string;
  /** When the client may try again, if the refusal knows. */
  retryAfterSeconds?: number;
}

/** What a stream of a private user opened as its owner opened it with (docs/privacy.md). */
export interface OwnerGrant {
  userId: Snowflake;
  /** The id of the read token it was opened with; null: the user's API key. */
  tokenId: string | null;
  /**
   * Whether the key or token still reads the user, asked at every keep-alive: a stream ends once its key
   * was replaced or its token removed, should the news of it not have come.
   */
  holds?: () => Promise<boolean>;
}

/**
 * Server-Sent Events: every open stream, who it listens to, and the changes they are sent. Each change is
 * encoded once, as one chunk every stream of that user is handed (and the replay ring keeps); the index
 * of subscribers and the pacing of large presences are the socket gateway's own classes.
 *
 * A stream opened by a private user's own key or read token (`openOwn`) is fed from `ownSource`, apart
 * from the others: its events are numbered nowhere and kept in no ring, so nothing of the user reaches a
 * stream opened without them, a reconnect included. It is sent the presence afresh whenever it opens.
 */
export class SseHub {
  private readonly subscriptionCap: SubscriptionCap;
  private readonly subscriptions: Subscriptions<SseStream>;
  private readonly streams = new Set<SseStream>();
  private readonly ids = new EventIds();
  private readonly ring: ReplayRing;
  private readonly streamOpens: StreamOpenBudget;
  private readonly retry: SseChunk;
  private readonly capBytes: number;
  private readonly stalledStreamMs: number;
  private readonly timer: NodeJS.Timeout;
  /** Stops the paced changes coming to the streams. */
  private readonly stopChanges: () => void;
  private closing = false;
  private everyMemberKnown: boolean;
  /** Streams of one user not monitored yet, opened before every member was known, and that user. */
  private readonly tentative = new Map<SseStream, Snowflake>();
  /** Streams opened by their user's key or token, with their grants, and by user. */
  private readonly grants = new Map<SseStream, OwnerGrant>();
  private readonly owned = new Map<Snowflake, Set<SseStream>>();
  /** Stops the changes of `ownSource` coming to the owners' streams. */
  private readonly stopOwnChanges: () => void;

  constructor(private readonly options: SseHubOptions) {
    this.subscriptionCap = options.subscriptionCap ?? new SubscriptionCap(0);
    this.subscriptions = new Subscriptions(this.subscriptionCap);
    this.ring = new ReplayRing(options.replayChanges, options.replayBytes, options.replayPerReconnect);
    this.streamOpens = new StreamOpenBudget(options.slots.perClient);
    this.retry = retryChunk(options.retryMs ?? RETRY_MS);
    this.capBytes = options.sendBufferCapBytes ?? SEND_BUFFER_CAP_BYTES;
    this.stalledStreamMs = options.stalledStreamMs ?? STALLED_STREAM_MS;
    this.stopChanges = paceChanges(
      options.source,
      (userId, snapshot) => this.changed(userId, snapshot),
      options.pacedBytesPerSecond,
    );
    this.stopOwnChanges = options.ownSource ? this.followOwners(options.ownSource) : () => undefined;
    this.timer = setInterval(() => this.tick(), options.keepAliveMs ?? KEEP_ALIVE_MS);
    this.timer.unref();
    this.everyMemberKnown = options.membersKnown === undefined;
    void options.membersKnown?.then(() => this.allMembersKnown());
  }

  /**
   * What was sent of the user must not be sent again (their privacy settings changed): a stream that comes
   * back is sent their presence as it is now, not the events it missed, which may show what is hidden now.
   */
  withdraw(userId: Snowflake): void {
    this.ring.push(userId, null);
  }

  /**
   * The user's read token `tokenId` was removed, or every key and token of theirs (null: an erasure): the
   * streams it opened end. The client reconnects, and is answered as anyone is.
   */
  revoked(userId: Snowflake, tokenId: string | null): void {
    for (const stream of this.owned.get(userId) ?? []) {
      if (tokenId === null || this.grants.get(stream)?.tokenId === tokenId) stream.end();
    }
  }

  /** Every member is known: a user not monitored now is not a member, not one still to be listed. */
  get knowsEveryMember(): boolean {
    return this.everyMemberKnown;
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** What the streams hold that their connections have not taken yet. */
  bufferedBytes(): number {
    let bytes = 0;
    for (const stream of this.streams) bytes += stream.unsentBytes;
    return bytes;
  }

  /**
   * Why a new stream of `client` naming `ids` distinct ids is refused (counted), or null when it may open,
   * one opening of the client's budget taken: then `open` it in the same turn, so that no other can take
   * the slot meanwhile.
   */
  refusal(client: string, ids: number): StreamRefusal | null {
    const { slots, metrics } = this.options;
    if (slots.clientFull(client)) {
      metrics?.rateLimited('sockets_per_ip');
      return { code: 'rate_limited', message: `at most ${slots.perClient} sockets and event streams per IP` };
    }
    if (slots.full) {
      metrics?.rateLimited('max_sockets');
      return {
        code: 'try_again_later',
        message: `this server holds as many sockets and event streams as it may (${slots.max}); try again later`,
      };
    }
    if (!this.subscriptionCap.fits(ids)) {
      metrics?.rateLimited('max_subscriptions');
      return {
        code: 'try_again_later',
        message: `this server holds as many subscriptions as it may (${this.subscriptionCap.max}); try again later`,
      };
    }
    const retryAfterSeconds = this.streamOpens.take(client);
    if (retryAfterSeconds === 0) return null;
    metrics?.rateLimited('stream_opens');
    const { burst, perMinute } = this.streamOpens;
    return {
      code: 'rate_limited',
      message: `at most ${burst} event streams opened in a row per IP, then ${perMinute} a minute; retry in ${retryAfterSeconds} ${retryAfterSeconds === 1 ? 'second' : 'seconds'}`,
      retryAfterSeconds,
    };
  }

  /**
   * A stream of the users `ids` on `response`, whose headers have been written: `retry:`, then what the
   * client needs to be current (see `opening`), then every change as it comes. `lastEventId`: the
   * `Last-Event-ID` of a client that reconnects. `tentative`: the one user of the stream, not monitored yet
   * while not every member is known; the stream ends once every member is, if they still are not.
   */
  open(
    response: ServerResponse,
    client: string,
    ids: readonly Snowflake[],
    lastEventId?: string,
    tentative?: Snowflake,
  ): void {
    // Gone before its stream began: its close, already past, would never release a slot.
    if (response.destroyed) return;
    this.options.slots.take(client);
    const stream = new SseStream(response, client, this.capBytes);
    this.streams.add(stream);
    // Errors of a gone connection are its close, which releases the stream; nothing to report.
    response.on('error', () => undefined);
    response.once('close', () => this.released(stream));
    stream.send(this.retry);
    // Shutting down: the client is told when to retry, and reconnects elsewhere.
    if (this.closing) {
      stream.end();
      return;
    }
    // The opening is read before the stream subscribes: a user first rendered by it (a pending member)
    // is announced to the others, and sent to this stream once, in its opening.
    this.opening(stream, ids, lastEventId);
    this.subscriptions.subscribe(stream, ids, false);
    if (tentative !== undefined) this.tentative.set(stream, tentative);
  }

  /**
   * A stream of `grant.userId` as they read themselves, on `response` (headers written): `retry:`, their
   * presence as it is now, then every change of it, with no ids. Its slot is counted as any stream's.
   */
  openOwn(response: ServerResponse, client: string, grant: OwnerGrant): void {
    const own = this.options.ownSource;
    if (own === undefined) throw new Error('the hub was given no source of what users read of themselves');
    if (response.destroyed) return;
    this.options.slots.take(client);
    const stream = new SseStream(response, client, this.capBytes);
    this.streams.add(stream);
    response.on('error', () => undefined);
    response.once('close', () => this.released(stream));
    stream.send(this.retry);
    if (this.closing) {
      stream.end();
      return;
    }
    const { userId } = grant;
    const snapshot = own.get(userId);
    if (snapshot) {
      stream.send(chunkOf(presenceBody(userId, snapshot)), userId);
      this.options.metrics?.sseEventsSent(1);
    }
    let streams = this.owned.get(userId);
    if (!streams) {
      streams = new Set();
      this.owned.set(userId, streams);
    }
    streams.add(stream);
    this.grants.set(stream, grant);
  }

  /** Ends every stream (clients reconnect after `retry:`) and stops listening. */
  close(): void {
    this.closing = true;
    clearInterval(this.timer);
    this.stopChanges();
    this.stopOwnChanges();
    for (const stream of this.streams) stream.end();
  }

  /**
   * What a stream starts with. A client that comes back with an id the ring reaches back to is sent what
   * it missed: each missed event again, or, for a user who changed while nobody streamed them, their
   * presence as it is now. Any other client (a first connection, an id too old, another run's, one that
   * missed more changes than a reconnect is sent again) gets the presence of every monitored id. Presences sent as they are now carry no id, so a stream cut among them
   * is asked for again from the client's previous id; when no missed event follows them, the newest id
   * closes the opening, with no event (the format lets an id stand alone).
   */
  private opening(stream: SseStream, ids: readonly Snowflake[], lastEventId: string | undefined): void {
    const seq = this.ids.seqOf(lastEventId);
    const missed = seq === null ? null : this.ring.since(seq, new Set(ids));
    let sent = 0;
    for (const userId of missed ? missed.fresh : ids) {
      const snapshot = this.options.source.get(userId);
      if (!snapshot) continue;
      stream.send(chunkOf(presenceBody(userId, snapshot)), userId);
      sent++;
    }
    const events = missed?.events ?? [];
    for (const [userId, event] of events) stream.send(event, userId);
    if (events.length === 0) stream.send(chunkOf([idLine(this.ids.text(this.ring.head)), LINE_END]));
    this.options.metrics?.sseEventsSent(sent + events.length);
  }

  /** A change out of the pacer: numbered, encoded once if anybody streams the user, and sent to them all. */
  private changed(userId: Snowflake, snapshot: PresenceSnapshot): void {
    if (!this.subscriptions.hasSubscribers(userId)) {
      this.ring.push(userId, null);
      return;
    }
    let event: SseChunk | null = null;
    let sent = 0;
    for (const stream of this.subscriptions.subscribersOf(userId)) {
      // The number the ring gives this change as it records it, below.
      event ??= changeEvent(this.ids.text(this.ring.head + 1), presenceBody(userId, snapshot));
      stream.send(event, userId);
      sent++;
    }
    this.ring.push(userId, event);
    if (sent > 0) this.options.metrics?.sseEventsSent(sent);
  }

  /**
   * The changes of what users read of themselves, paced as the others, for the users whose own streams are
   * open: anyone else's cost a look-up.
   */
  private followOwners(own: PresenceSource): () => void {
    const pacer = new FanOutPacer(
      (userId, snapshot) => this.ownChanged(userId, snapshot),
      (userId) => own.get(userId),
      this.options.pacedBytesPerSecond,
    );
    const stop = own.onChange((change) => {
      if (change.kind === 'unmonitored') pacer.forget(change.userId);
      else if (this.owned.has(change.userId)) pacer.changed(change.userId, change.current);
    });
    return () => {
      stop();
      pacer.close();
    };
  }

  private ownChanged(userId: Snowflake, snapshot: PresenceSnapshot): void {
    const streams = this.owned.get(userId);
    if (!streams) return;
    const event = chunkOf(presenceBody(userId, snapshot));
    for (const stream of streams) stream.send(event, userId);
    this.options.metrics?.sseEventsSent(streams.size);
  }

  /** Ends the owners' streams whose key or token no longer reads their user. */
  private recheckOwners(): void {
    for (const [stream, grant] of this.grants) {
      grant.holds?.().then(
        (holds) => {
          if (!holds) stream.end();
        },
        (error: unknown) =>
          this.options.logger.debug({ err: error }, 'could not check an event stream of its owner again'),
      );
    }
  }

  /**
   * Keeps every stream alive, cuts those whose connection took nothing for too long, and forgets the
   * clients whose budget of openings is whole again.
   */
  private tick(): void {
    this.recheckOwners();
    this.streamOpens.sweep();
    const stalledBefore = Date.now() - this.stalledStreamMs;
    for (const stream of this.streams) {
      if (stream.stalledSince !== null && stream.stalledSince < stalledBefore) {
        this.options.logger.debug({ client: stream.client }, 'event stream not read; cut it');
        stream.cut();
      } else if (!stream.busy) {
        // A busy stream is sending already: nothing proves it alive better.
        stream.send(KEEP_ALIVE);
      }
    }
  }

  /**
   * Streams of a user still not monitored end: `EventSource` reconnects after `retry:`, and is answered
   * `404 user_not_monitored`, which it does not retry.
   */
  private allMembersKnown(): void {
    this.everyMemberKnown = true;
    for (const [stream, userId] of this.tentative) if (!this.options.source.get(userId)) stream.end();
    this.tentative.clear();
  }

  private released(stream: SseStream): void {
    this.tentative.delete(stream);
    const grant = this.grants.get(stream);
    if (grant) {
      this.grants.delete(stream);
      const streams = this.owned.get(grant.userId);
      streams?.delete(stream);
      if (streams?.size === 0) this.owned.delete(grant.userId);
    }
    if (!this.streams.delete(stream)) return;
    this.subscriptions.release(stream);
    this.options.slots.release(stream.client);
  }
}
