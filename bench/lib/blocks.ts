import { bump, type Tally } from './attack.js';
import { type BenchChild, type Message, onMessage, report } from './child.js';

/** What a normal client measured over every block of one kind (e.g. `cap:attack`). */
export interface BlockRecord {
  /** Milliseconds of each read or delivery. */
  latencies: number[];
  /** What went wrong, by kind (a status, a close code, an error). */
  failures: Tally;
}

export type BlockRecords = Record<string, BlockRecord>;

/**
 * In a normal client's process: the driver names the block under way (`{type: 'block', label}`, null
 * between blocks) and asks for everything at the end (`report`); what happens between blocks is not kept.
 */
export class BlockRecorder {
  private label: string | null = null;
  private readonly blocks: BlockRecords = {};

  constructor() {
    onMessage<Message & { label: string | null }>('block', ({ label }) => {
      this.label = label;
    });
    onMessage('report', () => report({ type: 'blocks', blocks: this.blocks }));
  }

  /** The block under way, to charge a request to the block it started in. */
  get current(): string | null {
    return this.label;
  }

  latency(ms: number, label: string | null = this.label): void {
    if (label !== null) this.record(label).latencies.push(ms);
  }

  failure(kind: string, label: string | null = this.label): void {
    if (label !== null) bump(this.record(label).failures, kind);
  }

  private record(label: string): BlockRecord {
    this.blocks[label] ??= { latencies: [], failures: {} };
    return this.blocks[label];
  }
}

/** In the driver: tells the normal clients which block is under way (null: none). */
export function markBlock(clients: readonly BenchChild[], label: string | null): void {
  for (const client of clients) client.send({ type: 'block', label });
}

/** In the driver: what one normal client process recorded, by block. */
export async function blockRecords(client: BenchChild): Promise<BlockRecords> {
  client.send({ type: 'report' });
  return (await client.next<Message & { blocks: BlockRecords }>('blocks')).blocks;
}
