import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Row, saveResults } from '../../bench/lib/results.js';

const ORDER = ['rest-read', 'fanout'];

const READS: Row = {
  scenario: 'rest-read',
  figure: 'GET /v1/users/:id',
  value: 40_000,
  unit: 'req/s',
  baseline: { label: 'bare node:http', value: 38_000 },
  target: { text: '≥ 0.9×', met: true },
  notes: 'median of 10 rounds of 3 s per side',
};

const FANOUT: Row = {
  scenario: 'fanout',
  figure: 'deliveries/s to 2,000 sockets',
  value: 50_000,
  unit: '/s',
  baseline: { label: 'bare ws', value: 60_000 },
  target: { text: '≥ 0.9×', met: false },
  notes: '300 updates per side after 50 of warm-up',
};

/** The relative Markdown links of a text, as paths beside the file they are in. */
function linkedPaths(markdown: string, file: URL): string[] {
  return [...markdown.matchAll(/\]\(([^)#]+)\)/g)].map(([, target = '']) =>
    resolve(dirname(fileURLToPath(file)), target),
  );
}

describe('the bench results writer', () => {
  let dir: string;
  let base: URL;
  let files: { json: URL; table: URL; notes: URL };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'presently-results-'));
    base = pathToFileURL(`${dir}/`);
    files = {
      json: new URL('RESULTS.json', base),
      table: new URL('RESULTS.md', base),
      notes: new URL('notes/results-notes.md', base),
    };
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the table to RESULTS.md and the notes on its rows to notes/, in the same run', () => {
    const returned = saveResults(['rest-read', 'fanout'], [FANOUT, READS], ORDER, base);
    const table = readFileSync(files.table, 'utf8');
    const notes = readFileSync(files.notes, 'utf8');

    expect(returned).toBe(table);
    const rows = table.split('\n').filter((line) => /^\| (rest-read|fanout) \|/.test(line));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain(
      '| rest-read | GET /v1/users/:id | 40,000 req/s | 38,000 req/s (bare node:http) |',
    );
    expect(rows[1]).toContain('| fanout |');
    expect(rows[1]).toContain('| **no** |');
    expect(table).not.toContain('## Notes');
    expect(table).not.toContain(READS.notes);
    expect(table).toContain('[notes/results-notes.md](notes/results-notes.md)');
    expect(table).toContain('[notes/PROFILES.md](notes/PROFILES.md)');

    expect(notes).toContain(`- **rest-read**, ${READS.figure}: ${READS.notes}`);
    expect(notes).toContain(`- **fanout**, ${FANOUT.figure}: ${FANOUT.notes}`);
    expect(notes.indexOf('**rest-read**')).toBeLessThan(notes.indexOf('**fanout**'));
    expect(linkedPaths(notes, files.notes)).toEqual([fileURLToPath(files.table)]);
    expect(existsSync(linkedPaths(table, files.table)[0] as string)).toBe(true);
  });

  it("keeps the rows and notes of scenarios not run, and drops a scenario's rows when it runs again", () => {
    saveResults(['rest-read', 'fanout'], [READS, FANOUT], ORDER, base);
    const rerun: Row = { ...FANOUT, value: 58_000, target: { text: '≥ 0.9×', met: true }, notes: 'rerun' };
    saveResults(['fanout'], [rerun], ORDER, base);

    const table = readFileSync(files.table, 'utf8');
    const notes = readFileSync(files.notes, 'utf8');
    expect(table).toContain('40,000 req/s');
    expect(table).toContain('58,000 /s');
    expect(table).not.toContain('50,000 /s');
    expect(table).not.toContain('PROFILES.md');
    expect(notes).toContain(READS.notes);
    expect(notes).toContain('- **fanout**, deliveries/s to 2,000 sockets: rerun');
    expect(notes).not.toContain(FANOUT.notes);
    const stored = JSON.parse(readFileSync(files.json, 'utf8')) as { rows: Row[] };
    expect(stored.rows.map((row) => row.scenario)).toEqual(['rest-read', 'fanout']);
  });
});
