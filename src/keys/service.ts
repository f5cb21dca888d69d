import type { Snowflake } from '../presence/model.js';
import type { ApiKeyStore } from '../store/ports.js';
import { generateApiKey, hashApiKey, isApiKeyShape, sameKeyHash } from './api-key.js';

/**
 * How long a key being handed over works before it is activated: longer than a message to Discord takes
 * with its retries. A pending key whose handover never ended (the process stopped) stops working then.
 */
export const PENDING_KEY_MS = 10 * 60_000;

/** How handing a new key over ended, with what sending it answered. */
export type KeyHandover<T> =
  /** Stored, sent, and activated: the new key is the user's only live key. */
  | { outcome: 'active'; sent: T }
  /** Not sent: the key stored for it is forgotten, whatever key the user had still works. */
  | { outcome: 'not-sent'; sent: T }
  /** Not stored, so never sent: the user's keys are as they were. */
  | { outcome: 'not-stored'; error: unknown }
  /**
   * Sent, but not activated: whatever key the user had still works, and the one sent stops working within
   * PENDING_KEY_MS, if it works at all.
   */
  | { outcome: 'not-activated'; sent: T; error: unknown };

/** Issues and checks API keys. The key itself exists only in the message that hands it over. */
export class ApiKeyService {
  /**
   * Each user's handover under way, the next waiting behind it: a user holds one pending key at a time,
   * so two handovers side by side (two `?apikey` in a row) would end one another's before it is activated.
   */
  private readonly handovers = new Map<Snowflake, Promise<unknown>>();

  constructor(
    private readonly store: ApiKeyStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A new key for the user. It is stored, pending, before `send` hands it over, so it works by the time its
   * owner can read it, beside their previous key; once sent it becomes their only key, which ends the
   * previous one in that write. A key that never reached its owner must not have replaced the one they
   * have: if the send fails, the pending key is forgotten.
   */
  handOver<T extends { accepted: boolean }>(
    userId: Snowflake,
    send: (key: string) => Promise<T>,
  ): Promise<KeyHandover<T>> {
    const before = this.handovers.get(userId);
    const turn = (before ?? Promise.resolve()).then(
      () => this.handOverNow(userId, send),
      () => this.handOverNow(userId, send),
    );
    this.handovers.set(userId, turn);
    const forget = (): void => {
      if (this.handovers.get(userId) === turn) this.handovers.delete(userId);
    };
    turn.then(forget, forget);
    return turn;
  }

  private async handOverNow<T extends { accepted: boolean }>(
    userId: Snowflake,
    send: (key: string) => Promise<T>,
  ): Promise<KeyHandover<T>> {
    const key = generateApiKey();
    const hash = hashApiKey(key);
    const now = this.now();
    try {
      await this.store.addPendingKey(userId, hash, now, now + PENDING_KEY_MS);
    } catch (error) {
      return { outcome: 'not-stored', error };
    }
    const sent = await send(key).catch(async (error: unknown) => {
      await this.forget(userId, hash);
      throw error;
    });
    if (!sent.accepted) {
      await this.forget(userId, hash);
      return { outcome: 'not-sent', sent };
    }
    try {
      if (await this.store.activateKey(userId, hash, this.now())) return { outcome: 'active', sent };
      return { outcome: 'not-activated', sent, error: new Error('the new key was no longer pending') };
    } catch (error) {
      await this.forget(userId, hash);
      return { outcome: 'not-activated', sent, error };
    }
  }

  /** Makes a key stop working, whoever owns it, live or pending; false when it was neither. */
  revoke(key: string): Promise<boolean> {
    return this.store.revokeKey(hashApiKey(key));
  }

  /** Makes every key of the user stop working, live and pending; how many there were. */
  revokeAll(userId: Snowflake): Promise<number> {
    return this.store.revokeKeysOf(userId);
  }

  /** The owner of a live key, or of one being handed over, or undefined. */
  async ownerOf(key: string): Promise<Snowflake | undefined> {
    if (!isApiKeyShape(key)) return undefined;
    const hash = hashApiKey(key);
    const found = await this.store.findKey(hash, this.now());
    // The lookup is by hash; the final comparison is constant-time all the same.
    return found && sameKeyHash(found.hash, hash) ? found.userId : undefined;
  }

  /** A pending key that could not be forgotten still stops working once it expires. */
  private async forget(userId: Snowflake, hash: Buffer): Promise<void> {
    await this.store.discardPendingKey(userId, hash).catch(() => undefined);
  }
}
