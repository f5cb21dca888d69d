import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering docs/architecture.md describes, checked on every relative import of src/: the core
 * (presence/) depends on nothing of ours, the edges depend on the core one way, and no folders depend on
 * each other round a cycle.
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

/**
 * The composition root: these files of src/ wire every folder together (config.ts reads each part's
 * configuration by that part's own rules), so they may import any folder and be imported by any.
 */
const COMPOSITION_ROOT = ['app', 'main', 'config', 'config-variables', 'cli'];
const inCompositionRoot = (path: string): boolean =>
  !path.includes('/') && COMPOSITION_ROOT.includes(path.replace(/\.[jt]s$/, ''));

/**
 * Which folders import which, the composition root left out and the other root files (log.ts,
 * redact-url.ts, ...) counted as one '(root)': for each edge, the imports that make it.
 */
function folderGraph(all: readonly [string, string][]): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const [from, to] of all) {
    if (inCompositionRoot(from) || inCompositionRoot(to)) continue;
    const [source, target] = [folderOf(from), folderOf(to)];
    if (source === target) continue;
    const edges = graph.get(source) ?? new Map<string, string[]>();
    graph.set(source, edges);
    edges.set(target, [...(edges.get(target) ?? []), `${from} → ${to}`]);
  }
  return graph;
}

/**
 * Every cycle between folders, each once as the shortest path from its first folder (in name order) back to
 * itself, with one import for each step: 'a → b → a (a/x.ts → b/y.js; b/z.ts → a/w.js)'.
 */
function folderCycles(graph: Map<string, Map<string, string[]>>): string[] {
  const cycles = new Set<string>();
  for (const start of [...graph.keys()].sort()) {
    // Breadth first from start's neighbours back to start, through folders after it in name order only,
    // so each cycle is found from its smallest folder alone.
    const cameFrom = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const folder = queue.shift() as string;
      for (const next of [...(graph.get(folder)?.keys() ?? [])].sort()) {
        if (next === start) {
          const path = [start];
          for (let at = folder; at !== start; at = cameFrom.get(at) as string) path.splice(1, 0, at);
          path.push(start);
          const steps = path.slice(1).map((to, i) => graph.get(path[i] as string)?.get(to)?.[0]);
          cycles.add(`${path.join(' → ')} (${steps.join('; ')})`);
        } else if (next > start && !cameFrom.has(next)) {
          cameFrom.set(next, folder);
          queue.push(next);
        }
      }
    }
  }
  return [...cycles];
}

/** What a folder must not import: the folders it must not depend on. */
const FORBIDDEN: Record<string, readonly string[]> = {
  store: ['kv', 'http', 'socket', 'sse', 'discord'],
  socket: ['http', 'sse', 'discord', 'store'],
  sse: ['http', 'discord', 'store'],
  kv: ['http', 'socket', 'sse', 'discord'],
  // The agent endpoint: served over HTTP by http/, it reads what REST reads (the view, history/), never the store.
  mcp: ['http', 'socket', 'sse', 'store'],
  // The cards drawn from plain values: http/ serves them, and the renderer knows nothing of requests.
  card: ['http', 'socket', 'sse', 'store', 'discord'],
  // The limits themselves (budgets, caps, shares): http/, socket/ and sse/ apply them to what they serve.
  limits: ['http', 'socket', 'sse', 'store', 'discord'],
};

describe('layering', () => {
  const all = imports();

  it('collections/ imports nothing of ours outside itself', () => {
    expect(
      all.filter(([from, to]) => folderOf(from) === 'collections' && folderOf(to) !== 'collections'),
    ).toEqual([]);
  });

  it('presence/ imports nothing outside itself but collections/', () => {
    expect(
      all.filter(
        ([from, to]) => folderOf(from) === 'presence' && !['presence', 'collections'].includes(folderOf(to)),
      ),
    ).toEqual([]);
  });

  it('model/ imports nothing outside itself but presence/ and collections/', () => {
    expect(
      all.filter(
        ([from, to]) =>
          folderOf(from) === 'model' && !['model', 'presence', 'collections'].includes(folderOf(to)),
      ),
    ).toEqual([]);
  });

  it('presence/ keeps its rules in normalize/, its state in registry/ and its model at its root', () => {
    const root = readdirSync(join(SRC, 'presence'), { withFileTypes: true });
    expect(root.filter((entry) => entry.isDirectory()).map((entry) => entry.name)).toEqual([
      'normalize',
      'registry',
    ]);
    expect(root.filter((entry) => entry.isFile()).map((entry) => entry.name)).toEqual([
      'model.ts',
      'privacy.ts',
      'snowflake.ts',
    ]);
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
          folderOf(from) === 'simulator' &&
          !['simulator', 'presence', 'collections', 'png'].includes(folderOf(to)),
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

  it('no folders import each other, directly or round a longer cycle (the composition root aside)', () => {
    expect(folderCycles(folderGraph(all))).toEqual([]);
  });

  it('the root files outside the composition root (log.ts, version.ts, ...) import no folder', () => {
    expect([...(folderGraph(all).get('(root)')?.values() ?? [])].flat()).toEqual([]);
  });
});
