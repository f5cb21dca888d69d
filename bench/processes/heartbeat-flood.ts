import '../../src/ops/tick-shape.js';
import { bump, hangUp, serveFlood } from '../lib/attack.js';
import { serveBenchProcess } from '../lib/child.js';
import { clientFrame, RawSocket } from '../lib/raw-socket.js';

/**
 * A client flooding heartbeats (the hostile scenario): SOCKETS raw WebSocket clients from ADDRESS, each
 * sending the op 3 frame FRAME (JSON text) back to back as fast as its connection takes them, and reading
 * whatever comes back without parsing it. Closed by the service, a socket connects again at once; so does
 * one refused at the upgrade. Counts frames sent, closes by code and refusals, under KIND (what the frames
 * are).
 */
const url = process.env.URL as string;
const sockets = Number(process.env.SOCKETS);
const localAddress = process.env.ADDRESS as string;
const kind = process.env.KIND as string;
const frame = clientFrame(process.env.FRAME as string);
/**
 * Frames are written this many bytes of them at a time, one write a turn until the connection pushes
 * back: a heartbeat is a few bytes, and a write each would spend the flood's CPU on calls, not frames.
 */
const CHUNK_BYTES = 64 * 1024;
const framesPerChunk = Math.max(1, Math.floor(CHUNK_BYTES / frame.length));
const chunk = Buffer.concat(Array.from({ length: framesPerChunk }, () => frame));

const open = new Set<RawSocket>();
const flood = serveFlood(
  sockets,
  (_, connected) => flooder(connected),
  async () => {
    await hangUp([...open].map((socket) => socket.socket));
    open.clear();
  },
);

function flooder(connected: () => void): void {
  // Written to as long as it takes more at once; once it pushes back, again when it drains.
  const send = (socket: RawSocket): void => {
    if (!flood.active || socket.socket.destroyed) return;
    bump(flood.tally, `${kind} sent`, framesPerChunk);
    if (socket.send(chunk)) setImmediate(() => send(socket));
  };
  const socket = new RawSocket(url, '/socket', localAddress, {
    open: (self) => {
      bump(flood.tally, `${kind} connections`);
      connected();
      self.socket.on('drain', () => send(self));
      send(self);
    },
    closed: (code) => {
      bump(flood.tally, `${kind} sockets closed ${code}`);
      socket.destroy();
    },
    refused: (status) => {
      bump(flood.tally, `${kind} upgrades refused ${status}`);
      connected();
    },
    ended: () => {
      open.delete(socket);
      // Cut before its upgrade was answered, it is done starting all the same.
      connected();
      if (flood.active) flooder(() => undefined);
    },
  });
  open.add(socket);
}

serveBenchProcess(() => {
  for (const socket of open) socket.destroy();
});
