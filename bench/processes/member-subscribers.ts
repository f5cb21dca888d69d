import '../../src/ops/tick-shape.js';
import { bump, hangUp, serveAttack, startEach, type Tally } from '../lib/attack.js';
import { serveBenchProcess } from '../lib/child.js';
import { clientFrame, RawSocket } from '../lib/raw-socket.js';

/**
 * Sockets following one user (the hostile scenario's member at the cap): SOCKETS raw WebSocket clients
 * spread over the loopback addresses of ADDRESSES, every other one with `compression=zlib_json`, each
 * sending `subscribe_to_id` USER_ID once it is open and then reading everything as fast as it comes,
 * counting it but parsing nothing past the frame headers. Started, they connect; stopped, they hang up.
 */
const url = process.env.URL as string;
const sockets = Number(process.env.SOCKETS);
const addresses = (process.env.ADDRESSES as string).split(',');
const subscribe = clientFrame(JSON.stringify({ op: 2, d: { subscribe_to_id: process.env.USER_ID } }));

let open: RawSocket[] = [];
let tally: Tally = {};

function subscriber(i: number, settled: () => void): RawSocket {
  const path = i % 2 === 1 ? '/socket?compression=zlib_json' : '/socket';
  const socket = new RawSocket(url, path, addresses[i % addresses.length] as string, {
    open: (self) => {
      self.send(subscribe);
      settled();
    },
    closed: (code) => bump(tally, `member subscribers closed ${code}`),
    refused: (status) => {
      bump(tally, `member subscribers refused ${status}`);
      settled();
    },
    ended: () => {
      bump(tally, 'bytes sent to member subscribers', socket.bytesRead);
      bump(tally, 'messages after Hello sent to member subscribers', Math.max(0, socket.reader.messages - 1));
      settled();
    },
  });
  return socket;
}

serveAttack({
  start: async () => {
    tally = {};
    const started = startEach(sockets, subscriber);
    open = started.clients;
    await started.settled;
  },
  stop: async () => {
    await hangUp(open.map((socket) => socket.socket));
    open = [];
    return tally;
  },
});
serveBenchProcess(() => {
  for (const socket of open) socket.destroy();
});
