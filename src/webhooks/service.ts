import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Bus } from '../bus/ports.js';
import type { CreatedWebhook, StoredWebhook, WebhookView } from '../model/webhook.js';
import type { Snowflake } from '../presence/model.js';
import type { WebhookStore } from '../store/ports.js';
import type { WebhookQueue } from '../store/webhook-queue.js';
import type { WebhookDirectory } from './directory.js';
import { DELIVERIES_KEPT, parseWebhookRequest, type WebhookRejection } from './rules.js';
import { DELIVERY_TIMEOUT_MS } from './sender.js';
import { generateSecret } from './signer.js';
import { hostOf, parseTargetUrl, resolveTarget, type TargetPolicy, TargetRefused } from './target.js';

/** A webhook's id: `wh_` and 16 base64url characters (96 random bits). */
export const WEBHOOK_ID_PATTERN = /^wh_[A-Za-z0-9_-]{16}$/;

export type CreateOutcome =
  | { ok: true; webhook: CreatedWebhook }
  | { ok: false; rejection: WebhookRejection };
export type RemoveOutcome = 'removed' | 'not_found' | 'not_yours';

export interface WebhookServiceOptions {
  store: WebhookStore;
  queue: WebhookQueue;
  directory: WebhookDirectory;
  bus: Bus;
  policy: TargetPolicy;
  /** WEBHOOKS_PER_USER. */
  maxPerUser: number;
  /** Tells the owner of a disabled webhook, by DM. */
  notify(userId: Snowflake, content: string): Promise<void>;
  /** The bot's command prefix, which the notice names. */
  commandPrefix: string;
  logger: Logger;
  now?: () => number;
}

/**
 * The one way webhooks change: the REST routes, the bot's command and the delivery worker all come
 * through here, so the rules, the store, the queue and every node's directory stay in step.
 */
export class WebhookService {
  private readonly now: () => number;

  constructor(private readonly options: WebhookServiceOptions) {
    this.now = options.now ?? Date.now;
  }

  get maxPerUser(): number {
    return this.options.maxPerUser;
  }

  /**
   * Adds a webhook from a request's body: its shape, its URL, the user's count and every address its host
   * resolves to are checked first; the secret is in the answer and nowhere else the user can read it.
   */
  async create(userId: Snowflake, body: unknown): Promise<CreateOutcome> {
    const { store, policy, maxPerUser } = this.options;
    const request = parseWebhookRequest(body);
    if ('code' in request) return { ok: false, rejection: request };
    const target = parseTargetUrl(request.url, policy.allowPrivate);
    if ('refusal' in target) return refuse('invalid_webhook_url', target.refusal);
    // Counted before the lookup, which may take seconds; the store counts again as it adds.
    const existing = await store.webhooksOf(userId);
    if (existing.length >= maxPerUser) return this.overLimit();
    const host = hostOf(target.url);
    try {
      await withTimeout(resolveTarget(host, policy), DELIVERY_TIMEOUT_MS);
    } catch (error) {
      const why = error instanceof TargetRefused ? error.message : `${host} does not resolve`;
      return refuse('invalid_webhook_url', why);
    }
    const webhook: StoredWebhook = {
      id: `wh_${randomBytes(12).toString('base64url')}`,
      userId,
      url: target.url.href,
      events: request.events,
      secret: generateSecret(),
      // The list is oldest first: one made in the same millisecond as another must still sort after it.
      createdAt: Math.max(this.now(), ...existing.map((other) => other.createdAt + 1)),
      disabledAt: null,
      disabledReason: null,
    };
    if (!(await store.addWebhook(webhook, maxPerUser))) return this.overLimit();
    await this.changed(userId);
    const { id, url, events, secret, createdAt } = webhook;
    return { ok: true, webhook: { id, url, events, secret, created_at: createdAt } };
  }

  /** The user's webhooks, oldest first, each with its latest deliveries; never a secret. */
  async list(userId: Snowflake): Promise<WebhookView[]> {
    const { store } = this.options;
    const webhooks = await store.webhooksOf(userId);
    return Promise.all(
      webhooks.map(async (webhook) => ({
        id: webhook.id,
        url: webhook.url,
        events: webhook.events,
        created_at: webhook.createdAt,
        disabled_at: webhook.disabledAt,
        disabled_reason: webhook.disabledReason,
        deliveries: await store.deliveries(webhook.id, DELIVERIES_KEPT),
      })),
    );
  }

  /** Removes one of the user's webhooks, and whatever waits for it. */
  async remove(userId: Snowflake, id: string): Promise<RemoveOutcome> {
    const { store, queue } = this.options;
    const webhook = WEBHOOK_ID_PATTERN.test(id) ? await store.webhook(id) : undefined;
    if (!webhook) return 'not_found';
    if (webhook.userId !== userId) return 'not_yours';
    await store.removeWebhook(id);
    await queue.drop(id);
    await this.changed(userId);
    return 'removed';
  }

  /**
   * The store erased these webhooks of the user (an erasure of everything): what waits for them in a queue
   * kept elsewhere (Redis) goes too, and every node forgets them.
   */
  async erased(userId: Snowflake, webhookIds: readonly string[]): Promise<void> {
    for (const id of webhookIds) await this.options.queue.drop(id);
    await this.changed(userId);
  }

  /** Stops a webhook for good and tells its owner, once, whichever node got there first. */
  async disable(webhook: StoredWebhook, reason: string): Promise<void> {
    const { store, queue, commandPrefix, logger } = this.options;
    if (!(await store.disableWebhook(webhook.id, this.now(), reason))) return;
    await queue.drop(webhook.id);
    await this.changed(webhook.userId);
    logger.warn({ webhookId: webhook.id, userId: webhook.userId, reason }, 'webhook disabled');
    const content =
      `Your webhook \`${webhook.id}\` to <${webhook.url}> is disabled: ${reason}. Nothing more is sent ` +
      `to it. It stays listed (\`${commandPrefix}webhooks\`) with its last deliveries until you remove it; ` +
      'add it again through the API once the receiver is fixed.';
    await this.options.notify(webhook.userId, content).catch((error: unknown) => {
      logger.warn({ err: error, webhookId: webhook.id }, 'could not tell the owner of a disabled webhook');
    });
  }

  private overLimit(): CreateOutcome {
    const { maxPerUser } = this.options;
    return refuse(
      'webhook_limit_exceeded',
      `a user may have ${maxPerUser} ${maxPerUser === 1 ? 'webhook' : 'webhooks'}: remove one first`,
    );
  }

  /** This node sees the change before the caller is answered; every other node soon after. */
  private async changed(userId: Snowflake): Promise<void> {
    await this.options.directory.refresh(userId);
    await this.options.bus.publish('webhooks.changed', { userId });
  }
}

function refuse(code: WebhookRejection['code'], message: string): CreateOutcome {
  return { ok: false, rejection: { code, message } as WebhookRejection };
}

/** `work`, or a failure once `ms` have passed (a resolver that hangs). */
async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
