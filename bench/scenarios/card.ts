import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BenchChild, type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { startService } from '../lib/service.js';
import { formatNumber } from '../lib/stats.js';
import { type WrkLoad, type WrkResult, wrk } from '../lib/wrk.js';

const LOAD: WrkLoad = { connections: 100, threads: 2, seconds: 8 };
const WARMUP_SECONDS = 3;
/**
 * As many clients as PNGs are drawn at once (two): each request finds a free drawing, so the latency is
 * the render's own, not a queue's.
 */
const FEW: WrkLoad = { connections: 2, threads: 1, seconds: 6 };
/** The render time a card may take at p99. */
const RENDER_TARGET_MS = 50;

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

async function measure(child: BenchChild, url: string, script?: string, load = LOAD): Promise<Measured> {
  // Warmed with its own load: a warm-up of more clients would leave renders queued into the measurement.
  await wrk(url, { ...load, seconds: WARMUP_SECONDS }, script);
  const cpuBefore = await child.cpuMicros();
  const result = await wrk(url, load, script);
  const cpuMicros = (await child.cpuMicros()) - cpuBefore;
  if (result.errors > 0)
    throw new Error(`card: ${result.errors} errors from ${child.name} (${result.errorKinds})`);
  return { ...result, cpuMicros };
}

const perCard = (result: Measured) => formatNumber(result.cpuMicros / result.requests);
const latency = (result: Measured) => `p50 ${result.p50Ms} ms / p99 ${result.p99Ms} ms`;

/**
 * `GET /v1/users/:id/card.svg` and `card.png` for a user listening to Spotify, image caches warm (the
 * avatar from the simulated CDN; album art, whose host is out of reach here, as its cached placeholder),
 * against node:http answering the same SVG bytes. For each format: one card asked for by every client (a
 * popular README: rendered once a second, the rest from the render cache), a different card on every
 * request (rendered each time), and the latter from a few clients, whose p99 is the render's own time.
 */
export async function card(): Promise<Row[]> {
  const children: BenchChild[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'presently-bench-card-'));
  try {
    const { child: service, ready } = await startService(children);
    const measured = async (format: 'svg' | 'png') => {
      const path = `/v1/users/${ready.userId}/card.${format}`;
      // The first render fetches the images (or learns they cannot be had) and caches the outcome.
      const response = await fetch(`${ready.url}${path}`);
      const body = Buffer.from(await response.arrayBuffer());
      if (response.status !== 200) throw new Error(`card: the service answered ${response.status}: ${body}`);
      const script = join(dir, `distinct-${format}.lua`);
      writeFileSync(script, distinctCards(path));
      return {
        response,
        body,
        popular: await measure(service, `${ready.url}${path}`),
        distinct: await measure(service, ready.url, script),
        few: await measure(service, ready.url, script, FEW),
      };
    };
    const svg = await measured('svg');
    const png = await measured('png');

    const bare = startChild('bare-http', [], {
      BODY: svg.body.toString(),
      HEADERS: JSON.stringify(Object.fromEntries(svg.response.headers)),
    });
    children.push(bare);
    const floor = await measure(bare, (await bare.next<Message & { url: string }>('ready')).url);

    const size = (body: Buffer) => `${formatNumber(body.length / 1024)} KiB card`;
    const baseline = { label: 'bare node:http, same SVG bytes', value: floor.requestsPerSecond };
    const target = (result: Measured) => ({ text: '≥ 5,000/s', met: result.requestsPerSecond >= 5_000 });
    const pngTarget = (result: Measured) => ({ text: '≥ 200/s', met: result.requestsPerSecond >= 200 });
    const renderRow = (format: string, result: Measured): Row => ({
      scenario: 'card',
      figure: `p99 latency of a ${format} card rendered on request, ${FEW.connections} clients`,
      value: result.p99Ms,
      unit: 'ms',
      baseline: null,
      target: { text: `≤ ${RENDER_TARGET_MS} ms`, met: result.p99Ms <= RENDER_TARGET_MS },
      notes: `a different card on every request, wrk ${FEW.connections} connections: ${latency(result)}, ${formatNumber(result.requestsPerSecond)}/s; server CPU per card ${perCard(result)} µs`,
    });
    return [
      {
        scenario: 'card',
        figure: `cards/s, one card for every client, warm image caches (${size(svg.body)}), wrk ${LOAD.connections} connections`,
        value: svg.popular.requestsPerSecond,
        unit: '/s',
        baseline,
        target: target(svg.popular),
        notes: `${latency(svg.popular)} (bare ${latency(floor)}); server CPU per card ${perCard(svg.popular)} µs vs ${perCard(floor)} µs; the card carries the glyphs of its text in its own font`,
      },
      {
        scenario: 'card',
        figure: 'server CPU per card, one card for every client',
        value: svg.popular.cpuMicros / svg.popular.requests,
        unit: 'µs',
        baseline: { label: 'bare node:http, same SVG bytes', value: floor.cpuMicros / floor.requests },
        target: null,
        notes: `a different card on every request: ${perCard(svg.distinct)} µs (SVG), ${perCard(png.distinct)} µs (PNG)`,
      },
      {
        scenario: 'card',
        figure: 'cards/s, a different card on every request (each one rendered), warm image caches',
        value: svg.distinct.requestsPerSecond,
        unit: '/s',
        baseline,
        target: target(svg.distinct),
        notes: `${latency(svg.distinct)}; server CPU per card ${perCard(svg.distinct)} µs`,
      },
      renderRow('SVG', svg.few),
      {
        scenario: 'card',
        figure: `PNG cards/s, one card for every client (${size(png.body)}), wrk ${LOAD.connections} connections`,
        value: png.popular.requestsPerSecond,
        unit: '/s',
        baseline: { label: 'the SVG card, same run', value: svg.popular.requestsPerSecond },
        target: target(png.popular),
        notes: `${latency(png.popular)}; server CPU per card ${perCard(png.popular)} µs`,
      },
      {
        scenario: 'card',
        figure: 'PNG cards/s, a different card on every request (each one rasterized)',
        value: png.distinct.requestsPerSecond,
        unit: '/s',
        baseline: {
          label: 'the SVG card rendered on every request, same run',
          value: svg.distinct.requestsPerSecond,
        },
        target: pngTarget(png.distinct),
        notes: `${latency(png.distinct)}; server CPU per card ${perCard(png.distinct)} µs (resvg runs on libuv's pool, two at a time; its CPU is the process's)`,
      },
      renderRow('PNG', png.few),
    ];
  } finally {
    for (const child of children) await child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
