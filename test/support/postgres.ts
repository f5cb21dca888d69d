import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The server tests use: this machine's, unless POSTGRES_TEST_URL says otherwise. */
export const POSTGRES_TEST_URL =
  process.env.POSTGRES_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Whether the PostgreSQL tests can run. Without a server they are skipped with a notice, unless
 * REQUIRE_POSTGRES=1 (CI sets it), where a missing server fails the run instead of silently testing less.
 */
export async function postgresAvailable(suite: string): Promise<boolean> {
  const probe = new Client({ connectionString: POSTGRES_TEST_URL, connectionTimeoutMillis: 2_000 });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.query('SELECT 1');
    return true;
  } catch (error) {
    if (process.env.REQUIRE_POSTGRES === '1') {
      throw new Error(
        `${suite}: REQUIRE_POSTGRES=1 but PostgreSQL at ${POSTGRES_TEST_URL} does not answer (${String(error)})`,
      );
    }
    console.warn(`\n[skipped] ${suite}: no PostgreSQL at ${POSTGRES_TEST_URL}.\n`);
    return false;
  } finally {
    await probe.end().catch(() => {});
  }
}

/** A database of one test file's run, dropped after it. */
export interface TestDatabase {
  /** Its URL: the test server's, naming this database. */
  readonly url: string;
  /**
   * The URL of a schema of its own in this database, created now: tests share the database without
   * seeing each other's tables.
   */
  schema(): Promise<string>;
  /** Drops the database, closing whatever is still connected to it. */
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `presently_test_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = withDatabase(name);
  return {
    url,
    schema: async () => {
      const schema = `s_${randomBytes(6).toString('hex')}`;
      const client = new Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE SCHEMA ${schema}`);
      } finally {
        await client.end();
      }
      const scoped = new URL(url);
      scoped.searchParams.set('options', `-c search_path=${schema}`);
      return scoped.toString();
    },
    drop: () => admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
  };
}

/** The test server's URL with another database in it. */
function withDatabase(name: string): string {
  const url = new URL(POSTGRES_TEST_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin(work: (client: Client) => Promise<unknown>): Promise<void> {
  const client = new Client({ connectionString: POSTGRES_TEST_URL });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end();
  }
}
