import type { APIMessage } from 'discord-api-types/v10';
import { Waiters } from './waiters.js';

/** How long the simulator's waits wait unless told. */
export const DEFAULT_WAIT_MS = 5000;

/**
 * What the bot posted, for tests to read and wait for: each message is handed to one wait only, so two
 * waits for alike messages get two of them.
 */
export class BotMessages {
  private readonly posted: APIMessage[] = [];
  private readonly claimed = new Set<string>();
  private readonly waiters = new Waiters<APIMessage>();

  /** @param keep messages kept; past it the oldest goes. */
  constructor(private readonly keep: number) {}

  add(message: APIMessage): void {
    this.posted.push(message);
    if (this.posted.length > this.keep) this.posted.shift();
    this.offer(message);
  }

  /** A kept message was edited in place: it may now match a wait it did not match before. */
  updated(message: APIMessage): void {
    this.offer(message);
  }

  remove(messageId: string): void {
    const index = this.posted.findIndex((message) => message.id === messageId);
    if (index >= 0) this.posted.splice(index, 1);
  }

  private offer(message: APIMessage): void {
    if (!this.claimed.has(message.id) && this.waiters.resolveFirst(message)) this.claimed.add(message.id);
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
    return this.waiters.wait(predicate, timeoutMs, () => {
      const latest = this.posted.map((message) => JSON.stringify(message.content)).slice(-5);
      return new Error(
        `simulated Discord: no message from the bot matched within ${timeoutMs} ms ` +
          `(${this.posted.length} posted${latest.length ? `; latest: ${latest.join(', ')}` : ''})`,
      );
    });
  }

  /** Every pending wait rejects. */
  stop(): void {
    this.waiters.rejectAll(new Error('simulated Discord: stopped'));
  }
}
