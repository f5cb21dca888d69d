import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseChangelog } from '../src/changelog.js';

/** The longest a bullet may be: one sentence of behaviour, read at a glance in `/v1/version`. */
const MAX_BULLET_CHARS = 240;

/** Keep a Changelog's sections, and Internal for what only the project's developers notice. */
const SECTIONS = ['Added', 'Changed', 'Fixed', 'Removed', 'Security', 'Deprecated', 'Internal'];

/** A bullet's text with its code spans blanked, so a `?` or `.` inside code is not read as prose. */
const prose = (bullet: string) => bullet.replace(/`[^`]*`/g, 'code');

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
});

describe('CHANGELOG.md, as /v1/version serves it', () => {
  it("parses, and its newest release is package.json's version", () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const entries = parseChangelog(readFileSync('CHANGELOG.md', 'utf8')).filter(
      (e) => e.version !== 'Unreleased',
    );
    expect(entries[0]?.version).toBe(pkg.version);
    expect(entries[0]?.changes.length).toBeGreaterThan(0);
  });

  it('has only the known sections, and every bullet sits in one', () => {
    const text = readFileSync('CHANGELOG.md', 'utf8');
    const headings = text.split('\n').flatMap((line) => /^###\s+(.*\S)/.exec(line)?.[1] ?? []);
    expect(headings.length).toBeGreaterThan(0);
    expect(headings.filter((heading) => !SECTIONS.includes(heading))).toEqual([]);
    const changes = parseChangelog(text).flatMap((entry) => entry.changes);
    const unsectioned = changes.filter((change) => !SECTIONS.some((name) => change.startsWith(`${name}: `)));
    expect(unsectioned).toEqual([]);
  });

  it(`has bullets of one sentence each, at most ${MAX_BULLET_CHARS} characters`, () => {
    const bullets = readFileSync('CHANGELOG.md', 'utf8')
      .split('\n')
      .flatMap((line) => /^\s*[-*]\s+(.*\S)\s*$/.exec(line)?.[1] ?? []);
    expect(bullets.length).toBeGreaterThan(100);
    expect(bullets.filter((bullet) => bullet.length > MAX_BULLET_CHARS)).toEqual([]);
    const notOneSentence = bullets.filter((bullet) => {
      const text = prose(bullet);
      return !text.endsWith('.') || /[.!?;]\s/.test(text);
    });
    expect(notOneSentence).toEqual([]);
  });
});
