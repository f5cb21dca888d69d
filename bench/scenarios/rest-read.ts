import { startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { type WrkResult, wrk } from '../lib/wrk.js';

const LOAD = { connections: 100, threads: 2, seconds: 10 };
const WARMUP = { connections: 100, threads: 2, seconds: 3 };

async function load(url: string): Promise<WrkResult> {
  await wrk(url, WARMUP);
  return wrk(url, LOAD);
}

/** `GET /v1/users/:id` of a realistic presence against node:http answering the same bytes. */
export async function restRead(): Promise<Row[]> {
  const service = startChild('service');
  let body: string;
  let served: WrkResult;
  try {
    const ready = await service.next<{ type: string; url: string; userId: string }>('ready');
    const url = `${ready.url}/v1/users/${ready.userId}`;
    body = await (await fetch(url)).text();
    served = await load(url);
  } finally {
    await service.stop();
  }
  const bare = startChild('bare-http', [], { BODY: body });
  let floor: WrkResult;
  try {
    const ready = await bare.next<{ type: string; url: string }>('ready');
    floor = await load(ready.url);
  } finally {
    await bare.stop();
  }
  const ratio = served.requestsPerSecond / floor.requestsPerSecond;
  return [
    {
      scenario: 'rest-read',
      figure: `GET /v1/users/:id (${Buffer.byteLength(body)} B), ${LOAD.connections} connections`,
      value: served.requestsPerSecond,
      unit: 'req/s',
      baseline: { label: 'bare node:http, same bytes', value: floor.requestsPerSecond },
      target: { text: '≥ 0.9× baseline', met: ratio >= 0.9 },
      notes: `p50 ${served.p50Ms} ms / p99 ${served.p99Ms} ms (bare: ${floor.p50Ms} / ${floor.p99Ms} ms); errors ${served.errors}`,
    },
  ];
}
