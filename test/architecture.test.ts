import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering docs/architecture.md describes, checked on every relative import of src/: the core
 * (presence/) depends on nothing of ours, and the edges depend on the core one way.
 */

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Every relative import of src/, as [importing file, imported file], both relative to src/. */
function imports(): [string, string][] {
  const found: [string, string][] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/from '(\.[^']+)'/g)) {
          const target = normalize(join(dirname(path), match[1] as string));
          found.push([relative(SRC, path), relative(SRC, target)]);
        }
      }
    }
  };
  walk(SRC);
  return found;
}

/** The folder (or root file) a path of src/ belongs to. */
const folderOf = (path: string): string => (path.includes('/') ? (path.split('/')[0] as string) : '(root)');

/** What a folder must not import: the folders it must not depend on. */
const FORBIDDEN: Record<string, readonly string[]> = {
  store: ['kv', 'http', 'socket', 'sse', 'discord'],
  socket: ['http', 'sse', 'discord', 'store'],
  sse: ['http', 'discord', 'store'],
  kv: ['http', 'socket', 'sse', 'discord'],
};

describe('layering', () => {
  const all = imports();

  it('presence/ imports nothing outside itself', () => {
    expect(all.filter(([from, to]) => folderOf(from) === 'presence' && folderOf(to) !== 'presence')).toEqual(
      [],
    );
  });

  it.each(Object.entries(FORBIDDEN))('%s/ depends on none of %j', (folder, forbidden) => {
    const offending = all.filter(
      ([from, to]) => folderOf(from) === folder && forbidden.includes(folderOf(to)),
    );
    expect(offending).toEqual([]);
  });

  it("simulator/ is the demo's alone: no other part of the service imports it", () => {
    expect(
      all.filter(
        ([from, to]) => folderOf(to) === 'simulator' && !['simulator', 'demo'].includes(folderOf(from)),
      ),
    ).toEqual([]);
  });

  it('simulator/ speaks Discord with nothing of the service but presence/ types and the PNG encoder', () => {
    expect(
      all.filter(
        ([from, to]) =>
          folderOf(from) === 'simulator' && !['simulator', 'presence', 'png'].includes(folderOf(to)),
      ),
    ).toEqual([]);
  });

  it('demo/ is wired in by app.ts alone', () => {
    expect(
      all.filter(([from, to]) => folderOf(to) === 'demo' && folderOf(from) !== 'demo' && from !== 'app.ts'),
    ).toEqual([]);
  });

  it('store/ does not read the configuration (config.ts depends on the store, not the other way)', () => {
    expect(all.filter(([from, to]) => folderOf(from) === 'store' && to === 'config.js')).toEqual([]);
  });
});
