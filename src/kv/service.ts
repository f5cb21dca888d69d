import type { Bus } from '../bus/ports.js';
import type { Snowflake } from '../presence/model.js';
import type { KvStore } from '../store/ports.js';
import {
  changeRejection,
  KV_MAX_KEYS,
  type KvChange,
  type KvRejection,
  type KvState,
  limitRejection,
} from './rules.js';

export type KvWriteOutcome = { ok: true; state: KvState } | { ok: false; rejection: KvRejection };

/**
 * The one way KV changes: REST and the bot's commands both come through here, so the rules, the store
 * write and the change event are the same whichever way a user writes.
 */
export class KvService {
  constructor(
    private readonly store: KvStore,
    private readonly bus: Bus,
    /**
     * Resolves once a presence read here shows `revision`. Alone, the bus delivers before publish
     * resolves; across nodes the presence comes back through Redis, and a write answers only once it
     * is readable, as on one machine.
     */
    private readonly visible?: (userId: Snowflake, state: KvState) => Promise<unknown>,
  ) {}

  read(userId: Snowflake): Promise<KvState> {
    return this.store.getKv(userId);
  }

  /** Validates, writes atomically, then announces the new KV. A rejected change writes nothing. */
  async write(userId: Snowflake, change: KvChange): Promise<KvWriteOutcome> {
    const rejection = changeRejection(change);
    if (rejection) return { ok: false, rejection };
    const result = await this.store.writeKv(userId, change, KV_MAX_KEYS);
    if ('refused' in result) return { ok: false, rejection: limitRejection(result.wouldHave) };
    await this.bus.publish('kv.changed', { userId, kv: result.kv, revision: result.revision });
    await this.visible?.(userId, result);
    return { ok: true, state: result };
  }

  set(userId: Snowflake, key: string, value: string): Promise<KvWriteOutcome> {
    return this.write(userId, { set: new Map([[key, value]]), delete: [] });
  }

  delete(userId: Snowflake, key: string): Promise<KvWriteOutcome> {
    return this.write(userId, { set: new Map(), delete: [key] });
  }
}
