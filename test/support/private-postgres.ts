import { execFile } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './node-process.js';

const run = promisify(execFile);

/** A PostgreSQL server of a test's own, which it may crash and start again. */
export interface PrivatePostgres {
  /** Its `postgres` database, as the superuser. */
  readonly url: string;
  /**
   * An immediate shutdown, as a crash looks to the server (no checkpoint: the next start recovers from
   * the WAL) and to its clients (every connection dropped, new ones refused), then a start.
   */
  restart(): Promise<void>;
  /** Stops it and removes its data. */
  remove(): Promise<void>;
}

/** Where initdb and pg_ctl are: on the PATH, or in Debian's /usr/lib/postgresql/<version>/bin. */
function binaries(): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return null;
  const versions = readdirSync(debian)
    .filter((version) => existsSync(join(debian, version, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? null : join(debian, versions[0], 'bin');
}

/**
 * Whether a server of a test's own can be run here: initdb and pg_ctl found, and, as root (PostgreSQL
 * refuses to run as root), a `postgres` user to run them as. Without, the test is skipped with a notice,
 * unless REQUIRE_POSTGRES=1, where it fails instead.
 */
export async function privatePostgresAvailable(suite: string): Promise<boolean> {
  let problem: string | null = null;
  if (binaries() === null) problem = 'no initdb and pg_ctl found';
  else if (userInfo().uid === 0 && (await postgresUid()) === null)
    problem = 'running as root without a postgres user';
  if (problem === null) return true;
  if (process.env.REQUIRE_POSTGRES === '1') {
    throw new Error(
      `${suite}: REQUIRE_POSTGRES=1 but a PostgreSQL server of its own cannot be run here: ${problem}`,
    );
  }
  console.warn(`\n[skipped] ${suite}: cannot run a PostgreSQL server of its own (${problem}).\n`);
  return false;
}

async function postgresUid(): Promise<number | null> {
  try {
    return Number((await run('id', ['-u', 'postgres'])).stdout.trim());
  } catch {
    return null;
  }
}

/**
 * Makes a cluster in a temporary directory (initdb) and starts it on a free port of loopback, with the
 * durability settings of a default install (fsync, synchronous_commit on); as root, as the `postgres` user.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binaries();
  if (bin === null) throw new Error('no initdb and pg_ctl found');
  const uid = userInfo().uid === 0 ? await postgresUid() : null;
  const dir = mkdtempSync(join(tmpdir(), 'presently-pg-'));
  const data = join(dir, 'data');
  const as = async (command: string, args: string[]) => {
    const path = join(bin, command);
    await (uid === null ? run(path, args) : run('runuser', ['-u', 'postgres', '--', path, ...args]));
  };
  const pgCtl = (...args: string[]) => as('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', ...args]);
  try {
    if (uid !== null) chownSync(dir, uid, -1);
    await as('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
    const port = await freePort();
    appendFileSync(
      join(data, 'postgresql.conf'),
      `\nport = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\n`,
    );
    await pgCtl('start');
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      restart: () => pgCtl('-m', 'immediate', 'restart').then(() => undefined),
      remove: async () => {
        await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await pgCtl('-m', 'immediate', 'stop').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
