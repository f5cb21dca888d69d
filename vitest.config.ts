import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

// An unsupported Node is refused before any test starts: better-sqlite3 would crash the workers instead.
const { nodeProblem } = createRequire(import.meta.url)('./scripts/check-node.cjs') as {
  nodeProblem(version: string, where?: string): string | null;
};
const problem = nodeProblem(process.versions.node, process.execPath);
if (problem) throw new Error(problem);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: 'forks',
  },
});
