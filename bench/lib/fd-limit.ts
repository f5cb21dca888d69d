import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** A process's open-file limit (soft, hard) as /proc/<pid>/limits states it ("unlimited" as Infinity). */
export function fileLimit(pid: number): { soft: number; hard: number } {
  const limits = readFileSync(`/proc/${pid}/limits`, 'utf8');
  const match = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limits);
  if (!match) throw new Error(`no open-file limit in /proc/${pid}/limits`);
  const value = (text: string) => (text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text));
  return { soft: value(match[1] as string), hard: value(match[2] as string) };
}

/**
 * Raises a running process's open-file limit to `wanted` with `prlimit --pid` (util-linux), so a bench
 * process can hold more sockets than the shell's `ulimit -n` without a manual step. Raising the hard limit
 * needs CAP_SYS_RESOURCE; without it the soft limit is raised as far as the hard one allows. Returns the
 * soft limit the process has afterwards, and why it is short of `wanted` when it is.
 */
export function raiseFileLimit(pid: number, wanted: number): { limit: number; shortBecause?: string } {
  const { soft, hard } = fileLimit(pid);
  if (soft >= wanted) return { limit: soft };
  let shortBecause: string | undefined;
  try {
    execFileSync('prlimit', ['--pid', String(pid), `--nofile=${wanted}:${wanted}`], { stdio: 'pipe' });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    shortBecause = `prlimit --nofile=${wanted}:${wanted} failed (${stderr || (error as Error).message})`;
    if (soft < hard) {
      execFileSync('prlimit', ['--pid', String(pid), `--nofile=${Math.min(hard, wanted)}:`], {
        stdio: 'pipe',
      });
    }
  }
  const limit = fileLimit(pid).soft;
  return limit >= wanted ? { limit } : { limit, shortBecause: shortBecause ?? 'unknown' };
}

/** How many file descriptors a process has open now. */
export function openFiles(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
