import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalBus } from '../../src/bus/local.js';
import type { WebhookEvent } from '../../src/model/webhook.js';
import { Metrics } from '../../src/ops/metrics.js';
import type { Snowflake } from '../../src/presence/model.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { SqliteWebhookQueue } from '../../src/store/sqlite/webhook-queue.js';
import { WebhookDirectory } from '../../src/webhooks/directory.js';
import { eventBody } from '../../src/webhooks/events.js';
import { MAX_FAILED_EVENTS, RETRY_WINDOW_MS } from '../../src/webhooks/retry-policy.js';
import { WebhookSender } from '../../src/webhooks/sender.js';
import { WebhookService } from '../../src/webhooks/service.js';
import type { Resolve } from '../../src/webhooks/target.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { parseExposition, sampleValue } from '../support/prometheus.js';
import {
  type Respond,
  signedWith,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

/**
 * The delivery worker against a receiver on loopback: what a delivery carries, retries, order, and when a
 * webhook is given up on. Time is the test's: the worker's clock and backoff are injected, and each step
 * is driven (`deliverDue`) and awaited, never slept through.
 */

const USER = '80351110224678912';
const T0 = Date.UTC(2026, 10, 26, 12);
const RETRY_MS = 5_000;
/** An attempt that gets no answer fails after this (real time: the receiver holds the request). */
const TIMEOUT_MS = 200;

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(
  options: { respond?: Respond; allowPrivate?: boolean; resolve?: Resolve; retryMs?: number } = {},
) {
  const receiver = await startWebhookReceiver(options.respond);
  closers.push(() => receiver.close());
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  closers.push(() => store.close());
  const clock = { now: T0 };
  const policy = {
    allowPrivate: options.allowPrivate ?? true,
    resolve: options.resolve ?? (async () => [{ address: '127.0.0.1', family: 4 }]),
  };
  const queue = new SqliteWebhookQueue(store.db);
  const notices: { userId: Snowflake; content: string }[] = [];
  const logger = pino({ level: 'silent' });
  const service = new WebhookService({
    store: store.webhooks,
    queue,
    directory: new WebhookDirectory(store.webhooks),
    bus: new LocalBus(),
    policy,
    maxPerUser: 5,
    notify: async (userId, content) => {
      notices.push({ userId, content });
    },
    commandPrefix: '?',
    logger,
    now: () => clock.now,
  });
  const sender = new WebhookSender({ policy, userAgent: 'Presently-Webhooks/test', timeoutMs: TIMEOUT_MS });
  closers.push(() => sender.close());
  const metrics = new Metrics();
  const worker = new DeliveryWorker({
    queue,
    store: store.webhooks,
    sender,
    webhooks: service,
    logger,
    metrics,
    now: () => clock.now,
    backoff: () => options.retryMs ?? RETRY_MS,
  });
  closers.push(() => worker.close());

  /** A webhook of USER to the receiver (`path` tells webhooks apart); its id and secret. */
  const register = async (path = '/hook', url = `${receiver.url}${path}`) => {
    const outcome = await service.create(USER, { url, events: ['presence', 'now_playing', 'kv'] });
    if (!outcome.ok) throw new Error(outcome.rejection.message);
    return outcome.webhook;
  };
  /** Queues an event `id` (its data says which) for the webhook. */
  const queueEvent = (webhookId: string, id: string, type: WebhookEvent = 'now_playing') =>
    queue.enqueue(
      webhookId,
      { id, type, body: eventBody(type, USER, clock.now, JSON.stringify({ id })) },
      clock.now,
    );
  /** Delivers everything due now, each webhook's events one after another, and waits for the outcome. */
  const deliverDue = async () => {
    await worker.poll();
    await worker.idle();
  };
  const deliveriesOf = async (webhookId: string) =>
    (await service.list(USER)).find((webhook) => webhook.id === webhookId);
  const outcomes = async () => {
    const families = parseExposition((await metrics.scrape()).text);
    return Object.fromEntries(
      ['delivered', 'retried', 'failed', 'dropped'].map((outcome) => [
        outcome,
        sampleValue(families, 'presently_webhook_deliveries_total', { outcome }),
      ]),
    );
  };
  return {
    receiver,
    clock,
    service,
    worker,
    notices,
    register,
    queueEvent,
    deliverDue,
    deliveriesOf,
    outcomes,
  };
}

/** The `id`s of the events the receiver got, in order (a retry shows again). */
const idsOf = (receiver: WebhookReceiver) =>
  receiver.received.map((entry) => (entry.body.data as { id: string }).id);

describe('a delivery', () => {
  it('is a signed JSON POST with the delivery id, the event type and the body as queued', async () => {
    const { receiver, register, queueEvent, deliverDue, deliveriesOf, outcomes } = await setup();
    const webhook = await register();
    await queueEvent(webhook.id, 'd-1', 'presence');
    await deliverDue();

    const [got] = receiver.received;
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.headers['presently-delivery']).toBe('d-1');
    expect(got?.headers['presently-event']).toBe('presence');
    expect(got?.headers['user-agent']).toBe('Presently-Webhooks/test');
    expect(got?.headers['presently-signature']).toBe(
      `t=${Math.floor(T0 / 1000)},v1=${String(got?.headers['presently-signature']).split('v1=')[1]}`,
    );
    expect(signedWith(webhook.secret, got as NonNullable<typeof got>)).toBe(true);
    expect(signedWith('whsec_someone-else', got as NonNullable<typeof got>)).toBe(false);
    expect(got?.body).toEqual({ type: 'presence', user_id: USER, timestamp: T0, data: { id: 'd-1' } });
    expect((await deliveriesOf(webhook.id))?.deliveries).toEqual([
      {
        id: 'd-1',
        type: 'presence',
        status: 'delivered',
        attempts: 1,
        at: T0,
        response_code: 200,
        error: null,
        next_attempt_at: null,
      },
    ]);
    expect(await outcomes()).toEqual({ delivered: 1, retried: 0, failed: 0, dropped: 0 });
  });

  it('is retried after a 500, with the same delivery id, once the backoff has passed', async () => {
    const { receiver, clock, register, queueEvent, deliverDue, deliveriesOf, outcomes } = await setup({
      respond: (_, index) => (index === 0 ? 500 : 200),
    });
    const webhook = await register();
    await queueEvent(webhook.id, 'd-1');
    await deliverDue();
    expect((await deliveriesOf(webhook.id))?.deliveries[0]).toMatchObject({
      status: 'retrying',
      attempts: 1,
      response_code: 500,
      error: 'HTTP 500',
      next_attempt_at: T0 + RETRY_MS,
    });
    // Not due yet: nothing is sent.
    clock.now += RETRY_MS - 1;
    await deliverDue();
    expect(receiver.received).toHaveLength(1);

    clock.now += 1;
    await deliverDue();
    expect(receiver.received.map((entry) => entry.deliveryId)).toEqual(['d-1', 'd-1']);
    // Signed anew at the time of each attempt.
    expect(receiver.received[1]?.headers['presently-signature']).toMatch(
      new RegExp(`^t=${Math.floor((T0 + RETRY_MS) / 1000)},`),
    );
    expect(
      signedWith(webhook.secret, receiver.received[1] as NonNullable<(typeof receiver.received)[1]>),
    ).toBe(true);
    expect((await deliveriesOf(webhook.id))?.deliveries).toEqual([
      expect.objectContaining({ id: 'd-1', status: 'delivered', attempts: 2, response_code: 200 }),
    ]);
    expect(await outcomes()).toMatchObject({ delivered: 1, retried: 1 });
  });

  it('is retried when the receiver does not answer within the timeout', async () => {
    const { receiver, clock, register, queueEvent, deliverDue, deliveriesOf } = await setup({
      respond: (_, index) => (index === 0 ? 'hang' : 204),
    });
    const webhook = await register();
    await queueEvent(webhook.id, 'd-1');
    await deliverDue();
    expect((await deliveriesOf(webhook.id))?.deliveries[0]).toMatchObject({
      status: 'retrying',
      response_code: null,
      error: `no answer within ${TIMEOUT_MS / 1000} s`,
    });
    clock.now += RETRY_MS;
    await deliverDue();
    expect(receiver.received.map((entry) => entry.deliveryId)).toEqual(['d-1', 'd-1']);
    expect((await deliveriesOf(webhook.id))?.deliveries[0]).toMatchObject({
      status: 'delivered',
      attempts: 2,
    });
  });

  it('is retried after 429, 408 and a refused connection, but a 4xx or a redirect fails the event at once', async () => {
    const statuses = [429, 408, 404, 302];
    const { receiver, clock, register, queueEvent, deliverDue, deliveriesOf } = await setup({
      respond: (_, index) => statuses[index] ?? 200,
    });
    const webhook = await register();
    await queueEvent(webhook.id, 'd-1');
    await queueEvent(webhook.id, 'd-2');
    await queueEvent(webhook.id, 'd-3');
    for (let step = 0; step < 4; step++) {
      await deliverDue();
      clock.now += RETRY_MS;
    }
    expect(receiver.received.map((entry) => entry.deliveryId)).toEqual(['d-1', 'd-1', 'd-1', 'd-2', 'd-3']);
    expect(
      (await deliveriesOf(webhook.id))?.deliveries.map((record) => [record.id, record.status, record.error]),
    ).toEqual([
      ['d-3', 'delivered', null],
      ['d-2', 'failed', 'redirect (HTTP 302) not followed'],
      ['d-1', 'failed', 'HTTP 404'],
    ]);

    const closed = await setup({ retryMs: RETRY_MS });
    const gone = await closed.register('/hook', 'http://127.0.0.1:1/hook');
    await closed.queueEvent(gone.id, 'd-1');
    await closed.deliverDue();
    expect((await closed.deliveriesOf(gone.id))?.deliveries[0]).toMatchObject({
      status: 'retrying',
      error: 'connection refused',
    });
  });
});

