import { randomBytes } from 'node:crypto';

/** Random bytes naming a run of the process: enough that two nodes or two starts never share one. */
const RUN_BYTES = 6;
/** The counter stays an exact integer: Number.MAX_SAFE_INTEGER has 16 digits. */
const SEQ = /^[0-9]{1,15}$/;

/**
 * Event ids: `<run>-<n>`, where n counts the changes this process has numbered (replay.ts) and `run` names
 * this run of it. An id from before a restart, or from another node behind the same address, is then
 * never taken for one of ours: it reads as a gap too old to replay, and the stream starts afresh.
 */
export class EventIds {
  readonly run = randomBytes(RUN_BYTES).toString('hex');

  text(seq: number): string {
    return `${this.run}-${seq}`;
  }

  /** The n of one of this run's ids; null for anything else (none, another run's, not an id). */
  seqOf(id: string | undefined): number | null {
    if (id === undefined || !id.startsWith(this.run) || id[this.run.length] !== '-') return null;
    const digits = id.slice(this.run.length + 1);
    return SEQ.test(digits) ? Number(digits) : null;
  }
}
