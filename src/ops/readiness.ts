/** How long the store may take to answer a readiness ping before it counts as unreachable. */
export const STORE_PING_TIMEOUT_MS = 1_000;

/** One condition for taking traffic; `problem` is what `/v1/ready` says when it does not hold. */
export interface ReadinessCheck {
  name: string;
  problem: string;
  check(): boolean | Promise<boolean>;
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, 'ok' | 'failed'>;
  /** The problems of the failed checks, in order. */
  problems: string[];
}

/** Runs every check at once; a check that throws has failed. */
export async function checkReadiness(checks: readonly ReadinessCheck[]): Promise<ReadinessReport> {
  const results = await Promise.all(
    checks.map(async (entry) => {
      try {
        return await entry.check();
      } catch {
        return false;
      }
    }),
  );
  const report: ReadinessReport = { ready: true, checks: {}, problems: [] };
  checks.forEach((entry, index) => {
    const ok = results[index] === true;
    report.checks[entry.name] = ok ? 'ok' : 'failed';
    if (!ok) {
      report.ready = false;
      report.problems.push(`${entry.name}: ${entry.problem}`);
    }
  });
  return report;
}

/** The store answers a trivial query (SQLite) or PING (Redis) within STORE_PING_TIMEOUT_MS. */
export function storeCheck(store: { ping(): Promise<boolean> }): ReadinessCheck {
  return {
    name: 'store',
    problem: `the store did not answer within ${STORE_PING_TIMEOUT_MS} ms`,
    check: () => withTimeout(store.ping(), STORE_PING_TIMEOUT_MS),
  };
}

function withTimeout(answer: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/**
 * Every shard this node runs has a live Discord session, and every guild has been listed once since the
 * start. Before that listing, users of large guilds are not known yet and reads would answer 404.
 */
export function gatewayCheck(gateway: { readonly ready: boolean }, listed: () => boolean): ReadinessCheck {
  return {
    name: 'gateway',
    problem: 'not every shard has a live Discord session, or the first member listing is not done',
    check: () => gateway.ready && listed(),
  };
}

/** An API node serves its replica: it must hold every shared presence. */
export function replicaCheck(replica: { readonly synced: boolean }): ReadinessCheck {
  return {
    name: 'replica',
    problem: 'the shared presences have not been read from Redis since it was last reached',
    check: () => replica.synced,
  };
}
