import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

/** wrk from Debian's packages: the load comes from its own process, in C, so it costs the server little. */
export async function wrk(
  url: string,
  options: { connections: number; threads: number; seconds: number },
): Promise<WrkResult> {
  let stdout: string;
  try {
    ({ stdout } = await run(
      'wrk',
      [
        '-t',
        String(options.threads),
        '-c',
        String(options.connections),
        '-d',
        `${options.seconds}s`,
        '--latency',
        url,
      ],
      { maxBuffer: 1 << 20 },
    ));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error('wrk is not installed: `apt-get install wrk` (Debian) and run the benchmark again');
    }
    throw error;
  }
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1];
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1];
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  return {
    requestsPerSecond: Number(rps),
    p50Ms: latencyMs(stdout, '50%'),
    p99Ms: latencyMs(stdout, '99%'),
    errors:
      Number(errors ?? 0) + (socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0),
  };
}

function latencyMs(output: string, quantile: string): number {
  const match = new RegExp(`^\\s+${quantile}\\s+([\\d.]+)(us|ms|s)`, 'm').exec(output);
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
}
