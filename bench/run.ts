import { type Row, saveResults } from './lib/results.js';
import { apiNodes } from './scenarios/api-nodes.js';
import { fanout } from './scenarios/fanout.js';
import { ingestHistory } from './scenarios/ingest-history.js';
import { restRead } from './scenarios/rest-read.js';

/**
 * `npm run bench` runs every scenario; `npm run bench -- fanout rest-read` runs those. Each starts what it
 * measures in processes of its own and compares it with a baseline measured in the same run; the table
 * goes to bench/RESULTS.md (rows of scenarios not run are kept).
 */
const SCENARIOS: Record<string, () => Promise<Row[]>> = {
  'rest-read': restRead,
  fanout,
  'ingest-history': ingestHistory,
  'api-nodes': apiNodes,
};

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in SCENARIOS));
if (unknown.length > 0) {
  console.error(`unknown scenario ${unknown.join(', ')}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  process.exit(2);
}
const names = asked.length > 0 ? asked : Object.keys(SCENARIOS);
const rows: Row[] = [];
for (const name of names) {
  console.log(`bench: ${name}…`);
  const started = Date.now();
  rows.push(...(await (SCENARIOS[name] as () => Promise<Row[]>)()));
  console.log(`bench: ${name} done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
console.log(saveResults(names, rows));
process.exit(0);
