import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Every relative link in the repository's Markdown goes somewhere: to a file that exists, and to a
 * heading of it that exists when it names one. A heading renamed, or a section moved, fails here rather
 * than leaving a reader at the top of the wrong page.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SKIPPED = new Set(['node_modules', '.git', 'dist', 'coverage']);

function markdownFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (SKIPPED.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) found.push(...markdownFiles(path));
    else if (entry.endsWith('.md')) found.push(path);
  }
  return found;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = (heading[1] ?? '')
      .trim()
      .toLowerCase()
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The relative links of a Markdown text, code spans and fenced blocks left out. */
function linksOf(markdown: string): string[] {
  const links: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const text = line.replace(/`[^`]*`/g, '');
    for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links.push(target);
    }
  }
  return links;
}

describe('the Markdown links', () => {
  it('every relative link and anchor resolves', () => {
    const dead: string[] = [];
    for (const file of markdownFiles(ROOT)) {
      const markdown = readFileSync(file, 'utf8');
      for (const link of linksOf(markdown)) {
        const [path = '', anchor] = link.split('#');
        const target = path === '' ? file : resolve(dirname(file), decodeURI(path));
        const where = `${relative(ROOT, file)} → ${link}`;
        if (!existsSync(target)) {
          dead.push(`${where} (no such file)`);
          continue;
        }
        if (anchor === undefined || !target.endsWith('.md')) continue;
        if (!anchorsOf(readFileSync(target, 'utf8')).has(anchor)) dead.push(`${where} (no such heading)`);
      }
    }
    expect(dead).toEqual([]);
  });
});
