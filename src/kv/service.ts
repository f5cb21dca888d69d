import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Bus } from '../bus/ports.js';
import type { KvChange, KvLimits, KvState, Snowflake } from '../presence/model.js';
import { deltaOf } from '../presence/registry/kv-delta.js';
import type { KvStore } from '../store/ports.js';
import { changeRejection, KV_MAX_KEYS, type KvRejection, limitRejection } from './rules.js';

export type KvWriteOutcome = { ok: true } | { ok: false; rejection: KvRejection };

/** Values of at least this many UTF-16 units make a change large: its steps each take a turn of their own. */
const LARGE_CHANGE_UNITS = 32 * 1024;

/**
 * The one way KV changes: REST and the bot's commands both come through here, so the rules, the store
 * write and the change event are the same whichever way a user writes.
 */
export class KvService {
  private readonly limits: KvLimits;

  constructor(
    private readonly store: KvStore,
    private readonly bus: Bus,
    /** KV_MAX_BYTES: one user's keys and values together, in UTF-8 bytes. */
    maxBytes: number,
    /**
     * Resolves once a presence read here shows `revision`. Alone, the bus delivers before publish
     * resolves; across nodes the presence comes back through Redis, and a write answers only once it
     * is readable, as on one machine.
     */
    private readonly visible?: (userId: Snowflake, revision: number) => Promise<unknown>,
  ) {
    this.limits = { maxKeys: KV_MAX_KEYS, maxBytes };
  }

  read(userId: Snowflake): Promise<KvState> {
    return this.store.getKv(userId);
  }

  /**
   * Validates, writes atomically, then announces the new KV. A rejected change writes nothing; one that
   * changes nothing announces nothing, so there is nothing for a reader to wait for.
   */
  async write(userId: Snowflake, change: KvChange<unknown>): Promise<KvWriteOutcome> {
    const rejection = changeRejection(change);
    if (rejection) return { ok: false, rejection };
    // Checking, storing and re-rendering a large change each cost milliseconds: with a turn between them,
    // other clients are answered in between rather than after all of it.
    const large = isLarge(change as KvChange);
    if (large) await nextTurn();
    const result = await this.store.writeKv(userId, change as KvChange, this.limits);
    if ('refused' in result) return { ok: false, rejection: limitRejection(result, this.limits) };
    if (!result.changed) return { ok: true };
    if (large) await nextTurn();
    await this.bus.publish('kv.changed', {
      userId,
      revision: result.revision,
      ...deltaOf(change as KvChange),
    });
    await this.visible?.(userId, result.revision);
    return { ok: true };
  }

  /**
   * The store erased the user's KV, leaving `revision` (an erasure of everything): announced as a write
   * that leaves no key, and resolved once a presence read here shows it.
   */
  async erased(userId: Snowflake, revision: number, keys: readonly string[]): Promise<void> {
    await this.bus.publish('kv.changed', { userId, revision, whole: true, set: [], delete: [...keys] });
    await this.visible?.(userId, revision);
  }

  set(userId: Snowflake, key: string, value: string): Promise<KvWriteOutcome> {
    return this.write(userId, { set: new Map([[key, value]]), delete: [] });
  }

  delete(userId: Snowflake, key: string): Promise<KvWriteOutcome> {
    return this.write(userId, { set: new Map(), delete: [key] });
  }
}

function isLarge(change: KvChange): boolean {
  let units = 0;
  for (const value of change.set.values()) {
    units += value.length;
    if (units >= LARGE_CHANGE_UNITS) return true;
  }
  return false;
}
