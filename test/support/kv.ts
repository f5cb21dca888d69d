import { DEFAULT_KV_MAX_BYTES, KV_MAX_KEYS } from '../../src/kv/rules.js';
import type { KvLimits } from '../../src/presence/model.js';

/** The limits the service writes with by default, for tests that write to a store directly. */
export const KV_LIMITS: KvLimits = { maxKeys: KV_MAX_KEYS, maxBytes: DEFAULT_KV_MAX_BYTES };
