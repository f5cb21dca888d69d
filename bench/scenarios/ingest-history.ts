import { type ChildMessage, startChild } from '../lib/child.js';
import type { Row } from '../lib/results.js';

interface Done extends ChildMessage {
  type: string;
  updatesPerSecond: number;
  rows: number;
}

async function run(history: 'on' | 'off'): Promise<Done> {
  const child = startChild('ingest', [], { HISTORY: history });
  try {
    return await child.next<Done>('done', 300_000);
  } finally {
    await child.stop();
  }
}

/** Presence updates through parsing, ingest, normalization and the registry, with history recording on and off. */
export async function ingestHistory(): Promise<Row[]> {
  const off = await run('off');
  const on = await run('on');
  return [
    {
      scenario: 'ingest-history',
      figure: 'PRESENCE_UPDATE dispatches/s, one core, history on',
      value: on.updatesPerSecond,
      unit: '/s',
      baseline: { label: 'same run, history off', value: off.updatesPerSecond },
      target: { text: '≥ 50,000/s with history on', met: on.updatesPerSecond >= 50_000 },
      notes: `history on wrote ${on.rows.toLocaleString('en-US')} history rows to a SQLite file (WAL, synchronous=FULL) in batches; off wrote ${off.rows}`,
    },
  ];
}
