import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** A checkout of an earlier version whose service a scenario measures beside this one's, in the same run. */
export interface PreviousTree {
  dir: string;
  version: string;
}

/**
 * `BENCH_PREVIOUS=<dir>`: a checkout of the previous release (`git worktree add <dir> <tag>` with its
 * node_modules), so rest-read and fanout tell what this version's changes cost against it on the same
 * machine at the same moment; unset, they measure no such side.
 */
export function previousTree(): PreviousTree | null {
  const dir = process.env.BENCH_PREVIOUS;
  if (dir === undefined || dir === '') return null;
  const absolute = resolve(dir);
  const { version } = JSON.parse(readFileSync(join(absolute, 'package.json'), 'utf8')) as { version: string };
  return { dir: absolute, version };
}
