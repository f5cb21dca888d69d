import type { Snowflake } from '../presence/model.js';
import type { ApiKeyStore } from '../store/ports.js';
import { generateApiKey, hashApiKey, isApiKeyShape, sameKeyHash } from './api-key.js';

/** Issues and checks API keys. The key itself exists only in the reply that hands it over. */
export class ApiKeyService {
  constructor(
    private readonly store: ApiKeyStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new key for the user; their previous key stops working in the same write. */
  async issue(userId: Snowflake): Promise<string> {
    const key = generateApiKey();
    await this.store.replaceKey(userId, hashApiKey(key), this.now());
    return key;
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