describe('order', () => {
  it("gives each webhook its events in order, the next waiting for the head's retry, others going on", async () => {
    const { receiver, clock, register, queueEvent, deliverDue } = await setup({
      respond: (received, index) => (received.deliveryId === 'a-1' && index < 3 ? 500 : 200),
    });
    const a = await register('/a');
    const b = await register('/b');
    for (const id of ['a-1', 'a-2', 'a-3']) await queueEvent(a.id, id);
    for (const id of ['b-1', 'b-2']) await queueEvent(b.id, id);
    await deliverDue();
    expect(idsOf(receiver).filter((id) => id.startsWith('a'))).toEqual(['a-1']);
    expect(idsOf(receiver).filter((id) => id.startsWith('b'))).toEqual(['b-1', 'b-2']);

    clock.now += RETRY_MS;
    await deliverDue();
    expect(idsOf(receiver).filter((id) => id.startsWith('a'))).toEqual(['a-1', 'a-1', 'a-2', 'a-3']);
  });
});

describe('giving up', () => {
  it('disables a webhook whose event fails for an hour, tells its owner once, and sends it nothing more', async () => {
    const retryMs = 10 * 60_000;
    const { receiver, clock, register, queueEvent, deliverDue, deliveriesOf, notices, outcomes } =
      await setup({
        respond: () => 503,
        retryMs,
      });
    const webhook = await register();
    await queueEvent(webhook.id, 'd-1');
    await queueEvent(webhook.id, 'd-2');
    while (notices.length === 0 && clock.now - T0 <= 2 * RETRY_WINDOW_MS) {
      await deliverDue();
      clock.now += retryMs;
    }
    // Attempts at 0, 10, …, 60 minutes: the next would fall past the hour.
    expect(receiver.received.map((entry) => entry.deliveryId)).toEqual(Array(7).fill('d-1'));
    const listed = await deliveriesOf(webhook.id);
    expect(listed).toMatchObject({
      disabled_at: T0 + RETRY_WINDOW_MS,
      disabled_reason: 'an event could not be delivered for an hour (HTTP 503)',
    });
    expect(listed?.deliveries[0]).toMatchObject({ id: 'd-1', status: 'failed', attempts: 7 });
    expect(notices).toEqual([
      {
        userId: USER,
        content: expect.stringContaining(`Your webhook \`${webhook.id}\` to <${webhook.url}> is disabled`),
      },
    ]);
    expect(await outcomes()).toMatchObject({ retried: 6, failed: 1 });

    await queueEvent(webhook.id, 'd-3');
    clock.now += retryMs;
    await deliverDue();
    expect(receiver.received).toHaveLength(7);
    expect(notices).toHaveLength(1);
  });

  it(`disables a webhook after ${MAX_FAILED_EVENTS} events in a row are refused; a delivery in between resets the count`, async () => {
    const refused = new Set(['d-1', 'd-2', 'd-4', 'd-5', 'd-6', 'd-7', 'd-8']);
    const { receiver, register, queueEvent, deliverDue, deliveriesOf, notices } = await setup({
      respond: (received) => (refused.has(received.deliveryId) ? 410 : 200),
    });
    const webhook = await register();
    for (let i = 1; i <= 9; i++) await queueEvent(webhook.id, `d-${i}`);
    await deliverDue();
    expect(receiver.received.map((entry) => entry.deliveryId)).toEqual([
      'd-1',
      'd-2',
      'd-3',
      'd-4',
      'd-5',
      'd-6',
      'd-7',
      'd-8',
    ]);
    expect((await deliveriesOf(webhook.id))?.disabled_reason).toBe(
      `${MAX_FAILED_EVENTS} events in a row were refused (HTTP 410)`,
    );
    expect(notices).toHaveLength(1);
  });
});

