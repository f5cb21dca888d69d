import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface WrkLoad {
  connections: number;
  threads: number;
  seconds: number;
}

export interface WrkResult {
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx/3xx answers plus socket errors: a run with errors measured something else. */
  errors: number;
  /** What the errors were, for the message of a run that had any: "non-2xx 0, connect 0, read 0, …". */
  errorKinds: string;
}

/**
 * How long wrk waits for an answer before counting an error. Its default, 2 s, counted as errors the few
 * answers held up by a full collection of a multi-gigabyte heap on a busy machine; a slow answer belongs in
 * the latency figures, and a lost one still shows as an error.
 */
const TIMEOUT = '10s';

/**
 * wrk (C, its own process) makes the HTTP load, so the load costs the machine as little as it can.
 * `script`: a wrk Lua script (e.g. one that varies the path of each request).
 */
export async function wrk(url: string, load: WrkLoad, script?: string): Promise<WrkResult> {
  const args = ['-t', String(load.threads), '-c', String(load.connections), '-d', `${load.seconds}s`];
  args.push('--timeout', TIMEOUT);
  if (script !== undefined) args.push('-s', script);
  try {
    const { stdout } = await run('wrk', [...args, '--latency', url], { maxBuffer: 1 << 20 });
    return parseWrk(stdout);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(
        'wrk is not installed: `apt-get install wrk` (Debian, Ubuntu), then run the bench again',
      );
    }
    throw error;
  }
}

/** Reads wrk's `--latency` report. */
export function parseWrk(output: string): WrkResult {
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m)/.exec(output);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(output);
  if (!total || !rps) throw new Error(`could not read wrk's report:\n${output}`);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const [connect = 0, read = 0, write = 0, timeout = 0] = socket?.slice(1).map(Number) ?? [];
  return {
    requests: Number(total[1]),
    seconds: toMs(Number(total[2]), total[3] as string) / 1000,
    requestsPerSecond: Number(rps[1]),
    p50Ms: latencyMs(output, '50%'),
    p99Ms: latencyMs(output, '99%'),
    errors: non2xx + connect + read + write + timeout,
    errorKinds: `non-2xx ${non2xx}, connect ${connect}, read ${read}, write ${write}, timeout ${timeout}`,
  };
}

function latencyMs(output: string, quantile: string): number {
  const match = new RegExp(`^\\s+${quantile}\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(output);
  return match ? toMs(Number(match[1]), match[2] as string) : Number.NaN;
}

function toMs(value: number, unit: string): number {
  const factor: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };
  return value * (factor[unit] ?? Number.NaN);
}
