import { readFile } from 'node:fs/promises';

/** The resident memory of a process of this machine, in bytes, as /proc/<pid>/status counts it. */
export async function processRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib) * 1024;
}

/**
 * Reads a process's resident memory every `everyMs` from outside it, so the process does no work for the
 * measure: `stop` resolves with the highest reading.
 */
export function sampleRss(pid: number, everyMs: number): { stop(): Promise<number> } {
  let peak = 0;
  let reading: Promise<void> = Promise.resolve();
  const read = (): void => {
    reading = processRssBytes(pid).then(
      (bytes) => {
        peak = Math.max(peak, bytes);
      },
      () => undefined,
    );
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await reading;
      read();
      await reading;
      return peak;
    },
  };
}
