import type { APIMessage } from 'discord-api-types/v10';

interface MessageWaiter {
  predicate(message: APIMessage): boolean;
  resolve(message: APIMessage): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * What the bot posted, for tests to read and wait for: each message is handed to one wait only, so two
 * waits for alike messages get two of them.
 */
export class BotMessages {
  private readonly posted: APIMessage[] = [];
  private readonly claimed = new Set<string>();
  private waiters: MessageWaiter[] = [];

  /** @param keep messages kept; past it the oldest goes. */
  constructor(private readonly keep: number) {}

  add(message: APIMessage): void {
    this.posted.push(message);
    if (this.posted.length > this.keep) this.posted.shift();
    for (const waiter of this.waiters) {
      if (this.claimed.has(message.id)) break;
      if (waiter.predicate(message)) {
        this.claimed.add(message.id);
        clearTimeout(waiter.timer);
        this.waiters = this.waiters.filter((other) => other !== waiter);
        waiter.resolve(message);
      }
    }
  }

  /** Oldest first; only one channel's if given. */
  sent(channelId?: string): APIMessage[] {
    return this.posted.filter((message) => channelId === undefined || message.channel_id === channelId);
  }

  /**
   * The first message posted (or to come) that matches and that no earlier wait returned. Rejects after
   * timeoutMs with what the bot did post.
   */
  waitFor(predicate: (message: APIMessage) => boolean, timeoutMs: number): Promise<APIMessage> {
    const existing = this.posted.find((message) => !this.claimed.has(message.id) && predicate(message));
    if (existing) {
      this.claimed.add(existing.id);
      return Promise.resolve(existing);
    }
    return new Promise((resolve, reject) => {
      const waiter: MessageWaiter = {
        predicate,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((other) => other !== waiter);
          const latest = this.posted.map((message) => JSON.stringify(message.content)).slice(-5);
          reject(
            new Error(
              `simulated Discord: no message from the bot matched within ${timeoutMs} ms ` +
                `(${this.posted.length} posted${latest.length ? `; latest: ${latest.join(', ')}` : ''})`,
            ),
          );
        }, timeoutMs),
      };
      this.waiters.push(waiter);
    });
  }

  /** Every pending wait rejects. */
  stop(): void {
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error('simulated Discord: stopped'));
    }
  }
}
