import type { Snowflake } from '../presence/model.js';
import type { WindowCount, WindowCounter } from './window-counter.js';

/**
 * KV writes per window (RATE_LIMIT_WRITE a minute), counted apart for each key owner (`user:<id>`) and for
 * each client whose writes were refused for their key or id (`ip:<client>`), so random keys are no way around
 * the limit. In scale-out the counter is Redis's, shared by every API node.
 */
export class WriteBudget {
  constructor(
    /** Writes a window per owner, and refused ones per client. */
    readonly max: number,
    private readonly counter: WindowCounter,
  ) {}

  /** Charges a write of the key owner `owner`. */
  chargeOwner(owner: Snowflake): Promise<WindowCount> {
    return this.counter.charge(`user:${owner}`);
  }

  /** Charges a write refused for its key or id to its client (a clientKey). */
  chargeClient(client: string): Promise<WindowCount> {
    return this.counter.charge(`ip:${client}`);
  }
}
