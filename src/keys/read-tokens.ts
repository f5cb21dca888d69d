import type { Logger } from 'pino';
import type { Bus } from '../bus/ports.js';
import type { Snowflake } from '../presence/model.js';
import type { ReadTokenListing, ReadTokenStore } from '../store/ports.js';
import {
  generateReadToken,
  generateReadTokenId,
  hashReadToken,
  isReadTokenShape,
  READ_TOKENS_PER_USER,
  sameReadTokenHash,
} from './read-token.js';

/** A token just made: the only time the token itself is told. */
export interface CreatedReadToken {
  id: string;
  token: string;
  label: string | null;
  createdAt: number;
}

/**
 * Issues, lists, removes and checks read tokens. A token is looked up in the store every time it is
 * presented, never remembered here: one removed on any node stops working on every node with the next
 * request. Streams opened with it are ended through the bus (`read-tokens.revoked`).
 */
export class ReadTokenService {
  constructor(
    private readonly store: ReadTokenStore,
    private readonly bus: Pick<Bus, 'publish'>,
    private readonly logger: Pick<Logger, 'warn'>,
    readonly maxPerUser: number = READ_TOKENS_PER_USER,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new token for the user; null when they hold `maxPerUser` already. */
  async create(userId: Snowflake, label: string | null): Promise<CreatedReadToken | null> {
    const token = generateReadToken();
    const made = { id: generateReadTokenId(), label, createdAt: this.now() };
    const added = await this.store.addReadToken(
      { ...made, userId, hash: hashReadToken(token) },
      this.maxPerUser,
    );
    return added ? { ...made, token } : null;
  }

  list(userId: Snowflake): Promise<ReadTokenListing[]> {
    return this.store.readTokensOf(userId);
  }

  /** Removes the user's token of this id; false when they have none of it. */
  async revoke(userId: Snowflake, id: string): Promise<boolean> {
    if (!(await this.store.removeReadToken(userId, id))) return false;
    // The token is refused from now on whatever the bus does: only open streams wait for the news.
    await this.bus.publish('read-tokens.revoked', { userId, tokenId: id }).catch((error: unknown) => {
      this.logger.warn({ err: error, userId }, 'could not announce a removed read token');
    });
    return true;
  }

  /** Whose the token is, and its id; undefined for anything that is not a live token. */
  async ownerOf(token: string): Promise<{ userId: Snowflake; id: string } | undefined> {
    if (!isReadTokenShape(token)) return undefined;
    const hash = hashReadToken(token);
    const found = await this.store.findReadToken(hash);
    // The lookup is by hash; the final comparison is constant-time all the same.
    return found && sameReadTokenHash(found.hash, hash) ? { userId: found.userId, id: found.id } : undefined;
  }
}
