import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where Linux's DAMON is configured: https://docs.kernel.org/admin-guide/mm/damon/usage.html */
const DAMON_KDAMONDS = '/sys/kernel/mm/damon/admin/kdamonds';

/** What a figure was measured on: ratios travel between machines, absolute figures do not. */
export function machine(): string {
  const list = cpus();
  const model = list[0]?.model.trim() || 'unknown CPU';
  const memory = `${(totalmem() / 2 ** 30).toFixed(0)} GiB`;
  const reclaim = idleMemoryReclaim();
  return (
    `${model}, ${list.length} cores, ${memory}, Node ${process.version}, ${process.platform}` +
    (reclaim ? `, ${reclaim}` : '')
  );
}

/**
 * Whether the kernel pages out memory it finds idle (a DAMON `pageout` scheme, as a VM's host may run):
 * every sample it pauses a process that holds much idle memory a while, which its latencies then show.
 */
export function idleMemoryReclaim(kdamonds = DAMON_KDAMONDS): string | null {
  const read = (path: string) => readFileSync(path, 'utf8').trim();
  const numbered = (path: string) => readdirSync(path).filter((name) => /^\d+$/.test(name));
  try {
    for (const kdamond of numbered(kdamonds)) {
      if (read(`${kdamonds}/${kdamond}/state`) !== 'on') continue;
      for (const context of numbered(`${kdamonds}/${kdamond}/contexts`)) {
        const at = `${kdamonds}/${kdamond}/contexts/${context}`;
        const schemes = numbered(`${at}/schemes`);
        if (!schemes.some((scheme) => read(`${at}/schemes/${scheme}/action`) === 'pageout')) continue;
        const seconds = Number(read(`${at}/monitoring_attrs/intervals/sample_us`)) / 1e6;
        return `the kernel paging out idle memory (DAMON, sampled every ${seconds} s)`;
      }
    }
  } catch {
    // No DAMON, or not readable: nothing to say.
  }
  return null;
}

/** Busy and total CPU time of the whole machine so far (Linux /proc/stat); undefined elsewhere. */
async function cpuTimes(): Promise<{ busy: number; total: number } | undefined> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    const total = fields.reduce((sum, value) => sum + value, 0);
    // idle and iowait are the 4th and 5th fields.
    return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
  } catch {
    return undefined;
  }
}

/** How busy the machine's CPUs were over the next `ms`, 0–1; undefined where that cannot be read. */
export async function machineBusy(ms = 1_000): Promise<number | undefined> {
  const before = await cpuTimes();
  await sleep(ms);
  const after = await cpuTimes();
  if (!before || !after || after.total === before.total) return undefined;
  return (after.busy - before.busy) / (after.total - before.total);
}

/**
 * Waits (up to `maxMs`) for the machine to be quiet: a benchmark next to a busy neighbour (a test run,
 * another benchmark) measures the neighbour too. Returns how busy it was when the wait ended.
 */
export async function waitForQuiet(threshold = 0.15, maxMs = 60_000): Promise<number | undefined> {
  const deadline = Date.now() + maxMs;
  let busy = await machineBusy();
  while (busy !== undefined && busy > threshold && Date.now() < deadline) busy = await machineBusy();
  return busy;
}
