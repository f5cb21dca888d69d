import '../../src/ops/tick-shape.js';
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { bump, serveFlood } from '../lib/attack.js';
import { serveBenchProcess } from '../lib/child.js';
import { loopbackRequest } from '../lib/loopback-http.js';

/**
 * A client writing its own `X-Forwarded-For` to a service that trusts one proxy hop (the hostile
 * scenario): CONNECTIONS keep-alive connections straight from ADDRESS, each sending GET PATH_TO_READ as
 * soon as the last is answered, every one naming a client never seen before: 16 random characters and
 * then PAD_BYTES of `x`, nearly as long as a header may be. A service that took each for a client of its
 * own would keep a budget for every one. Counts the answers by status.
 */
const url = new URL(process.env.URL as string);
const connections = Number(process.env.CONNECTIONS);
const localAddress = process.env.ADDRESS as string;
const path = process.env.PATH_TO_READ as string;
const padding = 'x'.repeat(Number(process.env.PAD_BYTES));

let agent = new Agent({ keepAlive: true, maxSockets: connections });
const flood = serveFlood(
  connections,
  (_, started) => forge(started),
  async (loops) => {
    await Promise.all(loops);
    agent.destroy();
    agent = new Agent({ keepAlive: true, maxSockets: connections });
  },
);

async function forge(started: () => void): Promise<void> {
  while (flood.active) {
    try {
      const { status } = await loopbackRequest(url, {
        method: 'GET',
        path,
        localAddress,
        agent,
        headers: { 'x-forwarded-for': `${randomBytes(8).toString('hex')}${padding}` },
      });
      bump(flood.tally, `forged X-Forwarded-For answered ${status}`);
    } catch (error) {
      bump(flood.tally, `forged X-Forwarded-For cut (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    // At work once answered: the blocks measure the flood, not its connections opening at once.
    started();
  }
}

serveBenchProcess(() => {
  flood.active = false;
  agent.destroy();
});
