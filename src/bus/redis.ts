import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Bus, BusHandler, BusMessages, Topic } from './ports.js';

/**
 * The bus across nodes: one Redis channel per topic, JSON messages. Every node receives every message,
 * its own included, so a node's reaction to a change is the same wherever the change happened. Redis
 * pub/sub does not keep messages for a node that is disconnected: `onResubscribed` tells when to re-read
 * shared state instead.
 */
export class RedisBus implements Bus {
  private readonly handlers = new Map<Topic, Set<BusHandler<Topic>>>();
  private readonly subscriber: Redis;
  private readonly resubscribed = new Set<() => void>();
  private readonly disconnected = new Set<() => void>();
  private connectedOnce = false;
  private listening = false;
  private closed = false;
  private lastRefusal = '';

  constructor(
    private readonly publisher: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {
    this.subscriber = publisher.duplicate({
      // No ready check (INFO) on this connection: ioredis sends it after naming the connection, and if a
      // SUBSCRIBE got through first, INFO is refused in subscriber mode with an exception nobody can catch.
      enableReadyCheck: false,
      // The library's own resubscription rejects with nobody to catch it when Redis refuses this node's
      // password after a reconnect: `ready()` resubscribes instead, and handles the refusal.
      autoResubscribe: false,
    });
    // The command connection reports outages; this one's errors are the same ones.
    this.subscriber.on('error', () => {});
    this.subscriber.on('message', (channel: string, message: string) => this.deliver(channel, message));
    this.subscriber.on('close', () => {
      this.listening = false;
      if (this.connectedOnce) for (const listener of this.disconnected) listener();
    });
    this.subscriber.on('ready', () => {
      // Without a ready check, `ready` comes before Redis has accepted the password: subscribing says.
      this.ready().then(
        () => {
          // A retry that raced an earlier one: this connection is listening already.
          if (this.listening) return;
          this.listening = true;
          this.lastRefusal = '';
          if (!this.connectedOnce) {
            this.connectedOnce = true;
            return;
          }
          this.logger.warn('reconnected to Redis; re-reading shared state');
          for (const listener of this.resubscribed) listener();
        },
        (error: unknown) => {
          if (this.closed) return;
          // Refused again on every retry while the password is wrong: one line per kind of refusal.
          const message = error instanceof Error ? error.message : String(error);
          if (message !== this.lastRefusal) {
            this.lastRefusal = message;
            this.logger.error({ err: error }, 'could not resubscribe after reconnecting; connecting again');
          }
          // A refused password leaves the connection open and useless: drop it, and retry as after an outage.
          this.subscriber.disconnect(true);
        },
      );
    });
  }

  /** Whether messages are being received: subscribed, on a connection Redis accepted. */
  get subscribed(): boolean {
    return this.listening || this.handlers.size === 0;
  }

  channelOf(topic: Topic): string {
    return `${this.prefix}bus:${topic}`;
  }

  /** Resolves when Redis accepted the message; handlers here run when it comes back, as everywhere. */
  async publish<T extends Topic>(topic: T, message: BusMessages[T]): Promise<void> {
    await this.publisher.publish(this.channelOf(topic), JSON.stringify(message));
  }

  subscribe<T extends Topic>(topic: T, handler: BusHandler<T>): () => void {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
      this.subscriber.subscribe(this.channelOf(topic)).catch((error: unknown) => {
        this.logger.error({ err: error, topic }, 'could not subscribe to a Redis channel');
      });
    }
    set.add(handler as BusHandler<Topic>);
    return () => set.delete(handler as BusHandler<Topic>);
  }

  /** Resolves once every topic subscribed so far is being received. */
  async ready(): Promise<void> {
    const channels = [...this.handlers.keys()].map((topic) => this.channelOf(topic));
    if (channels.length > 0) await this.subscriber.subscribe(...channels);
  }

  /** After the subscription connection came back: messages may have been missed meanwhile. */
  onResubscribed(listener: () => void): () => void {
    this.resubscribed.add(listener);
    return () => this.resubscribed.delete(listener);
  }

  /** The subscription connection dropped: messages published from now until it is back are lost. */
  onDisconnected(listener: () => void): () => void {
    this.disconnected.add(listener);
    return () => this.disconnected.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.handlers.clear();
    this.resubscribed.clear();
    this.disconnected.clear();
    this.subscriber.disconnect();
  }

  private deliver(channel: string, raw: string): void {
    const topic = channel.slice(this.prefix.length + 'bus:'.length) as Topic;
    const handlers = this.handlers.get(topic);
    if (!handlers || handlers.size === 0) return;
    let message: BusMessages[Topic];
    try {
      message = JSON.parse(raw) as BusMessages[Topic];
    } catch (error) {
      this.logger.error({ err: error, channel }, 'dropped a bus message that is not JSON');
      return;
    }
    for (const handler of handlers) {
      try {
        handler(message);
      } catch (error) {
        this.logger.error({ err: error, topic }, 'a bus handler failed');
      }
    }
  }
}
