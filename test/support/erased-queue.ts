import { expect } from 'vitest';
import type { Store } from '../../src/store/ports.js';
import type { WebhookQueue } from '../../src/store/webhook-queue.js';

/**
 * For a store that queues webhook events itself (SQLite, PostgreSQL): erasing a user drops the events
 * waiting for their webhooks in the same transaction, and leaves other users' waiting.
 */
export async function expectErasureDropsQueuedEvents(store: Store, queue: WebhookQueue): Promise<void> {
  const now = Date.now();
  for (const [id, userId] of [
    ['wh_mine', '1'],
    ['wh_theirs', '2'],
  ] as const) {
    await store.webhooks.addWebhook(
      {
        id,
        userId,
        url: `https://example.com/${id}`,
        events: ['presence'],
        secret: 'secret',
        createdAt: now,
        disabledAt: null,
        disabledReason: null,
      },
      5,
    );
    for (const n of [1, 2]) {
      await queue.enqueue(id, { id: `${id}-${n}`, type: 'now_playing', body: '{}' }, now);
    }
  }
  expect((await store.accounts.erase('1', now)).webhookIds).toEqual(['wh_mine']);
  const claims = await queue.claim(now, 10, 1_000);
  expect(claims.map((claim) => [claim.webhookId, claim.event.id])).toEqual([['wh_theirs', 'wh_theirs-1']]);
}
