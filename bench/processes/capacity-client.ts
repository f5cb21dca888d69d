import '../../src/ops/tick-shape.js';
import WebSocket from 'ws';
import { HEARTBEAT_INTERVAL_MS } from '../../src/socket/protocol.js';
import { type Message, onMessage, report, serveBenchProcess } from '../lib/child.js';
import { benchUserId } from '../lib/workload.js';

/**
 * Idle subscribers, the load of the socket-capacity scenario: SOCKETS sockets from this process, bound in
 * turn to the loopback ADDRESSES (each source address has its own ~28,000 ephemeral ports). Against the
 * service (MODE lanyard) each speaks Lanyard's protocol: it reads Hello, subscribes to one bench user
 * (socket FIRST + i to user (FIRST + i) mod USERS), checks INIT_STATE carries that user's presence, then
 * only heartbeats at the interval Hello gave. Against the bare server (MODE bare) a socket is done once
 * open and sends the same heartbeats at the service's interval. `ready` when every socket is done;
 * `status` says how many are done, still open and closed; `hang-up` destroys them all at once, or closes
 * each with a closing handshake (`how`), and says `hung-up` once all are closed.
 */
const url = (process.env.URL as string).replace(/^http/, 'ws');
const sockets = Number(process.env.SOCKETS);
const first = Number(process.env.FIRST ?? 0);
const users = Number(process.env.USERS ?? 1);
const addresses = (process.env.ADDRESSES ?? '127.0.0.1').split(',');
const lanyard = process.env.MODE === 'lanyard';
/** Handshakes under way at once: thousands at once would overflow the server's listen backlog. */
const IN_FLIGHT = 64;
const HEARTBEAT = '{"op":3}';

const open: WebSocket[] = [];
let done = 0;
let closed = 0;
let heartbeats = 0;
const closeCodes = new Map<number, number>();

function heartbeat(ws: WebSocket, intervalMs: number): void {
  setInterval(() => {
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(HEARTBEAT);
    heartbeats++;
  }, intervalMs).unref();
}

/** Opens socket i; `finished` once it is subscribed (lanyard) or open (bare). */
function connect(i: number, finished: () => void): void {
  const userId = benchUserId((first + i) % users);
  const ws = new WebSocket(lanyard ? `${url}/socket` : url, {
    perMessageDeflate: false,
    localAddress: addresses[i % addresses.length] as string,
  });
  open.push(ws);
  let subscribed = false;
  const succeed = () => {
    subscribed = true;
    done++;
    finished();
    if (done === sockets) report({ type: 'ready' });
  };
  ws.on('error', (error) => {
    if (subscribed) return;
    console.error(`capacity client: socket ${first + i}: ${error.message}`);
    process.exit(1);
  });
  ws.on('close', (code) => {
    closed++;
    closeCodes.set(code, (closeCodes.get(code) ?? 0) + 1);
  });
  if (!lanyard) {
    ws.on('open', () => {
      heartbeat(ws, HEARTBEAT_INTERVAL_MS);
      succeed();
    });
    return;
  }
  ws.on('message', (data: Buffer) => {
    if (subscribed) return;
    const frame = JSON.parse(data.toString()) as { op: number; t?: string; d: Record<string, unknown> };
    if (frame.op === 1) {
      ws.send(JSON.stringify({ op: 2, d: { subscribe_to_id: userId } }));
      heartbeat(ws, frame.d.heartbeat_interval as number);
    } else if (frame.t === 'INIT_STATE') {
      const user = frame.d.discord_user as { id?: string } | undefined;
      if (user?.id !== userId) {
        console.error(`capacity client: INIT_STATE for ${userId} carries no presence of that user`);
        process.exit(1);
      }
      succeed();
    }
  });
}

serveBenchProcess(() => {
  for (const ws of open) ws.terminate();
});
onMessage<Message & { how: 'destroy' | 'close' }>('hang-up', ({ how }) => {
  let left = open.length;
  if (left === 0) report({ type: 'hung-up' });
  const gone = () => {
    if (--left === 0) report({ type: 'hung-up' });
  };
  // All at once: destroyed as a machine going away closes them, or each with a closing handshake.
  for (const ws of open) {
    if (ws.readyState === WebSocket.CLOSED) gone();
    else if (how === 'close') ws.once('close', gone).close(1000);
    else ws.once('close', gone).terminate();
  }
});
onMessage('status', () => {
  report({
    type: 'status',
    done,
    open: open.filter((ws) => ws.readyState === WebSocket.OPEN).length,
    closed,
    closeCodes: Object.fromEntries(closeCodes),
    heartbeats,
  });
});

let inFlight = 0;
let wake: (() => void) | undefined;
for (let i = 0; i < sockets; i++) {
  while (inFlight >= IN_FLIGHT) await new Promise<void>((resolve) => (wake = resolve));
  inFlight++;
  connect(i, () => {
    inFlight--;
    wake?.();
    wake = undefined;
  });
}
