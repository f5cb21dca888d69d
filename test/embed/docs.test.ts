import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  IDS_PER_READ,
  POLL_INTERVAL_MS,
  RECHECK_INTERVAL_MS,
  STREAM_SILENCE_MS,
} from '../../src/embed/feed.js';
import { DEFAULT_LAYOUT, DEFAULT_THEME, LAYOUTS, MAX_FIELDS, THEMES } from '../../src/embed/options.js';
import { EMBED_SIZE_BUDGET_GZIP_BYTES } from '../../src/http/browser-scripts.js';
import { MAX_BULK_IDS } from '../../src/http/bulk-read.js';
import { embedPagePolicy } from '../../src/http/embed/page.js';
import { EMBED_CACHE_CONTROL } from '../../src/http/routes/embed.js';

/** docs/embed.md states what the code does: its numbers, its attributes' values, its custom properties. */

const docs = readFileSync(new URL('../../docs/embed.md', import.meta.url), 'utf8');
const flat = docs.replace(/\s+/g, ' ');
const styles = readFileSync(new URL('../../src/embed/styles.ts', import.meta.url), 'utf8');

/** A table row of the docs, by the code span it starts with, as its cells. */
function row(first: string): string[] {
  const line = docs.split('\n').find((each) => each.startsWith(`| \`${first}\` |`));
  return (line ?? '')
    .split('|')
    .slice(1, -1)
    .map((cell) => cell.trim());
}

describe('docs/embed.md', () => {
  it('gives the size budget, the polling, the bulk reads and the caching the code has', () => {
    expect(flat).toContain(`at most ${EMBED_SIZE_BUDGET_GZIP_BYTES / 1024} KiB gzipped`);
    expect(flat).toContain(`silent ${STREAM_SILENCE_MS / 1000} s after it opened`);
    expect(flat).toContain(`read in bulk every ${POLL_INTERVAL_MS / 1000} s instead`);
    expect(flat).toContain(`up to ${IDS_PER_READ} ids a request`);
    expect(IDS_PER_READ).toBeLessThanOrEqual(MAX_BULK_IDS);
    expect(flat).toContain(`Cache-Control: ${EMBED_CACHE_CONTROL}`);
    expect(flat).toContain(`every presence again every ${RECHECK_INTERVAL_MS / 60_000} min`);
    expect(row('fields')[1]).toContain(`at most ${MAX_FIELDS}`);
    expect(flat).toContain(`or more than ${MAX_FIELDS} fields`);
  });

  it('lists each theme and layout, with the default', () => {
    const theme = row('theme');
    const layout = row('layout');
    for (const value of THEMES) expect(theme[1]).toContain(`\`${value}\``);
    for (const value of LAYOUTS) expect(layout[1]).toContain(`\`${value}\``);
    expect(theme[2]).toBe(`\`${DEFAULT_THEME}\``);
    expect(layout[2]).toBe(`\`${DEFAULT_LAYOUT}\``);
  });

  it('gives every custom property the stylesheet reads, with its defaults, and no other', () => {
    const defaults = new Map<string, string[]>();
    for (const [, name = '', fallback = ''] of styles.matchAll(
      /var\((--presently-[a-z-]+),((?:[^()]|\([^()]*\))*)\)/g,
    )) {
      defaults.set(name, [...(defaults.get(name) ?? []), fallback.replace(/,(?=\S)/g, ', ')]);
    }
    const documented = [...docs.matchAll(/^\| `(--presently-[a-z-]+)` \|/gm)].map(([, name]) => name);
    expect(documented.sort()).toEqual([...defaults.keys()].sort());
    for (const [name, values] of defaults) {
      expect(row(name).slice(1, 1 + values.length), name).toEqual(values.map((value) => `\`${value}\``));
    }
  });

  it('gives the iframe page’s policy', () => {
    expect(flat).toContain(embedPagePolicy('https://cdn.discordapp.com').split('; ').slice(0, 4).join('; '));
  });
});
