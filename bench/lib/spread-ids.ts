import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchUserId } from './workload.js';

/**
 * A wrk Lua script whose every request is `GET /v1/users/<id>` of a bench user drawn at random among the
 * first `users` (benchUserId(0 … users-1)), each wrk thread with a seed of its own: reads spread over
 * everyone, as many clients asking for many users do, rather than one hot user. Written to a temporary
 * file; returns its path (for wrk's `-s`).
 *
 * The ids are 17-digit snowflakes, beyond a Lua number's exact integers, so the script writes the number
 * n after the ids' common prefix rather than adding n to the first id.
 */
export function spreadIdsScript(users: number): string {
  const first = benchUserId(0);
  const last = benchUserId(users - 1);
  const digits = String(users - 1).length;
  const prefix = first.slice(0, first.length - Math.max(digits, 1));
  if (!last.startsWith(prefix) || `${prefix}${'0'.repeat(first.length - prefix.length)}` !== first) {
    throw new Error(`spreadIdsScript: the ids of ${users} bench users share no prefix`);
  }
  const width = first.length - prefix.length;
  const script = `-- made by bench/lib/spread-ids.ts: GET /v1/users/<id> of one of ${users} bench users at random
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("seed", threads * 7919)
end
function init(args)
  math.randomseed(seed or 1)
end
function request()
  local n = math.random(0, ${users - 1})
  return wrk.format(nil, string.format("/v1/users/${prefix}%0${width}d", n))
end
`;
  const path = join(mkdtempSync(join(tmpdir(), 'presently-wrk-')), 'spread-ids.lua');
  writeFileSync(path, script);
  return path;
}
