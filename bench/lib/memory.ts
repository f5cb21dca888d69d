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

/** In a bench process started with MEMORY_FLAGS: answers `memory` with its usage after a full GC. */
export function serveMemoryQuestions(): void {
  onMessage('memory', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error('memory questions need --expose-gc (MEMORY_FLAGS)');
    gc();
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    report({ type: 'memory', rss, heapUsed, heapTotal, external, arrayBuffers });
  });
}

/** The driver's side: a bench process's memory after a full GC. */
export async function memoryOf(child: BenchChild): Promise<MemoryUsage> {
  child.send({ type: 'memory' });
  return child.next<MemoryUsage>('memory');
}
