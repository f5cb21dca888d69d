import '../../src/ops/tick-shape.js';
import WebSocket from 'ws';
import { onMessage, report, serveBenchProcess } from '../lib/child.js';
import { nowMicros, readMarker } from '../lib/fanout-marker.js';
import { quantile } from '../lib/stats.js';

/**
 * The subscribers: SOCKETS sockets in this one process, the load of the fan-out scenario. Against the
 * service they speak Lanyard's protocol (Hello, subscribe_to_id, heartbeats); against the bare server
 * they only listen. Each update is timed from the send time its marker carries; once every socket has an
 * update the driver hears of it (`round`), so it can send the next.
 */
const url = (process.env.URL as string).replace(/^http/, 'ws');
const sockets = Number(process.env.SOCKETS ?? 2_000);
const lanyard = process.env.MODE === 'lanyard';
const userId = process.env.USER_ID ?? '';

const counts = new Map<number, number>();
let latencies: number[] = [];
let measuring = false;
let ready = 0;
let closeReported = false;
const open: WebSocket[] = [];
const INIT_STATE = Buffer.from('"t":"INIT_STATE"');

/** Until it is subscribed, a Lanyard socket reads Hello and INIT_STATE; after, every socket runs `update`. */
function handshake(ws: WebSocket, data: Buffer): boolean {
  if (data.includes(INIT_STATE)) {
    if (++ready === sockets) report({ type: 'ready' });
    return true;
  }
  const hello = JSON.parse(data.toString()) as { op: number; d: { heartbeat_interval: number } };
  if (hello.op === 1) {
    ws.send(JSON.stringify({ op: 2, d: { subscribe_to_id: userId } }));
    // Kept alive as a Lanyard client does; the service closes silent sockets.
    setInterval(() => ws.send('{"op":3}'), hello.d.heartbeat_interval).unref();
  }
  return false;
}

function update(data: Buffer): void {
  const at = nowMicros();
  const marker = readMarker(data);
  if (!marker) return;
  if (measuring) latencies.push((at - marker.sentMicros) / 1000);
  const count = (counts.get(marker.seq) ?? 0) + 1;
  if (count < sockets) {
    counts.set(marker.seq, count);
    return;
  }
  counts.delete(marker.seq);
  report({ type: 'round', seq: marker.seq });
}

serveBenchProcess(() => {
  for (const ws of open) ws.terminate();
});
onMessage<{ type: string; on: boolean }>('measure', ({ on }) => {
  measuring = on;
});
onMessage('report', () => {
  const { user, system } = process.cpuUsage();
  report({
    type: 'latencies',
    count: latencies.length,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    cpuMicros: user + system,
  });
  latencies = [];
});

for (let i = 0; i < sockets; i++) {
  const ws = new WebSocket(lanyard ? `${url}/socket` : url, { perMessageDeflate: false });
  open.push(ws);
  let subscribed = !lanyard;
  ws.on('message', (data: Buffer) => {
    if (subscribed) update(data);
    else subscribed = handshake(ws, data);
  });
  ws.on('error', (error) => {
    console.error(`fanout client: socket ${i}: ${error.message}`);
    process.exit(1);
  });
  ws.on('close', (code, reason) => {
    // A close the client did not ask for (e.g. 4008 slow_consumer) invalidates the run: say so once.
    if (code !== 1006 && !closeReported)
      console.error(`fanout client: socket ${i} closed: ${code} ${reason}`);
    closeReported = true;
  });
  ws.on('open', () => {
    if (!lanyard && ++ready === sockets) report({ type: 'ready' });
  });
  // Thousands of connects at once overflow the listen backlog; a little pacing keeps them clean.
  if (i % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 20));
}
