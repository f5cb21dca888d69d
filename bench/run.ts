import { takeBenchLock } from './lib/lock.js';
import { waitForQuiet } from './lib/machine.js';
import { type Row, saveResults } from './lib/results.js';
import { apiNodes } from './scenarios/api-nodes.js';
import { card } from './scenarios/card.js';
import { fanout } from './scenarios/fanout.js';
import { hostile } from './scenarios/hostile.js';
import { ingestHistory } from './scenarios/ingest-history.js';
import { memory } from './scenarios/memory.js';
import { redisKvCap } from './scenarios/redis-kv-cap.js';
import { restRead } from './scenarios/rest-read.js';
import { socketCapacity } from './scenarios/socket-capacity.js';
import { sse } from './scenarios/sse.js';
import { startup } from './scenarios/startup.js';
import { storage } from './scenarios/storage.js';
import { tickShape } from './scenarios/tick-shape.js';
import { webhookShare } from './scenarios/webhook-share.js';

/**
 * `npm run bench` runs every scenario; `npm run bench -- fanout rest-read` runs those. Each scenario
 * starts what it measures and its baseline in processes of their own, warms them up, measures both in
 * the same run and returns its rows; they go to bench/RESULTS.md, with how each was measured in
 * bench/notes/results-notes.md, where the rows of scenarios not run this time are kept.
 *
 * A new scenario is a file in scenarios/ exporting `async (): Promise<Row[]>`, and a line here.
 */
const SCENARIOS: Record<string, () => Promise<Row[]>> = {
  'rest-read': restRead,
  fanout,
  sse,
  'socket-capacity': socketCapacity,
  'ingest-history': ingestHistory,
  'api-nodes': apiNodes,
  'redis-kv-cap': redisKvCap,
  memory,
  startup,
  card,
  hostile,
  storage,
  'tick-shape': tickShape,
  'webhook-share': webhookShare,
};

const names = Object.keys(SCENARIOS);
const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in SCENARIOS));
if (unknown.length > 0) {
  console.error(`unknown scenario: ${unknown.join(', ')}; known: ${names.join(', ')}`);
  process.exit(2);
}

const lock = takeBenchLock();
if (!lock.held) {
  console.error(
    `bench: another run (pid ${lock.by}, in bench/.running) is measuring this machine; wait for it to finish`,
  );
  process.exit(2);
}

const ran: string[] = [];
const rows: Row[] = [];
let failed = 0;
for (const name of asked.length > 0 ? names.filter((known) => asked.includes(known)) : names) {
  const busy = await waitForQuiet();
  const busyText = busy === undefined ? 'unknown' : `${Math.round(busy * 100)}%`;
  console.log(`bench: ${name}… (machine ${busyText} busy before it)`);
  const started = Date.now();
  try {
    const made = await (SCENARIOS[name] as () => Promise<Row[]>)();
    rows.push(...made.map((row) => ({ ...row, busyBefore: busy })));
    ran.push(name);
    console.log(`bench: ${name} done in ${Math.round((Date.now() - started) / 1000)} s`);
  } catch (error) {
    // The other scenarios still run; this one's rows from an earlier run stay as they were.
    failed++;
    console.error(`bench: ${name} failed:`, error);
  }
}
console.log(saveResults(ran, rows, names));
process.exit(failed > 0 ? 1 : 0);
