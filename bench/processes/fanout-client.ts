import WebSocket from 'ws';
import { report } from '../lib/child.js';

/**
 * The subscribers: SOCKETS sockets in this one process. Each PRESENCE_UPDATE is timed from the send
 * time it carries (same machine, same clock); when every socket has an update, the driver is told, so
 * it sends the next one.
 */
const url = (process.env.URL as string).replace(/^http/, 'ws');
const sockets = Number(process.env.SOCKETS ?? 2000);
const lanyard = process.env.PROTOCOL === 'lanyard';
const userId = process.env.USER_ID ?? '';
const received = new Map<number, number>();
const latencies: number[] = [];
let measuring = false;
let subscribed = 0;

const seqOf = /"seq":"(\d+)"/;
const sentAt = /"t":"(\d+)"/;

function onMessage(data: Buffer): void {
  const text = data.toString();
  if (!text.includes('PRESENCE_UPDATE')) {
    if (text.includes('INIT_STATE') && ++subscribed === sockets) report({ type: 'ready' });
    return;
  }
  const seq = Number(seqOf.exec(text)?.[1]);
  if (measuring) latencies.push(Date.now() - Number(sentAt.exec(text)?.[1]));
  const count = (received.get(seq) ?? 0) + 1;
  if (count === sockets) {
    received.delete(seq);
    report({ type: 'round', seq });
  } else {
    received.set(seq, count);
  }
}

let opened = 0;
for (let i = 0; i < sockets; i++) {
  const ws = new WebSocket(lanyard ? `${url}/socket` : url, { perMessageDeflate: false });
  ws.on('message', (data: Buffer) => onMessage(data));
  ws.on('error', (error) => {
    console.error('fanout client socket error', error.message);
    process.exit(1);
  });
  ws.on('open', () => {
    if (lanyard) ws.send(JSON.stringify({ op: 2, d: { subscribe_to_id: userId } }));
    else if (++opened === sockets) report({ type: 'ready' });
  });
  // Opening thousands at once overflows the listen backlog; a little pacing keeps it clean.
  if (i % 200 === 199) await new Promise((resolve) => setTimeout(resolve, 20));
}

process.on('message', (message: { type: string }) => {
  if (message.type === 'measure') {
    measuring = true;
    latencies.length = 0;
  }
  if (message.type === 'report') report({ type: 'latencies', latencies });
});
