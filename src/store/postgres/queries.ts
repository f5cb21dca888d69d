import type { Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { StoreUnavailableError } from '../unavailable.js';

/** How long the store waits on the server, in ms. */
export interface PostgresTimeouts {
  /** For a connection: a free one of the pool's, or a new one made (connected and logged in). */
  connectMs: number;
  /** A statement of a request (KV, keys, profiles, reads): the server cancels it past this. */
  statementMs: number;
  /**
   * A statement of a history batch, an erasure, or a node's saved gateway state: a batch written after an
   * outage carries all that waited (up to HISTORY_PENDING_MAX writes), an erasure waits for the batches in
   * flight, and a gateway state carries tens of MB.
   */
  batchMs: number;
  /**
   * How much longer than the server's own limit the client waits for an answer: past it the server is
   * taken for hung (it holds the connection and answers nothing) and the connection is dropped.
   */
  answerMarginMs: number;
}

export const POSTGRES_TIMEOUTS: PostgresTimeouts = {
  connectMs: 2_000,
  statementMs: 2_000,
  batchMs: 15_000,
  answerMarginMs: 1_000,
};

/** What runs statements: the pool (each on any of its connections), or one transaction's connection. */
export interface Session {
  query<R extends QueryResultRow = QueryResultRow>(config: QueryConfig): Promise<QueryResult<R>>;
}

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

export interface TransactionOptions<T> {
  /** Whether to commit what `work` did, by its result: by default always. */
  keep?(result: T): boolean;
  /**
   * The statements' time limit, when it is not the pool's: the server's (`SET LOCAL statement_timeout`),
   * and the client's wait for each answer, `answerMarginMs` longer.
   */
  timeout?: Pick<PostgresTimeouts, 'statementMs' | 'answerMarginMs'>;
}

/**
 * Runs `work` in one transaction on one connection: committed when `keep` says so of its result, rolled
 * back otherwise or when it throws.
 */
export async function transaction<T>(
  pool: Pool,
  work: (session: Session) => Promise<T>,
  options: TransactionOptions<T> = {},
): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw unavailableOr(error);
  }
  const { timeout } = options;
  const session: Session = timeout
    ? {
        // pg takes a query's own read timeout at run time; its types do not list it.
        query: (config) =>
          client.query({
            ...config,
            query_timeout: timeout.statementMs + timeout.answerMarginMs,
          } as QueryConfig),
      }
    : client;
  let lost: Error | undefined;
  // The connection dropped between two statements: the client says so as an event, which unheard would
  // end the process; the next statement fails on its own.
  const dropped = (error: Error) => {
    lost = error;
  };
  client.on('error', dropped);
  try {
    await client.query(
      timeout ? `BEGIN; SET LOCAL statement_timeout = ${Math.round(timeout.statementMs)}` : 'BEGIN',
    );
    const result = await work(session);
    await client.query((options.keep?.(result) ?? true) ? 'COMMIT' : 'ROLLBACK');
    return result;
  } catch (error) {
    // A server that did not answer in time would not answer a rollback either: the connection goes.
    if (isUnanswered(error)) lost = error;
    else if (lost === undefined) {
      // A connection that cannot even roll back is gone: dropped, not handed to the next caller.
      await client.query('ROLLBACK').catch((failed: Error) => {
        lost = failed;
      });
    }
    throw unavailableOr(error);
  } finally {
    client.off('error', dropped);
    client.release(lost);
  }
}

/** The client gave up waiting for the server's answer (the pool's `query_timeout`, or a query's own). */
function isUnanswered(error: unknown): error is Error {
  return error instanceof Error && error.message === 'Query read timeout';
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
/** What the driver says, without a code, of a connection it could not make, lost, or stopped waiting on. */
const LOST =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout)/;

/**
 * The error as the store's callers should see it: unreachable for a connection that failed, refused, was
 * ended by the server shutting down (SQLSTATE class 08, 57P01–57P03), or whose server took longer than
 * the time limit (57014, the server's statement_timeout; or no answer at all); as it was otherwise.
 */
function unavailableOr(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (UNREACHABLE.has(code) || code.startsWith('08') || /^57(014|P0[123])$/.test(code))
  ) {
    return new StoreUnavailableError(error);
  }
  return LOST.test(error.message) ? new StoreUnavailableError(error) : error;
}
