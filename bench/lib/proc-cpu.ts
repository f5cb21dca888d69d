import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/**
 * The CPU (user + system) a process of this machine has used, in µs, as /proc/<pid>/stat counts it: for
 * processes the bench did not start as its own children (servers, nodes started by a test helper).
 */
export async function processCpuMicros(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // utime and stime, the 14th and 15th fields; the 2nd (the command) may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1e6;
}
