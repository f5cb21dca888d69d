import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import type { Snowflake } from '../../src/presence/model.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SqliteWebhookQueue } from '../../src/store/sqlite/webhook-queue.js';
import { WebhookDirectory } from '../../src/webhooks/directory.js';
import { eventBody } from '../../src/webhooks/events.js';
import { WebhookSender } from '../../src/webhooks/sender.js';
import { WebhookService } from '../../src/webhooks/service.js';
import { DELIVERIES_PER_USER, DELIVERY_CONCURRENCY, DeliveryWorker } from '../../src/webhooks/worker.js';
import { eventually } from '../support/eventually.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

/**
 * One node's share of deliveries per user, against receivers on loopback that hold each request until the
 * test lets it go: users whose receivers hang take no more than their share, and another user's delivery
 * goes out while they hang. The worker's clock stands still, so no lease runs out; nothing is timed.
 */

const T0 = Date.UTC(2026, 11, 6, 12);
/** Longer than the test: a held request is answered by the test, never given up by the sender. */
const NEVER_MS = 10 * 60_000;
/** Enough webhooks on users whose receivers hang to take every slot a node has, without a share. */
const HOGS = 7;
const WEBHOOKS_PER_HOG = 3;

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

interface Receiving {
  receiver: WebhookReceiver;
  /** The most requests the receiver held at once. */
  mostHeld: number;
}

async function setup() {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  closers.push(() => store.close());
  const policy = { allowPrivate: true, resolve: async () => [{ address: '127.0.0.1', family: 4 as const }] };
  const queue = new SqliteWebhookQueue(store.db);
  const logger = pino({ level: 'silent' });
  const service = new WebhookService({
    store: store.webhooks,
    queue,
    directory: new WebhookDirectory(store.webhooks),
    bus: new LocalBus(),
    policy,
    maxPerUser: 5,
    notify: async () => {},
    commandPrefix: '?',
    logger,
    now: () => T0,
  });
  const sender = new WebhookSender({ policy, userAgent: 'Presently-Webhooks/test', timeoutMs: NEVER_MS });
  closers.push(() => sender.close());
  const worker = new DeliveryWorker({
    queue,
    store: store.webhooks,
    sender,
    webhooks: service,
    logger,
    now: () => T0,
  });
  closers.push(() => worker.close());

  /** A receiver for `userId` that holds every request, and `count` webhooks of theirs to it. */
  const user = async (userId: Snowflake, count: number, hold: boolean) => {
    const receiver = await startWebhookReceiver();
    // Closed before the worker: the requests it holds end, and the worker can stop.
    closers.push(() => receiver.close());
    const receiving: Receiving = { receiver, mostHeld: 0 };
    receiver.respond = () => {
      if (!hold) return 200;
      receiving.mostHeld = Math.max(receiving.mostHeld, receiver.held + 1);
      return 'hang';
    };
    const webhooks: string[] = [];
    for (let i = 0; i < count; i++) {
      const outcome = await service.create(userId, { url: `${receiver.url}/${i}`, events: ['kv'] });
      if (!outcome.ok) throw new Error(outcome.rejection.message);
      webhooks.push(outcome.webhook.id);
    }
    const queueEvents = async (id: string) => {
      for (const webhookId of webhooks) {
        await queue.enqueue(webhookId, { id, type: 'kv', body: eventBody('kv', userId, T0, '{}') }, T0);
      }
      await worker.poll();
    };
    return { receiving, queueEvents };
  };
  return { user };
}

describe('deliveries shared between users', () => {
  it("go out for a user while seven others' receivers hang, none of whom has more than its share in flight", async () => {
    const { user } = await setup();
    expect(HOGS * WEBHOOKS_PER_HOG).toBeGreaterThan(DELIVERY_CONCURRENCY);
    const hogs = await Promise.all(
      Array.from({ length: HOGS }, (_, i) => user(`20000000000000000${i}`, WEBHOOKS_PER_HOG, true)),
    );
    const victim = await user('300000000000000000', 1, false);
    for (const hog of hogs) await hog.queueEvents('hog-1');
    const held = () => hogs.reduce((sum, hog) => sum + hog.receiving.receiver.held, 0);
    await eventually(() => expect(held()).toBeGreaterThanOrEqual(HOGS * DELIVERIES_PER_USER));

    await victim.queueEvents('victim-1');
    await eventually(() => expect(victim.receiving.receiver.received).toHaveLength(1));
    // Delivered while every other receiver still holds its requests.
    expect(hogs.map((hog) => hog.receiving.receiver.held)).toEqual(hogs.map(() => DELIVERIES_PER_USER));

    // Let go, the events passed over go out too, still never more than the share at once.
    for (const hog of hogs) hog.receiving.receiver.release();
    await eventually(() => {
      for (const hog of hogs) hog.receiving.receiver.release();
      expect(hogs.map((hog) => hog.receiving.receiver.received.length)).toEqual(
        hogs.map(() => WEBHOOKS_PER_HOG),
      );
    });
    expect(hogs.map((hog) => hog.receiving.mostHeld)).toEqual(hogs.map(() => DELIVERIES_PER_USER));
  });
});
