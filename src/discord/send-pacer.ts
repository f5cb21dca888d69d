import type { Snowflake } from '../presence/model.js';

export interface SendPacerOptions {
  /** At most this many sends per shard in any `windowMs`. */
  limit: number;
  windowMs: number;
  now: () => number;
}

interface Waiting {
  guildId: Snowflake;
  /** Sends now; false when there was nothing left to send (it then costs nothing of the budget). */
  send(): boolean;
}

interface Shard {
  /** When each send of the last window went out, oldest first. */
  sentAt: number[];
  /** Sends past the budget, in the order they were asked for. */
  queue: Waiting[];
  timer?: NodeJS.Timeout;
}

/**
 * Paces the sends of one kind on each shard's gateway connection: at most `limit` in any window of
 * `windowMs` (a sliding window, so no stretch of that length, Discord's own included, holds more). A send
 * past the budget waits its turn, in order, and goes out as soon as the window allows; none is dropped
 * unless its guild or shard is forgotten.
 */
export class SendPacer {
  private readonly shards = new Map<number, Shard>();

  constructor(private readonly options: SendPacerOptions) {}

  /** Sends at once if the shard's budget allows and nothing waits before it; otherwise queues it. */
  submit(shardId: number, guildId: Snowflake, send: () => boolean): void {
    let shard = this.shards.get(shardId);
    if (!shard) {
      shard = { sentAt: [], queue: [] };
      this.shards.set(shardId, shard);
    }
    shard.queue.push({ guildId, send });
    this.drain(shard);
  }

  /** The shard's session is gone: what waits for it is dropped. What it sent still counts. */
  forgetShard(shardId: number): void {
    const shard = this.shards.get(shardId);
    if (!shard) return;
    shard.queue = [];
    this.stop(shard);
  }

  /** The guild is gone, or listed afresh: its waiting sends are dropped. */
  forgetGuild(guildId: Snowflake): void {
    for (const shard of this.shards.values()) {
      shard.queue = shard.queue.filter((waiting) => waiting.guildId !== guildId);
      if (shard.queue.length === 0) this.stop(shard);
    }
  }

  close(): void {
    for (const shard of this.shards.values()) this.stop(shard);
    this.shards.clear();
  }

  private drain(shard: Shard): void {
    const { limit, windowMs } = this.options;
    const now = this.options.now();
    // After the clock went back, sends stamped ahead of it count as sent now: the wait is at most a window.
    for (let i = shard.sentAt.length - 1; i >= 0 && (shard.sentAt[i] as number) > now; i--)
      shard.sentAt[i] = now;
    while (shard.sentAt.length > 0 && now - (shard.sentAt[0] as number) >= windowMs) shard.sentAt.shift();
    while (shard.queue.length > 0 && shard.sentAt.length < limit) {
      const next = shard.queue.shift() as Waiting;
      if (next.send()) shard.sentAt.push(now);
    }
    if (shard.queue.length === 0 || shard.timer) return;
    // The queue waits for the oldest send of the window to leave it.
    const delayMs = Math.max((shard.sentAt[0] ?? now) + windowMs - now, 0);
    shard.timer = setTimeout(() => {
      delete shard.timer;
      this.drain(shard);
    }, delayMs).unref();
  }

  private stop(shard: Shard): void {
    if (shard.timer) clearTimeout(shard.timer);
    delete shard.timer;
  }
}
