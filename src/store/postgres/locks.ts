/**
 * The advisory locks the store takes, as (class, object) pairs: the class is "prsn" in ASCII, so that
 * other applications' locks in the same database are unlikely to meet ours.
 */
const CLASS = 0x7072736e;

export const ADVISORY_LOCKS = {
  /** Held by the node migrating the schema. */
  migrations: [CLASS, 1],
  /**
   * History batches hold it shared, an erasure exclusively: an erasure waits for the batches in flight
   * and the batches after it see the moment it recorded (see forgotten.ts).
   */
  history: [CLASS, 2],
} as const satisfies Record<string, readonly [number, number]>;
