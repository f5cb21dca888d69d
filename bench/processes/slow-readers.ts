import '../../src/ops/tick-shape.js';
import { connect, type Socket } from 'node:net';
import { bump, hangUp, serveAttack, startEach, type Tally } from '../lib/attack.js';
import { serveBenchProcess } from '../lib/child.js';
import { ResponseReader } from '../lib/response-reader.js';

/**
 * Clients on slow links reading one presence (the hostile scenario's member at the cap): READERS
 * keep-alive connections spread over the loopback addresses of ADDRESSES, each asking `GET PATH` and, as
 * soon as an answer is read to its end, asking again. Each reads one chunk of what the kernel holds for it
 * every READ_EVERY_MS and otherwise leaves it unread, so the kernel's small receive window stays full and
 * the rest of each answer waits in the service. Counts the bytes they got, the answers read to the end
 * and those refused.
 */
const url = new URL(process.env.URL as string);
const path = process.env.PATH_TO_READ as string;
const readers = Number(process.env.READERS);
const addresses = (process.env.ADDRESSES as string).split(',');
const readEveryMs = Number(process.env.READ_EVERY_MS);

const request = Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
let sockets: Socket[] = [];
let tally: Tally = {};
let active = false;
let pacing: NodeJS.Timeout | undefined;

function slowReader(localAddress: string, connected: () => void): Socket {
  const socket = connect({ host: url.hostname, port: Number(url.port), localAddress });
  const reader = new ResponseReader((status) => {
    if (status === 200) bump(tally, 'slow reads completed');
    else bump(tally, `slow reads answered ${status}`);
    if (active) socket.write(request);
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (active) bump(tally, `slow reader errors (${error.code ?? 'error'})`);
    connected();
  });
  socket.once('connect', () => {
    socket.write(request);
    connected();
  });
  socket.once('close', () => {
    bump(tally, 'bytes served to slow readers', socket.bytesRead);
    if (active) bump(tally, 'slow readers cut by the service');
  });
  socket.on('data', (chunk: Buffer) => {
    reader.push(chunk);
    socket.pause();
  });
  return socket;
}

serveAttack({
  start: async () => {
    tally = {};
    active = true;
    const started = startEach(readers, (i, settled) =>
      slowReader(addresses[i % addresses.length] as string, settled),
    );
    sockets = started.clients;
    await started.settled;
    pacing = setInterval(() => {
      for (const socket of sockets) socket.resume();
    }, readEveryMs);
  },
  stop: async () => {
    active = false;
    clearInterval(pacing);
    await hangUp(sockets);
    sockets = [];
    return tally;
  },
});
serveBenchProcess(() => {
  for (const socket of sockets) socket.destroy();
});
