import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Snowflake } from '../presence/model.js';

/** How often a node that can DM looks for notices, and how many it takes at once. */
const RELAY_EVERY_MS = 1_000;
const RELAY_BATCH = 10;

interface Notice {
  userId: Snowflake;
  content: string;
}

/**
 * DMs to users from nodes that may not have Discord credentials (an API node disables a webhook): a list
 * in Redis that the nodes connected to Discord take from, each notice once.
 */
export class RedisNotices {
  private readonly key: string;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.key = `${prefix}webhook-notices`;
  }

  async send(userId: Snowflake, content: string): Promise<void> {
    await this.redis.rpush(this.key, JSON.stringify({ userId, content } satisfies Notice));
  }

  /** Sends the notices waiting through `dm`, until the returned function is called. */
  relay(dm: (userId: Snowflake, content: string) => Promise<unknown>, logger: Logger): () => void {
    let running = false;
    const timer = setInterval(async () => {
      if (running) return;
      running = true;
      try {
        const taken = (await this.redis.lpop(this.key, RELAY_BATCH)) ?? [];
        for (const text of taken) {
          const notice = JSON.parse(text) as Notice;
          await dm(notice.userId, notice.content);
        }
      } catch (error) {
        logger.warn({ err: error }, 'could not relay webhook notices');
      } finally {
        running = false;
      }
    }, RELAY_EVERY_MS);
    timer.unref();
    return () => clearInterval(timer);
  }
}
