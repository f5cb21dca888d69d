import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseChangelog } from '../src/changelog.js';

describe('parseChangelog', () => {
  it('reads releases newest first with their sections', () => {
    const entries = parseChangelog(
      [
        '# Changelog',
        '',
        '## [Unreleased]',
        '',
        '## [0.2.0] - 2026-12-01',
        '### Added',
        '- Sockets',
        '* Cards',
        '### Fixed',
        '- A bug',
        '',
        '## 0.1.0 - 2026-11-22',
        '- First slice',
      ].join('\n'),
    );
    expect(entries).toEqual([
      { version: 'Unreleased', date: '', changes: [] },
      { version: '0.2.0', date: '2026-12-01', changes: ['Added: Sockets', 'Added: Cards', 'Fixed: A bug'] },
      { version: '0.1.0', date: '2026-11-22', changes: ['First slice'] },
    ]);
  });

  it("parses the project's own CHANGELOG, whose newest release is package.json's version", () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const entries = parseChangelog(readFileSync('CHANGELOG.md', 'utf8')).filter(
      (e) => e.version !== 'Unreleased',
    );
    expect(entries[0]?.version).toBe(pkg.version);
    expect(entries[0]?.changes.length).toBeGreaterThan(0);
  });
});
