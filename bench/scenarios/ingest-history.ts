import { type Message, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';
import { formatNumber, median } from '../lib/stats.js';

interface Done extends Message {
  updatesPerSecond: number;
  cpuMicrosPerUpdate: number;
  /** Of it, the event loop's thread alone. */
  mainCpuMicrosPerUpdate: number;
  users: number;
  updates: number;
  changes: number;
  rows: number;
  /** Bytes of each dispatch as it arrived, compressed or not. */
  wireBytesPerUpdate: number;
}

/** Each run is a fresh process, so one run's heap and JIT state never help or hurt the next. */
type Mode = 'on' | 'off' | 'floor' | 'store' | 'zlib';

async function once(mode: Mode): Promise<Done> {
  // zlib: history off, each dispatch arriving through Discord's transport compression.
  const env: Record<string, string> =
    mode === 'zlib' ? { HISTORY: 'off', TRANSPORT: 'zlib-stream' } : { HISTORY: mode };
  const child = startChild('ingest', [], env);
  try {
    return await child.next<Done>('done', 300_000);
  } finally {
    await child.stop();
  }
}

/**
 * Presence updates per second through parsing, the ingest, normalization and the registry, with the
 * history recorder writing to SQLite, against the same without history; two runs each, interleaved, so a
 * drift of the machine weighs on both alike. A second row puts the ingest without history next to the
 * floor: the same dispatches only parsed and written back as JSON, which any ingest must do at least.
 */
export async function ingestHistory(): Promise<Row[]> {
  const runs: Record<Mode, Done[]> = { on: [], off: [], floor: [], store: [], zlib: [] };
  const order = ['off', 'on', 'floor', 'store', 'zlib', 'zlib', 'on', 'off', 'floor', 'store'] as const;
  for (const mode of order) runs[mode].push(await once(mode));
  const rate = (list: Done[]) => median(list.map((done) => done.updatesPerSecond));
  const cpu = (list: Done[]) => median(list.map((done) => done.cpuMicrosPerUpdate));
  const mainCpu = (list: Done[]) => median(list.map((done) => done.mainCpuMicrosPerUpdate));
  const on = runs.on[0] as Done;
  const off = runs.off[0] as Done;
  const store = runs.store[0] as Done;
  if (on.rows === 0) throw new Error('ingest-history: history on recorded nothing');
  if (store.rows !== on.rows) {
    throw new Error(`ingest-history: the store alone wrote ${store.rows} rows, history on ${on.rows}`);
  }
  /** At most this many dispatches a second on one core, for the JSON floor and the history writes alone. */
  const floorAndStore = 1e6 / (cpu(runs.floor) + cpu(runs.store));
  const bytes = (list: Done[]) => median(list.map((done) => done.wireBytesPerUpdate));
  return [
    {
      scenario: 'ingest-history',
      figure: 'PRESENCE_UPDATE dispatches/s, history on, its SQLite writes on a thread of their own',
      value: rate(runs.on),
      unit: '/s',
      baseline: { label: 'history off', value: rate(runs.off) },
      target: { text: '≥ 50,000/s with history on', met: rate(runs.on) >= 50_000 },
      notes:
        `${formatNumber(on.updates)} dispatches over ${formatNumber(on.users)} users (track changes, per-guild copies, status and ` +
        `custom status changes: ${formatNumber(on.changes)} presence changes); history on wrote ` +
        `${formatNumber(on.rows)} history rows to a SQLite file (WAL, synchronous=FULL) from the SQLite write thread, off ${off.rows}; ` +
        `process CPU per dispatch ${formatNumber(cpu(runs.on))} µs vs ${formatNumber(cpu(runs.off))} µs; median of 2 runs each`,
    },
    {
      scenario: 'ingest-history',
      figure: 'event-loop thread CPU per PRESENCE_UPDATE dispatch, history on',
      value: mainCpu(runs.on),
      unit: 'µs',
      baseline: { label: 'history off', value: mainCpu(runs.off) },
      target: { text: '≤ 20 µs (50,000/s on one core)', met: mainCpu(runs.on) <= 20 },
      notes:
        `the thread that parses, normalizes, renders and hands history batches over, from the kernel's count ` +
        `of its time on a core; the process's other threads (the SQLite write thread, V8's and ` +
        `libuv's) ${formatNumber(cpu(runs.on) - mainCpu(runs.on))} µs per dispatch with history on, ` +
        `${formatNumber(cpu(runs.off) - mainCpu(runs.off))} µs off`,
    },
    {
      scenario: 'ingest-history',
      figure: 'PRESENCE_UPDATE dispatches/s, one core, history off',
      value: rate(runs.off),
      unit: '/s',
      baseline: {
        label: 'JSON floor: JSON.parse of each dispatch + JSON.stringify of its data',
        value: rate(runs.floor),
      },
      target: null,
      notes:
        `what normalization, change detection, the registry and the one serialization per change add to the ` +
        `JSON work alone; CPU per dispatch ${formatNumber(cpu(runs.off))} µs vs ${formatNumber(cpu(runs.floor))} µs`,
    },
    {
      scenario: 'ingest-history',
      figure: 'SQLite history writes alone, in dispatches/s, one core',
      value: rate(runs.store),
      unit: '/s',
      baseline: { label: 'the JSON floor and these writes together, at most', value: floorAndStore },
      target: null,
      notes:
        `the batches history on writes for the same dispatches, kept while the ingest ran unclocked and ` +
        `written in the clock to a fresh SQLite file by the same store (${formatNumber(store.rows)} rows): ` +
        `CPU per dispatch ${formatNumber(cpu(runs.store))} µs. With the floor's ` +
        `${formatNumber(cpu(runs.floor))} µs, that leaves ${formatNumber(1e6 / 50_000 - cpu(runs.floor) - cpu(runs.store))} µs ` +
        `a dispatch for normalization, change detection, the registry, serialization and the recorder's rules ` +
        `within 50,000/s on one core; history off spends ${formatNumber(cpu(runs.off) - cpu(runs.floor))} µs on them`,
    },
    {
      scenario: 'ingest-history',
      figure:
        'PRESENCE_UPDATE dispatches/s, one core, history off, through transport compression (zlib-stream)',
      value: rate(runs.zlib),
      unit: '/s',
      baseline: { label: 'the same dispatches uncompressed', value: rate(runs.off) },
      target: null,
      notes:
        `GATEWAY_COMPRESSION=zlib-stream: each dispatch inflated from one zlib stream as @discordjs/ws does ` +
        `with node:zlib (an asynchronous write per message), then the same ingest. Process CPU per dispatch ` +
        `${formatNumber(cpu(runs.zlib))} µs vs ${formatNumber(cpu(runs.off))} µs uncompressed; bytes per ` +
        `dispatch on the wire ${formatNumber(bytes(runs.zlib))} vs ${formatNumber(bytes(runs.off))}; median of 2 runs each`,
    },
  ];
}
