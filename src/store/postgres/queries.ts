import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { StoreUnavailableError } from '../unavailable.js';

/** One statement on any connection of the pool. */
export async function query<R extends QueryResultRow = QueryResultRow>(
  pool: Pool,
  config: QueryConfig,
): Promise<QueryResult<R>> {
  try {
    return await pool.query<R>(config);
  } catch (error) {
    throw unavailableOr(error);
  }
}

/**
 * Runs `work` in one transaction on one connection: committed when `keep` says so of its result (by
 * default always), rolled back otherwise or when it throws.
 */
export async function transaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
  keep: (result: T) => boolean = () => true,
): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw unavailableOr(error);
  }
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
    throw unavailableOr(error);
  } finally {
    client.release(lost);
  }
}

/** Socket errors of a server that is down or unreachable. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
/** What the driver says, without a code, of a connection it could not make or lost. */
const LOST =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * The error as the store's callers should see it: unreachable for a connection that failed, refused, or was
 * ended by the server shutting down (SQLSTATE class 08, 57P01–57P03); as it was otherwise.
 */
function unavailableOr(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (UNREACHABLE.has(code) || code.startsWith('08') || /^57P0[123]$/.test(code))
  ) {
    return new StoreUnavailableError(error);
  }
  return LOST.test(error.message) ? new StoreUnavailableError(error) : error;
}
