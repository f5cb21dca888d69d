import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where a running `npm run bench` says who it is. */
export const BENCH_LOCK = new URL('../.running', import.meta.url);

/**
 * Takes the bench's lock for this process, or says which live process holds it. Two runs at once would
 * share the machine's cores, so each would measure the other, and both rewrite RESULTS.json from what they
 * read at the start, so the last to finish would drop the other's rows. A lock left by a process that is
 * gone is taken over. The lock goes when this process exits, or is stopped with SIGINT or SIGTERM.
 */
export function takeBenchLock(path: URL | string = BENCH_LOCK): { held: true } | { held: false; by: number } {
  for (;;) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
      process.once('exit', () => releaseBenchLock(path));
      for (const signal of ['SIGINT', 'SIGTERM'] as const) {
        process.once(signal, () => {
          releaseBenchLock(path);
          process.kill(process.pid, signal);
        });
      }
      return { held: true };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const by = holder(path);
    if (by !== null && by !== process.pid && alive(by)) return { held: false, by };
    // Moved aside and looked at, not removed blindly: of two runs taking over the same stale lock, the
    // second may move the lock the first has just taken, and puts it back.
    const aside = `${typeof path === 'string' ? path : fileURLToPath(path)}.${process.pid}`;
    try {
      renameSync(path, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    const moved = holder(aside);
    if (moved !== null && moved !== by && alive(moved)) renameSync(aside, path);
    else rmSync(aside, { force: true });
  }
}

/** Lets the lock go if this process holds it. */
export function releaseBenchLock(path: URL | string = BENCH_LOCK): void {
  if (holder(path) === process.pid) rmSync(path, { force: true });
}

function holder(path: URL | string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
