import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { WebhookStore } from '../../src/store/ports.js';
import type { EnqueueOutcome, QueuedEvent, WebhookQueue } from '../../src/store/webhook-queue.js';
import { WebhookDirectory } from '../../src/webhooks/directory.js';
import { WebhookFeed } from '../../src/webhooks/feed.js';

/** The feed between changes and a queue that answers only when told: what shutdown waits for. */

const USER = '94490510688792576';

/** A queue whose enqueues stay under way until `answer` is called. */
function heldQueue() {
  const held: Array<{ event: QueuedEvent; answer: () => void }> = [];
  const queue = {
    enqueue: (_webhookId: string, event: QueuedEvent) =>
      new Promise<EnqueueOutcome>((resolve) => {
        held.push({ event, answer: () => resolve({ collapsed: 0, dropped: 0 }) });
      }),
  } as unknown as WebhookQueue;
  return { queue, held };
}

async function feedWith(queue: WebhookQueue): Promise<WebhookFeed> {
  const store = {
    activeWebhooks: async () => [
      {
        id: 'hook',
        userId: USER,
        url: 'https://example.com/hook',
        events: ['kv'],
        secret: 's',
        createdAt: 0,
        disabledAt: null,
        disabledReason: null,
      },
    ],
  } as unknown as WebhookStore;
  const directory = new WebhookDirectory(store);
  await directory.load();
  return new WebhookFeed({
    directory,
    queue,
    kv: { getKv: async () => ({ kv: { mood: 'sleepy' }, revision: 1 }) } as never,
    logger: pino({ level: 'silent' }),
  });
}

describe('the webhook feed at shutdown', () => {
  it('drains only once every event it was handed is in the queue', async () => {
    const { queue, held } = heldQueue();
    const feed = await feedWith(queue);
    feed.kvWritten({ userId: USER } as never);
    let drained = false;
    const draining = feed.drain().then(() => {
      drained = true;
    });
    // The KV is read, then the event handed to the queue, which has not answered.
    await expect.poll(() => held.length).toBe(1);
    expect(drained).toBe(false);
    expect(JSON.parse(held[0]?.event.body as string)).toMatchObject({ type: 'kv', data: { mood: 'sleepy' } });
    held[0]?.answer();
    await draining;
    expect(drained).toBe(true);
  });

  it('drains at once when nothing is under way', async () => {
    const { queue } = heldQueue();
    await (await feedWith(queue)).drain();
  });
});
