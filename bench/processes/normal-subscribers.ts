import '../../src/ops/tick-shape.js';
import { inflateSync } from 'node:zlib';
import WebSocket from 'ws';
import { BlockRecorder } from '../lib/blocks.js';
import { report, serveBenchProcess } from '../lib/child.js';
import { nowMicros, readMarker } from '../lib/fanout-marker.js';
import { benchUserId } from '../lib/workload.js';

/**
 * Pages following presences live (the hostile scenario's normal socket load): SOCKETS sockets from the
 * loopback addresses of ADDRESSES (comma-separated, taken in turn), every other one with
 * `compression=zlib_json`, each subscribed with `subscribe_to_ids` to IDS_PER_SOCKET of the first USERS
 * bench users. The simulated Discord puts its send time in each change (bench/lib/fanout-marker.ts), so
 * each PRESENCE_UPDATE is timed from the Discord frame to this socket. Says `ready` once every socket has
 * its INIT_STATE; a socket the service closes is a failure of the block it happens in.
 */
const url = (process.env.URL as string).replace(/^http/, 'ws');
const users = Number(process.env.USERS);
const sockets = Number(process.env.SOCKETS);
const idsPerSocket = Number(process.env.IDS_PER_SOCKET);
const addresses = (process.env.ADDRESSES as string).split(',');

const UPDATE = Buffer.from('"t":"PRESENCE_UPDATE"');
const INIT_STATE = Buffer.from('"t":"INIT_STATE"');
const recorder = new BlockRecorder();
const open: WebSocket[] = [];
let initialized = 0;
let stopping = false;

function subscriber(i: number): void {
  const compressed = i % 2 === 1;
  const ws = new WebSocket(`${url}/socket${compressed ? '?compression=zlib_json' : ''}`, {
    perMessageDeflate: false,
    localAddress: addresses[i % addresses.length] as string,
  });
  open.push(ws);
  const ids = Array.from({ length: idsPerSocket }, (_, k) => benchUserId((i * idsPerSocket + k) % users));
  let subscribed = false;
  ws.on('message', (data: Buffer) => {
    const at = nowMicros();
    const frame = compressed ? inflateSync(data) : data;
    if (frame.includes(UPDATE)) {
      const marker = readMarker(frame);
      if (marker) recorder.latency((at - marker.sentMicros) / 1000);
    } else if (frame.includes(INIT_STATE)) {
      if (!subscribed && ++initialized === sockets) report({ type: 'ready' });
      subscribed = true;
    } else {
      const hello = JSON.parse(frame.toString()) as { op: number; d: { heartbeat_interval: number } };
      if (hello.op !== 1) return;
      ws.send(JSON.stringify({ op: 2, d: { subscribe_to_ids: ids } }));
      setInterval(() => ws.send('{"op":3}'), hello.d.heartbeat_interval).unref();
    }
  });
  ws.on('error', (error) => recorder.failure(error.message));
  ws.on('close', (code, reason) => {
    if (stopping) return;
    recorder.failure(`closed ${code}`);
    console.error(`normal subscriber ${i}: closed ${code} ${reason}`);
  });
}

serveBenchProcess(() => {
  stopping = true;
  for (const ws of open) ws.terminate();
});
for (let i = 0; i < sockets; i++) subscriber(i);
