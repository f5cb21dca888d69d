import '../../src/ops/tick-shape.js';
import { Agent } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { BlockRecorder } from '../lib/blocks.js';
import { report, serveBenchProcess } from '../lib/child.js';
import { loopbackRequest } from '../lib/loopback-http.js';
import { benchUserId } from '../lib/workload.js';

/**
 * Sites polling presences (the hostile scenario's normal REST load): READERS_PER_ADDRESS readers from each
 * loopback address of ADDRESSES (comma-separated), each with a keep-alive connection of its own, each
 * asking `GET /v1/users/<id>` of one of the first USERS bench users every POLL_MS. A read is timed from
 * when it was due, not from when it was sent: a reader held up by a slow answer owes the reads it missed,
 * and they count as late.
 */
const url = new URL(process.env.URL as string);
const users = Number(process.env.USERS);
const addresses = (process.env.ADDRESSES as string).split(',');
const readersPerAddress = Number(process.env.READERS_PER_ADDRESS);
const pollMs = Number(process.env.POLL_MS);

const recorder = new BlockRecorder();
const agents: Agent[] = [];
let running = true;

async function reader(localAddress: string, index: number, readers: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  let due = performance.now() + (pollMs * index) / readers;
  for (let n = index; running; n++) {
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const label = recorder.current;
    const sent = performance.now();
    try {
      const path = `/v1/users/${benchUserId(n % users)}`;
      const { status } = await loopbackRequest(url, { method: 'GET', path, localAddress, agent });
      // Timers may fire a little early: a read sent before it was due is timed from when it was sent.
      const end = performance.now();
      if (status === 200) recorder.latency(end - Math.min(due, sent), label);
      else recorder.failure(String(status), label);
    } catch (error) {
      recorder.failure((error as NodeJS.ErrnoException).code ?? 'error', label);
    }
    due += pollMs;
  }
}

serveBenchProcess(() => {
  running = false;
  for (const agent of agents) agent.destroy();
});
const readers = addresses.length * readersPerAddress;
addresses.forEach((address, a) => {
  for (let r = 0; r < readersPerAddress; r++) void reader(address, a * readersPerAddress + r, readers);
});
report({ type: 'ready' });
