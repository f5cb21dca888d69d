import '../../src/ops/tick-shape.js';
import { bump, hangUp, serveAttack, startEach, type Tally } from '../lib/attack.js';
import { serveBenchProcess } from '../lib/child.js';
import { clientFrame, RawSocket } from '../lib/raw-socket.js';

/**
 * A client flooding subscribe frames (the hostile scenario): SOCKETS raw WebSocket clients from ADDRESS,
 * every other one with `compression=zlib_json`, each sending op 2 frames as fast as its connection takes
 * them, in turn `subscribe_to_ids` of the ids in IDS (comma-separated) and `subscribe_to_all`, and reading
 * whatever comes back without parsing it. Closed by the service, a socket connects again at once; so does
 * one refused at the upgrade. Counts frames sent, closes by code, refusals and bytes received.
 */
const url = process.env.URL as string;
const sockets = Number(process.env.SOCKETS);
const localAddress = process.env.ADDRESS as string;
const ids = (process.env.IDS as string).split(',');
/** Frames written at once before waiting for the connection to drain. */
const WRITE_AHEAD_BYTES = 256 * 1024;

const frames = [
  clientFrame(JSON.stringify({ op: 2, d: { subscribe_to_ids: ids } })),
  clientFrame(JSON.stringify({ op: 2, d: { subscribe_to_all: true } })),
];
let active = false;
let tally: Tally = {};
let open = new Set<RawSocket>();

function flooder(i: number, connected: () => void): void {
  const path = i % 2 === 1 ? '/socket?compression=zlib_json' : '/socket';
  let sent = 0;
  const flood = (socket: RawSocket): void => {
    while (!socket.socket.destroyed && socket.socket.writableLength < WRITE_AHEAD_BYTES) {
      socket.send(frames[sent++ % frames.length] as Buffer);
      bump(tally, 'subscribe frames sent');
    }
  };
  const socket = new RawSocket(url, path, localAddress, {
    open: (self) => {
      bump(tally, 'flood connections');
      connected();
      self.socket.on('drain', () => flood(self));
      flood(self);
    },
    closed: (code) => {
      bump(tally, `flood sockets closed ${code}`);
      socket.destroy();
    },
    refused: (status) => {
      bump(tally, `flood upgrades refused ${status}`);
      connected();
    },
    ended: () => {
      open.delete(socket);
      bump(tally, 'bytes sent to the flood', socket.bytesRead);
      bump(tally, 'messages after Hello sent to the flood', Math.max(0, socket.reader.messages - 1));
      if (active) flooder(i, () => undefined);
    },
  });
  open.add(socket);
}

serveAttack({
  start: async () => {
    tally = {};
    active = true;
    await startEach(sockets, flooder).settled;
  },
  stop: async () => {
    active = false;
    await hangUp([...open].map((socket) => socket.socket));
    open = new Set();
    return tally;
  },
});
serveBenchProcess(() => {
  for (const socket of open) socket.destroy();
});
