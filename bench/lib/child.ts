import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

/** A message between the driver and a bench process (IPC). */
export interface Message {
  type: string;
  [key: string]: unknown;
}

export interface CpuUsage extends Message {
  type: 'cpu';
  /** Microseconds of CPU (user + system) the process has used so far. */
  micros: number;
}

export interface LoopDelay extends Message {
  type: 'loop-delay';
  /** How late the process's event loop ran its timers past their time, in ms: the 99th percentile and the worst. */
  p99Ms: number;
  maxMs: number;
}

export interface BenchChild {
  readonly name: string;
  readonly process: ChildProcess;
  send(message: Message): void;
  /** The next message of this type; messages of other types wait for their own callers. */
  next<T extends Message>(type: string, timeoutMs?: number): Promise<T>;
  /** The CPU the process has used so far: the difference over a measurement is its cost. */
  cpuMicros(): Promise<number>;
  /**
   * How late its event loop ran since the last call (NaN on the first, which starts the measuring): a
   * process stalled by its own work, or starved of CPU, shows here.
   */
  loopDelay(): Promise<LoopDelay>;
  /** SIGTERM (each process exits cleanly on it, so a profile gets written) and wait for the exit. */
  stop(): Promise<void>;
}

const PROCESSES = fileURLToPath(new URL('../processes/', import.meta.url));

/**
 * Runs bench/processes/<script>.ts in a Node process of its own, so what is measured never shares a heap
 * or an event loop with the driver or with its load. `BENCH_CPU_PROF=<dir>` profiles every process
 * (`--cpu-prof`), one folder per script. `nodeFlags` go to node (e.g. `--expose-gc`). `tree`: another
 * checkout of the project whose script is run instead (`BENCH_PREVIOUS`, previous.ts).
 */
export function startChild(
  script: string,
  args: readonly string[] = [],
  env: Record<string, string> = {},
  nodeFlags: readonly string[] = [],
  tree?: string,
): BenchChild {
  const execArgv = ['--import', 'tsx', ...nodeFlags];
  const profileDir = process.env.BENCH_CPU_PROF;
  if (profileDir) execArgv.push('--cpu-prof', `--cpu-prof-dir=${join(profileDir, script)}`);
  const child = fork(
    join(tree === undefined ? PROCESSES : join(tree, 'bench', 'processes'), `${script}.ts`),
    [...args],
    {
      execArgv,
      ...(tree === undefined ? {} : { cwd: tree }),
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const queue: Message[] = [];
  const waiters: Array<{ type: string; resolve: (message: Message) => void }> = [];
  child.on('message', (message: Message) => {
    const index = waiters.findIndex((waiter) => waiter.type === message.type);
    if (index >= 0) waiters.splice(index, 1)[0]?.resolve(message);
    else queue.push(message);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;

  const next = <T extends Message>(type: string, timeoutMs = 120_000): Promise<T> => {
    const index = queue.findIndex((message) => message.type === type);
    if (index >= 0) return Promise.resolve(queue.splice(index, 1)[0] as T);
    return new Promise<T>((resolve, reject) => {
      const failed = (error: Error) => {
        clearTimeout(timer);
        child.off('exit', onExit);
        const at = waiters.indexOf(waiter);
        if (at >= 0) waiters.splice(at, 1);
        reject(error);
      };
      const onExit = () => failed(new Error(`${script} exited while the driver waited for "${type}"`));
      const timer = setTimeout(
        () => failed(new Error(`${script}: no "${type}" within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const waiter = {
        type,
        resolve: (message: Message) => {
          clearTimeout(timer);
          child.off('exit', onExit);
          resolve(message as T);
        },
      };
      if (!running()) onExit();
      else {
        child.once('exit', onExit);
        waiters.push(waiter);
      }
    });
  };

  return {
    name: script,
    process: child,
    send: (message) => child.send(message),
    next,
    cpuMicros: async () => {
      child.send({ type: 'cpu' });
      return (await next<CpuUsage>('cpu')).micros;
    },
    loopDelay: async () => {
      child.send({ type: 'loop-delay' });
      return next<LoopDelay>('loop-delay');
    },
    stop: async () => {
      if (running()) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** In a bench process: tells the driver something. */
export function report(message: Message): void {
  process.send?.(message);
}

/** In a bench process: calls `handler` for each message of this type from the driver. */
export function onMessage<T extends Message>(type: string, handler: (message: T) => void): void {
  process.on('message', (message: Message) => {
    if (message.type === type) handler(message as T);
  });
}

/** How often the event loop's delay is sampled, once asked for: finer than any stall worth telling. */
const LOOP_DELAY_RESOLUTION_MS = 10;

/**
 * In a bench process: answers the driver's CPU and event-loop questions, and exits on SIGTERM after
 * `cleanup` (an exit rather than death by signal, so `--cpu-prof` can write its profile). Every bench
 * process calls it.
 */
export function serveBenchProcess(cleanup: () => Promise<void> | void = () => {}): void {
  onMessage('cpu', () => {
    const { user, system } = process.cpuUsage();
    report({ type: 'cpu', micros: user + system });
  });
  let delay: IntervalHistogram | undefined;
  onMessage('loop-delay', () => {
    // The histogram holds the time between samples, the resolution included.
    const late = (nanos: number) => Math.max(0, nanos / 1e6 - LOOP_DELAY_RESOLUTION_MS);
    const measured = delay
      ? { p99Ms: late(delay.percentile(99)), maxMs: late(delay.max) }
      : { p99Ms: Number.NaN, maxMs: Number.NaN };
    if (!delay) {
      delay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
      delay.enable();
    }
    delay.reset();
    report({ type: 'loop-delay', ...measured });
  });
  process.once('SIGTERM', () => {
    void Promise.resolve()
      .then(cleanup)
      .finally(() => process.exit(0));
  });
  // The driver going away (a crash, ^C) must not leave servers behind.
  process.once('disconnect', () => process.exit(0));
}
