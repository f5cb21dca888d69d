import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** A message a bench process sends to the driver over IPC. */
export interface ChildMessage {
  type: string;
  [key: string]: unknown;
}

export interface BenchChild {
  readonly process: ChildProcess;
  send(message: ChildMessage): void;
  /** The next message of this type (messages of other types are kept for their own waiters). */
  next<T extends ChildMessage>(type: string, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

/**
 * Runs one of bench/processes/ in its own Node process, so what is measured never shares a heap or an
 * event loop with the driver or the load.
 */
export function startChild(
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
): BenchChild {
  const path = fileURLToPath(new URL(`../processes/${script}.ts`, import.meta.url));
  const child = fork(path, args, {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const queue: ChildMessage[] = [];
  const waiters: Array<{ type: string; resolve: (message: ChildMessage) => void }> = [];
  child.on('message', (message: ChildMessage) => {
    const index = waiters.findIndex((waiter) => waiter.type === message.type);
    if (index >= 0) waiters.splice(index, 1)[0]?.resolve(message);
    else queue.push(message);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    process: child,
    send: (message) => child.send(message),
    next: <T extends ChildMessage>(type: string, timeoutMs = 120_000) => {
      const index = queue.findIndex((message) => message.type === type);
      if (index >= 0) return Promise.resolve(queue.splice(index, 1)[0] as T);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${script}: no "${type}" within ${timeoutMs} ms`)),
          timeoutMs,
        );
        const failed = () => reject(new Error(`${script} exited while the driver waited for "${type}"`));
        child.once('exit', failed);
        waiters.push({
          type,
          resolve: (message) => {
            clearTimeout(timer);
            child.off('exit', failed);
            resolve(message as T);
          },
        });
      });
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** In a bench process: tells the driver something. */
export function report(message: ChildMessage): void {
  process.send?.(message);
}
