import { readFileSync } from 'node:fs';

/**
 * Where the heap grew between two heap snapshots of one process, per unit (e.g. per user added):
 *
 *   BENCH_PROFILE_DIR=/tmp/prof BENCH_MEMORY_USERS=100000 npm run bench -- memory
 *   node --max-old-space-size=12000 --import tsx bench/heap-summary.ts \
 *     /tmp/prof/before-fill.heapsnapshot /tmp/prof/after-fill.heapsnapshot 99000
 *
 * The memory scenario has the first run's service (bench/processes/populated-service.ts) write a snapshot
 * with 1,000 users (before-fill) and one after filling it to BENCH_MEMORY_USERS (after-fill), so the unit
 * is BENCH_MEMORY_USERS − 1,000 users; <dir>/fill.cpuprofile is the CPU profile of that fill, and
 * <dir>/reads.cpuprofile of a round of reads over all the users. Plain objects all show as "Object" in
 * a snapshot, so objects are told apart by their first property names (their shape), and what an object
 * holds alone (its strings, its property store, arrays) is counted with it: each string or internal node
 * goes to the first object found referring to it. The total is the growth of the self sizes; a buffer's
 * contents show as "native system / JSArrayBufferData", the allocator's and V8's own bookkeeping outside
 * the heap not at all. A snapshot is read whole: up to about 500 MB of snapshot (V8's longest string).
 */
interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Self size per group (a shape, or a type/name for what is not a plain object). */
function summarize(path: string): Map<string, { bytes: number; count: number }> {
  const data = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const { meta } = data.snapshot;
  const nodeWidth = meta.node_fields.length;
  const edgeWidth = meta.edge_fields.length;
  const [TYPE, NAME, , SIZE, EDGES] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((field) =>
    meta.node_fields.indexOf(field),
  ) as [number, number, number, number, number];
  const [EDGE_TYPE, EDGE_NAME, EDGE_TO] = ['type', 'name_or_index', 'to_node'].map((field) =>
    meta.edge_fields.indexOf(field),
  ) as [number, number, number];
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const { nodes, edges, strings } = data;
  const count = nodes.length / nodeWidth;
  const owned = new Set(['string', 'concatenated string', 'sliced string', 'hidden', 'array', 'number']);

  // Each node's label; objects by shape.
  const label: string[] = new Array(count);
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += (nodes[i * nodeWidth + EDGES] as number) * edgeWidth;
    firstEdge[i + 1] = e;
  }
  for (let i = 0; i < count; i++) {
    const type = nodeTypes[nodes[i * nodeWidth + TYPE] as number] as string;
    const name = strings[nodes[i * nodeWidth + NAME] as number] as string;
    if (type === 'object' && name === 'Object') {
      const keys: string[] = [];
      for (
        let e = firstEdge[i] as number;
        e < (firstEdge[i + 1] as number) && keys.length < 4;
        e += edgeWidth
      ) {
        if (edgeTypes[edges[e + EDGE_TYPE] as number] === 'property') {
          keys.push(strings[edges[e + EDGE_NAME] as number] as string);
        }
      }
      label[i] = `Object {${keys.join(', ')}${keys.length === 4 ? ', …' : ''}}`;
    } else if (type === 'object' || type === 'closure' || type === 'native') {
      label[i] = `${type} ${name}`;
    }
  }
  // What objects hold alone: strings and internal nodes go to the first object that refers to them.
  const owner = new Int32Array(count).fill(-1);
  for (let i = 0; i < count; i++) {
    if (label[i] === undefined) continue;
    for (let e = firstEdge[i] as number; e < (firstEdge[i + 1] as number); e += edgeWidth) {
      if (edgeTypes[edges[e + EDGE_TYPE] as number] === 'weak') continue;
      const to = (edges[e + EDGE_TO] as number) / nodeWidth;
      if (owner[to] === -1 && label[to] === undefined) {
        const type = nodeTypes[nodes[to * nodeWidth + TYPE] as number] as string;
        if (owned.has(type)) owner[to] = i;
      }
    }
  }
  const groups = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < count; i++) {
    const size = nodes[i * nodeWidth + SIZE] as number;
    let key = label[i];
    if (key === undefined) {
      const type = nodeTypes[nodes[i * nodeWidth + TYPE] as number] as string;
      const parent = owner[i] as number;
      key =
        parent >= 0
          ? `${label[parent]} (held: ${type})`
          : `${type} ${type === 'string' ? '' : (strings[nodes[i * nodeWidth + NAME] as number] as string).slice(0, 40)}`;
    }
    const group = groups.get(key) ?? { bytes: 0, count: 0 };
    group.bytes += size;
    group.count++;
    groups.set(key, group);
  }
  return groups;
}

const [beforePath, afterPath, unitsText] = process.argv.slice(2);
if (!beforePath || !afterPath) {
  console.error('usage: heap-summary.ts before.heapsnapshot after.heapsnapshot [units]');
  process.exit(2);
}
const units = Number(unitsText ?? 1);
const before = summarize(beforePath);
const after = summarize(afterPath);
const rows = [...after].map(([key, group]) => {
  const was = before.get(key) ?? { bytes: 0, count: 0 };
  return { key, bytes: (group.bytes - was.bytes) / units, count: (group.count - was.count) / units };
});
rows.sort((a, b) => b.bytes - a.bytes);
const total = rows.reduce((sum, row) => sum + row.bytes, 0);
console.log(`heap growth per unit: ${total.toFixed(0)} B (self sizes, ${units} units)`);
for (const row of rows.filter((row) => Math.abs(row.bytes) >= 4)) {
  console.log(`${row.bytes.toFixed(1).padStart(9)} B  ${row.count.toFixed(2).padStart(7)}×  ${row.key}`);
}
