/**
 * How a fan-out update says which one it is and when it was sent: the custom status text of the updated
 * user, fixed width, so the baseline can put the same bytes in the same frame and the client can find
 * it without parsing JSON. The clock is the wall clock in µs (performance.timeOrigin + now()): the
 * sender and the receiver are processes on one machine.
 */
export const MARKER = 'fanout#';
const SEQ_DIGITS = 9;
const MICROS_DIGITS = 16;
export const MARKER_LENGTH = MARKER.length + SEQ_DIGITS + 1 + MICROS_DIGITS;

export function nowMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

export function markerText(seq: number, sentMicros: number): string {
  return `${MARKER}${String(seq).padStart(SEQ_DIGITS, '0')}@${String(sentMicros).padStart(MICROS_DIGITS, '0')}`;
}

const MARKER_BYTES = Buffer.from(MARKER);

/** The seq and send time of the first marker in a frame, or undefined when it has none. */
export function readMarker(frame: Buffer): { seq: number; sentMicros: number } | undefined {
  const at = frame.indexOf(MARKER_BYTES);
  if (at < 0) return undefined;
  const seqAt = at + MARKER.length;
  const seq = Number(frame.toString('latin1', seqAt, seqAt + SEQ_DIGITS));
  const timeAt = seqAt + SEQ_DIGITS + 1;
  return { seq, sentMicros: Number(frame.toString('latin1', timeAt, timeAt + MICROS_DIGITS)) };
}