describe('targets at delivery', () => {
  it('refuses a host that resolves to a private address now (DNS rebinding), without connecting', async () => {
    let address = '93.184.216.34';
    const { receiver, register, queueEvent, deliverDue, deliveriesOf } = await setup({
      allowPrivate: false,
      resolve: async () => [{ address, family: 4 }],
    });
    const webhook = await register('/hook', 'https://hooks.example.com:1/hook');
    // The host now answers with the receiver's address, on loopback.
    address = '127.0.0.1';
    await queueEvent(webhook.id, 'd-1');
    await deliverDue();
    expect((await deliveriesOf(webhook.id))?.deliveries[0]).toMatchObject({
      status: 'failed',
      error:
        'refused: hooks.example.com resolves to 127.0.0.1 (loopback address), which webhooks may not reach',
    });
    expect(receiver.connections).toBe(0);
  });

  it('connects to the address it checked, not to one a second lookup would give', async () => {
    const answers = ['127.0.0.1', '10.0.0.1'];
    let lookups = 0;
    const { receiver, register, queueEvent, deliverDue } = await setup({
      resolve: async () => [{ address: answers[Math.min(lookups++, 1)] as string, family: 4 }],
    });
    const webhook = await register('/hook', `http://hooks.example.com:${receiver.port}/hook`);
    lookups = 0;
    await queueEvent(webhook.id, 'd-1');
    await deliverDue();
    expect(receiver.received.map((entry) => entry.deliveryId)).toEqual(['d-1']);
    expect(lookups).toBe(1);
  });
});
