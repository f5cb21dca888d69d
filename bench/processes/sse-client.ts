import '../../src/ops/tick-shape.js';
import { connect, type Socket } from 'node:net';
import { onMessage, report, serveBenchProcess } from '../lib/child.js';
import { nowMicros, readMarker } from '../lib/fanout-marker.js';
import { quantile } from '../lib/stats.js';

/**
 * The event-stream subscribers: STREAMS streams of `/v1/users/USER_ID/events` in this one process, the load
 * of the sse scenario, each on a TCP connection of its own read by hand (an HTTP client's machinery would
 * cost this process more than `ws` costs the socket side's): the answer's head is checked, then events are
 * cut at their blank line before they are looked at, as EventSource does. Each update is timed from the
 * send time its marker carries; once every stream has it, the driver hears of it (`round`), so it can send
 * the next. `ready` once every stream has its first presence.
 */
const url = new URL(process.env.URL as string);
const request = Buffer.from(
  `GET /v1/users/${process.env.USER_ID as string}/events HTTP/1.1\r\nHost: ${url.host}\r\n` +
    'Accept: text/event-stream\r\n\r\n',
);
const streams = Number(process.env.STREAMS ?? 2_000);

const HEAD_END = Buffer.from('\r\n\r\n');
const OK = Buffer.from('HTTP/1.1 200 ');
const EVENT_END = Buffer.from('\n\n');
const PRESENCE = Buffer.from('event: presence');
const counts = new Map<number, number>();
let latencies: number[] = [];
let measuring = false;
let ready = 0;
const open: Socket[] = [];

function event(block: Buffer, opened: { done: boolean }): void {
  if (!opened.done) {
    if (!block.includes(PRESENCE)) return;
    opened.done = true;
    if (++ready === streams) report({ type: 'ready' });
    return;
  }
  const at = nowMicros();
  const marker = readMarker(block);
  if (!marker) return;
  if (measuring) latencies.push((at - marker.sentMicros) / 1000);
  const count = (counts.get(marker.seq) ?? 0) + 1;
  if (count < streams) {
    counts.set(marker.seq, count);
    return;
  }
  counts.delete(marker.seq);
  report({ type: 'round', seq: marker.seq });
}

serveBenchProcess(() => {
  for (const socket of open) socket.destroy();
});
onMessage<{ type: string; on: boolean }>('measure', ({ on }) => {
  measuring = on;
});
onMessage('report', () => {
  report({
    type: 'latencies',
    count: latencies.length,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
  });
  latencies = [];
});

for (let i = 0; i < streams; i++) {
  const opened = { done: false };
  let head = true;
  let pending: Buffer | null = null;
  const socket = connect({ host: url.hostname, port: Number(url.port) }, () => socket.write(request));
  socket.on('data', (chunk: Buffer) => {
    let data = pending ? Buffer.concat([pending, chunk]) : chunk;
    if (head) {
      const end = data.indexOf(HEAD_END);
      if (end < 0) {
        pending = data;
        return;
      }
      if (!data.subarray(0, OK.length).equals(OK)) {
        console.error(`sse client: stream ${i} answered ${data.toString('latin1', 0, end)}`);
        process.exit(1);
      }
      head = false;
      data = data.subarray(end + HEAD_END.length);
    }
    for (let end = data.indexOf(EVENT_END); end >= 0; end = data.indexOf(EVENT_END)) {
      event(data.subarray(0, end), opened);
      data = data.subarray(end + EVENT_END.length);
    }
    pending = data.length > 0 ? data : null;
  });
  socket.on('end', () => console.error(`sse client: stream ${i} ended`));
  socket.on('error', (error) => {
    console.error(`sse client: stream ${i}: ${error.message}`);
    process.exit(1);
  });
  open.push(socket);
  // Thousands of connects at once overflow the listen backlog; a little pacing keeps them clean.
  if (i % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 20));
}
