import type { ApiKeyService } from '../keys/service.js';
import type { KvService } from '../kv/service.js';
import type { Kv, Snowflake } from '../presence/model.js';

/** What the demo's featured user keeps in KV from the start, so the KV routes have something to show. */
export const DEMO_KV: Readonly<Kv> = {
  location: 'Lisbon, Portugal',
  mood: 'curious',
  website: 'https://nova.example',
};

export interface DemoAccount {
  userId: Snowflake;
  /** A live API key of the user's, new at every start and stored hashed like any other. */
  apiKey: string;
}

/**
 * Hands the demo user a new API key (the one of the previous start stops working) and writes the demo KV
 * entries the user lacks; entries a visitor changed keep their values.
 */
export async function prepareDemoAccount(
  userId: Snowflake,
  services: { keys: ApiKeyService; kv: KvService },
): Promise<DemoAccount> {
  const handover = await services.keys.handOver(userId, async (key) => ({ accepted: true, key }));
  if ('error' in handover) throw handover.error;
  const { kv } = await services.kv.read(userId);
  const missing = Object.entries(DEMO_KV).filter(([key]) => !Object.hasOwn(kv, key));
  if (missing.length > 0) {
    const written = await services.kv.write(userId, { set: new Map(missing), delete: [] });
    if (!written.ok) throw new Error(`the demo KV was refused: ${written.rejection.message}`);
  }
  return { userId, apiKey: handover.sent.key };
}
