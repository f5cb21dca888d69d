import type { Pool, PoolClient } from 'pg';

/**
 * Runs `work` in one transaction on one connection: committed when `keep` says so of its result (by
 * default always), rolled back otherwise or when it throws.
 */
export async function transaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
  keep: (result: T) => boolean = () => true,
): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query(keep(result) ? 'COMMIT' : 'ROLLBACK');
    return result;
  } catch (error) {
    // A connection that cannot even roll back is gone: dropped, not handed to the next caller.
    await client.query('ROLLBACK').catch((failed: Error) => {
      lost = failed;
    });
    throw error;
  } finally {
    client.release(lost);
  }
}
