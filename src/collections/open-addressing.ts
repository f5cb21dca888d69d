/** An empty bucket, in a linear-probing table whose entries are an index + 1. */
export const EMPTY = 0;

/**
 * Empties `hole` of such a table by backward shift: each later entry of its run that may sit in the hole
 * moves into it, so a probe never stops early at a gap and no tombstones build up. `homeOf` is an index's
 * home bucket in this table.
 */
export function emptyBucket(table: Int32Array, hole: number, homeOf: (index: number) => number): void {
  const mask = table.length - 1;
  for (let bucket = (hole + 1) & mask; ; bucket = (bucket + 1) & mask) {
    const other = table[bucket] as number;
    if (other === EMPTY) break;
    const home = homeOf(other - 1);
    const outside = hole <= bucket ? home <= hole || home > bucket : home <= hole && home > bucket;
    if (outside) {
      table[hole] = other;
      hole = bucket;
    }
  }
  table[hole] = EMPTY;
}
