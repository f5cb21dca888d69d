import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { defineConfig } from 'vitest/config';

// An unsupported Node is refused before any test starts: better-sqlite3 would crash the workers instead.
const { nodeProblem } = createRequire(import.meta.url)('./scripts/check-node.cjs') as {
  nodeProblem(version: string, where?: string): string | null;
};
const problem = nodeProblem(process.versions.node, process.execPath);
if (problem) throw new Error(problem);

/**
 * The three projects, told apart by what a test file uses (itself or through the test files it imports), so
 * that no list is kept by hand:
 * - external: a browser, PostgreSQL, or the real reverse proxies of test/deploy/;
 * - integration: a server, a socket, a database, Redis, a simulated Discord or a process of its own;
 * - unit: none of these, only our functions and classes: `npm run test:unit`.
 */
const EXTERNAL = /^(playwright-core|pg)$/;
const INTEGRATION =
  /^(ws|better-sqlite3|ioredis|fastify|undici|node:(child_process|net|http|https|worker_threads))$|^src\/(app|simulator|store|http\/server)\b/;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/**
 * What a test file imports (types aside; our modules as paths from the root, `src/app.js`), itself and
 * through the files of test/ it imports, however deep.
 */
function importsOf(path: string, seen = new Set<string>()): string[] {
  if (seen.has(path)) return [];
  seen.add(path);
  const text = readFileSync(path, 'utf8');
  const imports = [...text.matchAll(/^import (?!type )[^;]*?from '([^']+)'/gms)].map((match) => {
    const specifier = match[1] as string;
    return specifier.startsWith('.') ? join(dirname(path), specifier) : specifier;
  });
  const local = imports
    .filter((target) => target.startsWith('test/'))
    .map((target) => target.replace(/\.js$/, '.ts'))
    .filter((target) => existsSync(target));
  return [...imports, ...local.flatMap((target) => importsOf(target, seen))];
}

const projectOf = (path: string): 'unit' | 'integration' | 'external' => {
  const imports = importsOf(path);
  if (path.startsWith('test/deploy/') || imports.some((specifier) => EXTERNAL.test(specifier)))
    return 'external';
  return imports.some((specifier) => INTEGRATION.test(specifier)) ? 'integration' : 'unit';
};

const files = testFiles('test');
const filesOf = (project: ReturnType<typeof projectOf>) =>
  files.filter((path) => projectOf(path) === project);

/**
 * Files run side by side, one per core, and a worker's files share its module cache (no isolation):
 * importing the service once per worker rather than once per file is most of the suite's speed.
 * restore-globals.ts puts back what a file faked before the next one runs.
 */
export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
    isolate: false,
    maxWorkers: availableParallelism(),
    minWorkers: 1,
    setupFiles: ['test/support/restore-globals.ts'],
    unstubEnvs: true,
    unstubGlobals: true,
    projects: [
      { extends: true, test: { name: 'unit', include: filesOf('unit'), pool: 'threads' } },
      { extends: true, test: { name: 'integration', include: filesOf('integration') } },
      { extends: true, test: { name: 'external', include: filesOf('external') } },
    ],
  },
});
