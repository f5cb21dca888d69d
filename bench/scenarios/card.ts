import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchChild, type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { startService } from '../lib/service.js';
import { formatNumber } from '../lib/stats.js';
import { type WrkLoad, type WrkResult, wrk } from '../lib/wrk.js';

const LOAD: WrkLoad = { connections: 100, threads: 2, seconds: 8 };
const WARMUP: WrkLoad = { ...LOAD, seconds: 3 };

/**
 * Every request a URL of its own (an `idleMessage` that counts up): no two requests are the same card,
 * so each is rendered.
 */
const distinctCards = (path: string) => `
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, "${path}?idleMessage=" .. n)
end
`;

interface Measured extends WrkResult {
  cpuMicros: number;
}

async function measure(child: BenchChild, url: string, script?: string): Promise<Measured> {
  await wrk(url, WARMUP, script);
  const cpuBefore = await child.cpuMicros();
  const result = await wrk(url, LOAD, script);
  const cpuMicros = (await child.cpuMicros()) - cpuBefore;
  if (result.errors > 0)
    throw new Error(`card: ${result.errors} errors from ${child.name} (${result.errorKinds})`);
  return { ...result, cpuMicros };
}

const perCard = (result: Measured) => formatNumber(result.cpuMicros / result.requests);
const latency = (result: Measured) => `p50 ${result.p50Ms} ms / p99 ${result.p99Ms} ms`;

/**
 * `GET /v1/users/:id/card.svg` for a user listening to Spotify, image caches warm (the avatar from the
 * simulated CDN; album art, whose host is out of reach here, as its cached placeholder), against node:http
 * answering the same SVG bytes. Twice: one card asked for by every client (a popular README: rendered once
 * a second, the rest from the render cache), and a different card on every request (rendered each time).
 */
export async function card(): Promise<Row[]> {
  const children: BenchChild[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'presently-bench-card-'));
  try {
    const { child: service, ready } = await startService(children);
    const path = `/v1/users/${ready.userId}/card.svg`;
    // The first render fetches the images (or learns they cannot be had) and caches the outcome.
    const response = await fetch(`${ready.url}${path}`);
    const svg = await response.text();
    if (response.status !== 200) throw new Error(`card: the service answered ${response.status}: ${svg}`);
    const script = join(dir, 'distinct-cards.lua');
    writeFileSync(script, distinctCards(path));
    const popular = await measure(service, `${ready.url}${path}`);
    const distinct = await measure(service, ready.url, script);

    const bare = startChild('bare-http', [], {
      BODY: svg,
      HEADERS: JSON.stringify(Object.fromEntries(response.headers)),
    });
    children.push(bare);
    const floor = await measure(bare, (await bare.next<Message & { url: string }>('ready')).url);

    const size = `${formatNumber(Buffer.byteLength(svg) / 1024)} KiB card`;
    const baseline = { label: 'bare node:http, same SVG bytes', value: floor.requestsPerSecond };
    const target = (result: Measured) => ({ text: '≥ 5,000/s', met: result.requestsPerSecond >= 5_000 });
    return [
      {
        scenario: 'card',
        figure: `cards/s, one card for every client, warm image caches (${size}), wrk ${LOAD.connections} connections`,
        value: popular.requestsPerSecond,
        unit: '/s',
        baseline,
        target: target(popular),
        notes: `${latency(popular)} (bare ${latency(floor)}); server CPU per card ${perCard(popular)} µs vs ${perCard(floor)} µs`,
      },
      {
        scenario: 'card',
        figure: 'cards/s, a different card on every request (each one rendered), warm image caches',
        value: distinct.requestsPerSecond,
        unit: '/s',
        baseline,
        target: target(distinct),
        notes: `${latency(distinct)}; server CPU per card ${perCard(distinct)} µs`,
      },
    ];
  } finally {
    for (const child of children) await child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
