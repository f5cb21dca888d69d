import { performance } from 'node:perf_hooks';
import { clearTimeout as realClearTimeout, setTimeout as realSetTimeout } from 'node:timers';

/*
 * The real timer functions and clock, from their modules rather than the globals vi.useFakeTimers replaces
 * (test files share one module cache, so a global read at import may be another file's fake): these
 * helpers go on waiting in real time while a test drives the code's timers.
 */
const realNow = performance.now.bind(performance);

/** Retries an assertion until it passes or the time is up; the last failure is what the test reports. */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 5_000,
  intervalMs = 20,
): Promise<T> {
  const deadline = realNow() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (realNow() > deadline) throw error;
      await new Promise((resolve) => realSetTimeout(resolve, intervalMs));
    }
  }
}

/**
 * What `promise` resolves with, or a failure naming `what` (worded when it fails, if a function) if it has
 * not settled within `timeoutMs`: a deadline for an event (a process's exit, a close), not a wait. The
 * timer goes once it settles.
 */
export async function within<T>(
  promise: Promise<T>,
  timeoutMs: number,
  what: string | (() => string),
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = realSetTimeout(() => {
      reject(new Error(`not within ${timeoutMs} ms: ${typeof what === 'string' ? what : what()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    realClearTimeout(timer);
  }
}

/**
 * Resolves once the wall clock reads later than `at` (a millisecond at most): for a test that needs two
 * things the code stamps with Date.now() to be told apart, or a time that is surely in the past.
 */
export async function clockPast(at: number): Promise<void> {
  while (Date.now() <= at) await new Promise((resolve) => setImmediate(resolve));
}
