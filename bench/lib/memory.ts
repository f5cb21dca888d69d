import { type BenchChild, type Message, onMessage, report } from './child.js';

export interface MemoryUsage extends Message {
  type: 'memory';
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

/** Node flags for a process asked about its memory: what a collection can free is not counted. */
export const MEMORY_FLAGS = ['--expose-gc'] as const;

/** Full collections at most, until the heap stops shrinking. */
const MAX_COLLECTIONS = 8;
/** Between collections: V8 hands freed pages back to the system from a background thread. */
const SETTLE_MS = 250;

/**
 * In a bench process started with MEMORY_FLAGS: answers `memory` with its usage once settled: full
 * collections, a moment apart, until the heap no longer shrinks. One collection right after a burst of
 * allocation leaves pages half empty that the next ones compact, as a process that runs on does by itself
 * (V8 collects again when idle); measured 1M users in: 2,190 MB after one, 2,095 MB settled.
 */
export function serveMemoryQuestions(): void {
  onMessage('memory', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error('memory questions need --expose-gc (MEMORY_FLAGS)');
    void (async () => {
      gc();
      let usage = process.memoryUsage();
      for (let collections = 1; collections < MAX_COLLECTIONS; collections++) {
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        gc();
        const next = process.memoryUsage();
        const shrunk = next.heapTotal < usage.heapTotal;
        usage = next;
        if (!shrunk) break;
      }
      const { rss, heapUsed, heapTotal, external, arrayBuffers } = usage;
      report({ type: 'memory', rss, heapUsed, heapTotal, external, arrayBuffers });
    })();
  });
}

/** The driver's side: a bench process's memory after a full GC. */
export async function memoryOf(child: BenchChild): Promise<MemoryUsage> {
  child.send({ type: 'memory' });
  return child.next<MemoryUsage>('memory');
}
