import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** Each bench scenario is a file of bench/scenarios/, named as `npm run bench -- <name>` takes it. */
const SCENARIOS = readdirSync('bench/scenarios')
  .filter((file) => file.endsWith('.ts'))
  .map((file) => file.slice(0, -'.ts'.length));

describe('docs/performance.md', () => {
  const headings = readFileSync('docs/performance.md', 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('## '));

  it('has one section per bench scenario, naming it', () => {
    for (const scenario of SCENARIOS) {
      expect(headings.filter((heading) => heading.endsWith(`(\`${scenario}\`)`))).toHaveLength(1);
    }
    expect(headings.length).toBe(SCENARIOS.length + 1);
  });
});
