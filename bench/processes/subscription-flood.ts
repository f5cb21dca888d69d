import '../../src/ops/tick-shape.js';
import { bump, hangUp, serveAttack, type Tally } from '../lib/attack.js';
import { serveBenchProcess } from '../lib/child.js';
import { clientFrame, RawSocket } from '../lib/raw-socket.js';

/**
 * Sockets that each subscribe to ids nobody monitors and then only keep alive (the hostile scenario's
 * subscription flood): SOCKETS raw WebSocket clients, PER_ADDRESS from each loopback address from
 * 127.FIRST_OCTET.0.1 on (so that no per-client limit is reached), each sending one `subscribe_to_ids` of
 * IDS ids of its own, and a heartbeat every HEARTBEAT_MS. At most OPENING sockets are being set up at
 * once, as a flood from many machines arrives spread out rather than in one instant, and their heartbeats
 * are spread over the interval as those of sockets opened over time are: all of them in the same instant
 * would be a flood of frames across addresses, another attack than holding subscriptions. Started, every socket
 * connects and subscribes (answered, closed or refused); stopped, they hang up.
 */
const url = process.env.URL as string;
const sockets = Number(process.env.SOCKETS);
const perAddress = Number(process.env.PER_ADDRESS);
const firstOctet = Number(process.env.FIRST_OCTET);
const ids = Number(process.env.IDS);
const heartbeatMs = Number(process.env.HEARTBEAT_MS);
const opening = Number(process.env.OPENING);
/** The first id subscribed to: far above any id the bench's users have. */
const FIRST_ID = 700_000_000_000_000_000n;
/** Hello, then the `INIT_STATE` answering the subscription. */
const ANSWERED_AT_MESSAGES = 2;
const heartbeat = clientFrame(JSON.stringify({ op: 3 }));
/** Heartbeats go out to one slice of the sockets at a time, a slice every HEARTBEAT_MS / HEARTBEAT_SLICES. */
const HEARTBEAT_SLICES = 150;

let open: RawSocket[] = [];
let tally: Tally = {};
let timer: NodeJS.Timeout | undefined;

function addressOf(i: number): string {
  const address = Math.floor(i / perAddress);
  return `127.${firstOctet + Math.floor(address / 62_500)}.${Math.floor(address / 250) % 250}.${(address % 250) + 1}`;
}

/** The socket's own ids, written as its frame when it opens and not kept. */
function subscribeFrame(i: number): Buffer {
  const first = FIRST_ID + BigInt(i) * BigInt(ids);
  const list = Array.from({ length: ids }, (_, n) => `"${first + BigInt(n)}"`).join(',');
  return clientFrame(`{"op":2,"d":{"subscribe_to_ids":[${list}]}}`);
}

/** One socket: `settled` once its subscription is answered, or it is closed or refused. */
function subscriber(i: number, settled: () => void): RawSocket {
  let done = false;
  const settle = (): void => {
    if (done) return;
    done = true;
    settled();
  };
  const socket = new RawSocket(url, '/socket', addressOf(i), {
    open: (self) => {
      self.send(subscribeFrame(i));
      self.socket.on('data', () => {
        if (done || self.reader.messages < ANSWERED_AT_MESSAGES) return;
        bump(tally, 'flood sockets subscribed');
        settle();
      });
    },
    closed: (code) => bump(tally, `flood sockets closed ${code}`),
    refused: (status) => bump(tally, `flood upgrades refused ${status}`),
    ended: settle,
  });
  return socket;
}

serveAttack({
  start: async () => {
    tally = {};
    // From the first socket on: setting up all of them may take longer than a heartbeat interval.
    let tick = 0;
    timer = setInterval(() => {
      const slice = tick++ % HEARTBEAT_SLICES;
      for (let i = slice; i < open.length; i += HEARTBEAT_SLICES) {
        const socket = open[i] as RawSocket;
        if (!socket.socket.destroyed) socket.send(heartbeat);
      }
    }, heartbeatMs / HEARTBEAT_SLICES);
    let next = 0;
    await new Promise<void>((resolve) => {
      let left = sockets;
      const startNext = (): void => {
        if (next >= sockets) return;
        const i = next++;
        open.push(
          subscriber(i, () => {
            if (--left === 0) resolve();
            startNext();
          }),
        );
      };
      if (sockets === 0) resolve();
      for (let k = 0; k < Math.min(opening, sockets); k++) startNext();
    });
  },
  stop: async () => {
    clearInterval(timer);
    await hangUp(open.map((socket) => socket.socket));
    open = [];
    return tally;
  },
});
serveBenchProcess(() => {
  clearInterval(timer);
  for (const socket of open) socket.destroy();
});
