import '../../src/ops/tick-shape.js';
import { BARE_USERS, bareBody, serveBodies } from '../lib/bare-bodies.js';
import { benchUserId } from '../lib/workload.js';

/**
 * The runtime's own part of reading among many users: node:http answering GET /v1/users/<id> with a body
 * held in a Map of USERS bench users (one ASCII string each, as the registry holds presences), and nothing
 * else. Against the same server holding a thousand, it shows what a heap of a million held bodies costs
 * node itself, which no code of the service's can save.
 */
const bodies = new Map<string, string>();
for (let n = 0; n < BARE_USERS; n++) {
  const body = bareBody(n);
  // Measuring flattens it: one string a user, as the service holds.
  Buffer.byteLength(body);
  bodies.set(benchUserId(n), body);
}
serveBodies((id) => bodies.get(id));
