import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { machine } from './machine.js';
import { formatNumber } from './stats.js';

/** One line of the results table: a figure next to the baseline measured in the same run. */
export interface Row {
  scenario: string;
  figure: string;
  value: number;
  unit: string;
  /** What the figure is compared with, measured in the same run; null when it stands alone. */
  baseline: { label: string; value: number } | null;
  /** The target as text (e.g. "≥ 0.9×") and whether this run met it; null when there is none. */
  target: { text: string; met: boolean } | null;
  notes?: string;
  /** How busy the machine was (0–1) just before the scenario started, other processes included. */
  busyBefore?: number | undefined;
}

/** A row as stored: when and where it was measured, so rows kept from an earlier run say so. */
interface StoredRow extends Row {
  measured: string;
  machine: string;
}

/**
 * The bench's folder. The rows live in JSON next to the table, so running one scenario can replace its
 * rows and keep the rest; the notes on how each row was measured go under notes/, out of a reader's way.
 */
const BENCH_DIR = new URL('..', import.meta.url);

/**
 * Replaces the rows of the scenarios that ran (all of theirs, even a row a scenario no longer makes),
 * keeps the others, and rewrites RESULTS.md and notes/results-notes.md of `dir` in registry order.
 * Returns the table.
 */
export function saveResults(
  ran: readonly string[],
  rows: readonly Row[],
  order: readonly string[],
  dir: URL = BENCH_DIR,
): string {
  const files = {
    json: new URL('RESULTS.json', dir),
    table: new URL('RESULTS.md', dir),
    notes: new URL('notes/results-notes.md', dir),
  };
  const now = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const here = machine();
  const kept = readStored(files.json).filter((row) => !ran.includes(row.scenario));
  const fresh = rows.map((row): StoredRow => ({ ...row, measured: now, machine: here }));
  const rank = (row: StoredRow) => {
    const index = order.indexOf(row.scenario);
    return index < 0 ? order.length : index;
  };
  // A stable sort: within a scenario the rows keep the order the scenario gave them.
  const all = [...kept, ...fresh].sort((a, b) => rank(a) - rank(b));
  writeFileSync(files.json, `${JSON.stringify({ rows: all }, null, 2)}\n`);
  const table = renderTable(all, here);
  writeFileSync(files.table, table);
  mkdirSync(new URL('notes/', dir), { recursive: true });
  writeFileSync(files.notes, renderNotes(all));
  return table;
}

function readStored(json: URL): StoredRow[] {
  try {
    const parsed = JSON.parse(readFileSync(json, 'utf8')) as { rows?: (Row & Partial<StoredRow>)[] };
    // Rows written before rows carried their date and machine are kept, marked as such.
    return (parsed.rows ?? []).map((row) => ({
      ...row,
      measured: row.measured ?? '?',
      machine: row.machine ?? 'unknown',
    }));
  } catch {
    return [];
  }
}

function renderTable(rows: readonly StoredRow[], here: string): string {
  const lines = [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (see docs/performance.md). Every ratio compares two figures measured in',
    'the same run on the same machine; the absolute figures are this machine’s.',
    '',
    `Machine: ${here}.`,
    '',
    '| scenario | figure | value | baseline (same run) | ratio | target | met | measured (UTC) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of rows) lines.push(tableLine(row));
  lines.push('', 'How each row was measured: [notes/results-notes.md](notes/results-notes.md).');
  if (rows.some((row) => row.target && !row.target.met)) {
    lines.push(
      '',
      'Where the time goes in a scenario whose target is not met, from its CPU profiles: [notes/PROFILES.md](notes/PROFILES.md).',
    );
  }
  const elsewhere = [...new Set(rows.filter((row) => row.machine !== here).map((row) => row.machine))];
  for (const other of elsewhere) lines.push('', `Some rows were measured on another machine: ${other}.`);
  return `${lines.join('\n')}\n`;
}

function renderNotes(rows: readonly StoredRow[]): string {
  const lines = [
    '# Benchmark notes',
    '',
    'Written by `npm run bench` with [RESULTS.md](../RESULTS.md): how each row of its table was measured.',
    '',
  ];
  for (const row of rows.filter((row) => row.notes)) {
    lines.push(`- **${row.scenario}**, ${row.figure}: ${row.notes}`);
  }
  return `${lines.join('\n')}\n`;
}

function tableLine(row: StoredRow): string {
  const value = `${formatNumber(row.value)} ${row.unit}`;
  const baseline = row.baseline
    ? `${formatNumber(row.baseline.value)} ${row.unit} (${row.baseline.label})`
    : '–';
  const ratio = row.baseline ? `${(row.value / row.baseline.value).toFixed(2)}×` : '–';
  const met = row.target ? (row.target.met ? 'yes' : '**no**') : '–';
  const cells = [
    row.scenario,
    row.figure,
    value,
    baseline,
    ratio,
    row.target?.text ?? '–',
    met,
    row.measured,
  ];
  return `| ${cells.join(' | ')} |`;
}
