import type { Logger } from 'pino';
import type { Bus } from '../bus/ports.js';
import type { KvService } from '../kv/service.js';
import type { Snowflake } from '../presence/model.js';
import type { PrivacyService } from '../privacy/service.js';
import type { AccountStore, Erasure } from '../store/ports.js';
import type { WebhookService } from '../webhooks/service.js';

export interface AccountServiceOptions {
  store: AccountStore;
  bus: Bus;
  kv: Pick<KvService, 'erased'>;
  webhooks: Pick<WebhookService, 'erased'>;
  privacy: Pick<PrivacyService, 'erased'>;
  logger: Logger;
  now?: () => number;
}

/**
 * Erasing everything kept about a user (`DELETE /v1/users/@me`, `?forget all confirm`): the store erases it
 * in one go, then every node drops what it holds of the user, so that neither a node nor a restart shows
 * or writes any of it again. Their presence itself is live, not kept: while they share a server with the
 * bot it is still shown, as a user's with no KV and no settings.
 */
export class AccountService {
  private readonly now: () => number;

  constructor(private readonly options: AccountServiceOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Resolves once the store has erased everything and this node shows it; the other nodes hear it on the
   * bus. A node that misses the news catches up when it hears the bus again (the directories and the KV
   * are read again), and the store already refuses the history it may still hold.
   */
  async erase(userId: Snowflake): Promise<Erasure> {
    const { store, bus, kv, webhooks, privacy } = this.options;
    const at = this.now();
    const erased = await store.erase(userId, at);
    // In this order: the webhooks are gone before the KV's erasure could be queued for them, and the KV is
    // gone before the default settings show a presence its owner hid.
    if (erased.webhookIds.length > 0) {
      await this.announce(userId, 'webhooks', () => webhooks.erased(userId, erased.webhookIds));
    }
    if (erased.kvKeys.length > 0) {
      await this.announce(userId, 'KV', () => kv.erased(userId, erased.kvRevision, erased.kvKeys));
    }
    // Settings or none: every node renders the user again, and lets go of what it sent of them before.
    await this.announce(userId, 'privacy settings', () => privacy.erased(userId));
    await this.announce(userId, 'history', () => bus.publish('history.forgotten', { userId, at }));
    if (erased.readTokens > 0) {
      await this.announce(userId, 'read tokens', () =>
        bus.publish('read-tokens.revoked', { userId, tokenId: null }),
      );
    }
    return erased;
  }

  private async announce(userId: Snowflake, what: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      this.options.logger.warn({ err: error, userId }, `could not announce the erasure of a user's ${what}`);
    }
  }
}
