import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/** One line of the results table: a figure next to the baseline measured in the same run. */
export interface Row {
  scenario: string;
  figure: string;
  value: number;
  unit: string;
  /** What the figure is compared with, measured in the same run; null when it is a figure on its own. */
  baseline: { label: string; value: number } | null;
  /** The target as text ("≥ 0.9× baseline"), and whether it was met; null when there is none. */
  target: { text: string; met: boolean } | null;
  notes?: string;
}

const RESULTS_JSON = new URL('../RESULTS.json', import.meta.url);
const RESULTS_MD = new URL('../RESULTS.md', import.meta.url);

export function machine(): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${cpu}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
}

/** Keeps the rows of the scenarios not run this time, replaces the others, and writes RESULTS.md. */
export function saveResults(ran: string[], rows: Row[]): string {
  let kept: Row[] = [];
  try {
    kept = (JSON.parse(readFileSync(RESULTS_JSON, 'utf8')) as { rows: Row[] }).rows;
  } catch {
    // first run
  }
  const all = [...kept.filter((row) => !ran.includes(row.scenario)), ...rows];
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  writeFileSync(RESULTS_JSON, `${JSON.stringify({ machine: machine(), rows: all }, null, 2)}\n`);
  const markdown = render(all, when);
  writeFileSync(RESULTS_MD, markdown);
  return markdown;
}

function render(rows: Row[], when: string): string {
  const format = (value: number): string =>
    value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(value >= 10 ? 1 : 2);
  const lines = [
    '# Benchmark results',
    '',
    `Machine: ${machine()}. Last written ${when} UTC by \`npm run bench\`; every ratio compares two figures`,
    'measured in the same run on this machine.',
    '',
    '| scenario | figure | value | baseline | ratio | target | met |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of rows) {
    const baseline = row.baseline ? `${format(row.baseline.value)} ${row.unit} (${row.baseline.label})` : '–';
    const ratio = row.baseline ? `${(row.value / row.baseline.value).toFixed(2)}×` : '–';
    const met = row.target ? (row.target.met ? 'yes' : '**no**') : '–';
    lines.push(
      `| ${row.scenario} | ${row.figure} | ${format(row.value)} ${row.unit} | ${baseline} | ${ratio} | ${row.target?.text ?? '–'} | ${met} |`,
    );
  }
  const notes = rows.filter((row) => row.notes);
  if (notes.length > 0) {
    lines.push('', 'Notes:', '');
    for (const row of notes) lines.push(`- **${row.scenario}, ${row.figure}**: ${row.notes}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The value at quantile q (0–1) of unsorted samples. */
export function quantile(samples: number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}
