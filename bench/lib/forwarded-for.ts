import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Addresses of the benchmarking range (198.18.0.0/15, RFC 2544) this many clients can have. */
const RANGE_SIZE = 2 * 65_536;

/**
 * A wrk Lua script whose requests say, in `X-Forwarded-For`, that they come from `clients` clients in turn
 * (198.18.0.0, 198.18.0.1, …), as a proxy in front of the service says: with `TRUST_PROXY` naming wrk's
 * address, every per-client limit counts each of them apart. Each wrk thread starts at a different client
 * and builds its requests once, so a request costs wrk no more than a fixed one. Written to a temporary
 * file; returns its path (for wrk's `-s`).
 */
export function forwardedForScript(clients: number): string {
  if (clients < 1 || clients > RANGE_SIZE) {
    throw new Error(`forwardedForScript: 1 to ${RANGE_SIZE} clients, not ${clients}`);
  }
  const script = `-- made by bench/lib/forwarded-for.ts: X-Forwarded-For naming ${clients} clients in turn
local threads = 0
function setup(thread)
  thread:set("first", threads * 997)
  threads = threads + 1
end
local requests = {}
local turn = 1
function init(args)
  for i = 0, ${clients - 1} do
    local n = (i + (first or 0)) % ${clients}
    local address = string.format("198.%d.%d.%d", 18 + math.floor(n / 65536), math.floor(n / 256) % 256, n % 256)
    requests[i + 1] = wrk.format(nil, nil, { ["X-Forwarded-For"] = address })
  end
end
function request()
  local made = requests[turn]
  turn = turn % ${clients} + 1
  return made
end
`;
  const path = join(mkdtempSync(join(tmpdir(), 'presently-wrk-')), 'forwarded-for.lua');
  writeFileSync(path, script);
  return path;
}
