import type { Snowflake } from '../presence/model.js';
import type { ApiKeyStore } from '../store/ports.js';
import { generateApiKey, hashApiKey, isApiKeyShape, sameKeyHash } from './api-key.js';

/** How handing a new key over ended, with what sending it answered. */
export type KeyHandover<T> =
  /** Sent and stored: the new key is the user's only live key. */
  | { outcome: 'active'; sent: T }
  /** Not sent: nothing was stored, whatever key the user had still works. */
  | { outcome: 'not-sent'; sent: T }
  /** Sent, but storing it failed: the key the user was sent does not work. */
  | { outcome: 'not-stored'; sent: T; error: unknown };

/** Issues and checks API keys. The key itself exists only in the message that hands it over. */
export class ApiKeyService {
  constructor(
    private readonly store: ApiKeyStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A new key for the user, live only once `send` has delivered it: a key that never reached its owner
   * must not have replaced the one they have. Once stored, their previous key stops working in that write.
   */
  async handOver<T extends { accepted: boolean }>(
    userId: Snowflake,
    send: (key: string) => Promise<T>,
  ): Promise<KeyHandover<T>> {
    const key = generateApiKey();
    const sent = await send(key);
    if (!sent.accepted) return { outcome: 'not-sent', sent };
    try {
      await this.store.replaceKey(userId, hashApiKey(key), this.now());
    } catch (error) {
      return { outcome: 'not-stored', sent, error };
    }
    return { outcome: 'active', sent };
  }

  /** Makes a key stop working, whoever owns it; false when it was not live. */
  revoke(key: string): Promise<boolean> {
    return this.store.revokeKey(hashApiKey(key));
  }

  /** The owner of a live key, or undefined. */
  async ownerOf(key: string): Promise<Snowflake | undefined> {
    if (!isApiKeyShape(key)) return undefined;
    const hash = hashApiKey(key);
    const found = await this.store.findKey(hash);
    // The lookup is by hash; the final comparison is constant-time all the same.
    return found && sameKeyHash(found.hash, hash) ? found.userId : undefined;
  }
}
