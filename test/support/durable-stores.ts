import { createTestDatabase, postgresAvailable } from './postgres.js';
import { redisAvailable } from './redis.js';

/**
 * Where scale-out nodes keep what lasts: in Redis, beside what is live, or in PostgreSQL (Redis then keeps
 * only what is live). The scale-out suites run on each.
 */
export interface DurableStore {
  /** As the suite's name says it. */
  name: string;
  /** Whether the suite can run on it here (the notice of a skip is given by the probe). */
  available: boolean;
  /** What lasts is kept in Redis itself. */
  inRedis: boolean;
  /** The variables every node adds for it, and how to drop what it kept afterwards. */
  open(): Promise<{ env: Record<string, string>; drop(): Promise<void> }>;
}

export async function durableStores(suite: string): Promise<DurableStore[]> {
  const hasRedis = await redisAvailable(suite);
  const hasPostgres = hasRedis && (await postgresAvailable(`${suite} on PostgreSQL`));
  return [
    {
      name: 'one Redis',
      available: hasRedis,
      inRedis: true,
      open: async () => ({ env: {}, drop: async () => {} }),
    },
    {
      name: 'Redis and PostgreSQL',
      available: hasPostgres,
      inRedis: false,
      open: async () => {
        const database = await createTestDatabase();
        return { env: { DATABASE_URL: await database.schema() }, drop: () => database.drop() };
      },
    },
  ];
}
