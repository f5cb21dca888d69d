import { type BenchChild, type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { formatNumber } from '../lib/stats.js';
import { type WrkLoad, type WrkResult, wrk } from '../lib/wrk.js';

const LOAD: WrkLoad = { connections: 100, threads: 2, seconds: 8 };
const WARMUP: WrkLoad = { ...LOAD, seconds: 3 };

async function measure(child: BenchChild, url: string): Promise<WrkResult & { cpuMicros: number }> {
  await wrk(url, WARMUP);
  const cpuBefore = await child.cpuMicros();
  const result = await wrk(url, LOAD);
  const cpuMicros = (await child.cpuMicros()) - cpuBefore;
  if (result.errors > 0) throw new Error(`card: ${result.errors} errors from ${child.name}`);
  return { ...result, cpuMicros };
}

/**
 * `GET /v1/users/:id/card.svg` for a user listening to Spotify, image caches warm (the avatar from the
 * simulated CDN; album art, whose host is out of reach here, as its cached placeholder), against node:http
 * answering the same SVG bytes: what rendering a card per request costs.
 */
export async function card(): Promise<Row[]> {
  const children: BenchChild[] = [];
  try {
    const service = startChild('service');
    children.push(service);
    const ready = await service.next<Message & { url: string; userId: string }>('ready');
    const url = `${ready.url}/v1/users/${ready.userId}/card.svg`;
    // The first render fetches the images (or learns they cannot be had) and caches the outcome.
    const response = await fetch(url);
    const svg = await response.text();
    if (response.status !== 200) throw new Error(`card: the service answered ${response.status}: ${svg}`);
    const served = await measure(service, url);

    const bare = startChild('bare-http', [], {
      BODY: svg,
      HEADERS: JSON.stringify(Object.fromEntries(response.headers)),
    });
    children.push(bare);
    const floor = await measure(bare, (await bare.next<Message & { url: string }>('ready')).url);

    const perCard = (result: typeof served) => result.cpuMicros / result.requests;
    return [
      {
        scenario: 'card',
        figure: `cards/s, warm image caches (${formatNumber(Buffer.byteLength(svg) / 1024)} KiB card), wrk ${LOAD.connections} connections`,
        value: served.requestsPerSecond,
        unit: '/s',
        baseline: { label: 'bare node:http, same SVG bytes', value: floor.requestsPerSecond },
        target: { text: '≥ 5,000/s', met: served.requestsPerSecond >= 5_000 },
        notes:
          `p50 ${served.p50Ms} ms / p99 ${served.p99Ms} ms (bare ${floor.p50Ms} / ${floor.p99Ms} ms); ` +
          `server CPU per card ${formatNumber(perCard(served))} µs vs ${formatNumber(perCard(floor))} µs`,
      },
    ];
  } finally {
    for (const child of children) await child.stop();
  }
}
