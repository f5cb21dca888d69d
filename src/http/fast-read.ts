import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ReadBudget } from '../limits/read-budget.js';
import { type ClientAddressOf, clientKey } from '../net/client-address.js';
import { SECURITY_HEADERS } from '../net/security-headers.js';
import type { Metrics } from '../ops/metrics.js';
import type { PresenceBody, PresenceView } from '../presence/registry/registry.js';
import { STREAM_HIGH_WATER_BYTES } from '../socket/outbound.js';
import { digestEtag, noneMatch } from './etag.js';
import { endInSlices } from './sliced-body.js';

export type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void;

const PREFIX = '/v1/users/';
/** The longest snowflake: 20 digits. */
const MAX_ID_LENGTH = 20;
const ZERO = 48;
const NINE = 57;
/** What both answers carry: the headers Fastify's hooks set (security, CORS), then the tag. */
const COMMON_HEADERS: (string | number)[] = [
  ...Object.entries(SECURITY_HEADERS).flat(),
  'access-control-allow-origin',
  '*',
  'etag',
  '',
];
const ETAG_AT = COMMON_HEADERS.length - 1;
/**
 * The headers of a 200, its tag and length written in. node:http reads the array while writeHead runs and
 * keeps nothing of it, so one array serves every answer rather than one built per request.
 */
const ANSWER_HEADERS: (string | number)[] = [
  ...COMMON_HEADERS,
  'content-type',
  'application/json; charset=utf-8',
  'content-length',
  0,
];
const LENGTH_AT = ANSWER_HEADERS.length - 1;
/** The headers of a 304, as Fastify answers one: no body, so neither its type nor its length. */
const NOT_MODIFIED_HEADERS: (string | number)[] = [...COMMON_HEADERS];
/** The draft `RateLimit-*` headers, as the read budget's hook sets them on Fastify's answers. */
const BUDGET_HEADERS: (string | number)[] = [
  'ratelimit-limit',
  0,
  'ratelimit-remaining',
  0,
  'ratelimit-reset',
  0,
];
/** With read limits on: the same answers, the client's budget written in after. */
const LIMITED_ANSWER_HEADERS = [...ANSWER_HEADERS, ...BUDGET_HEADERS];
const LIMITED_NOT_MODIFIED_HEADERS = [...NOT_MODIFIED_HEADERS, ...BUDGET_HEADERS];

/** Writes a budget into the last three values of `headers` (one of the LIMITED arrays). */
function writeBudget(headers: (string | number)[], max: number, remaining: number, reset: number): void {
  const at = headers.length - BUDGET_HEADERS.length;
  headers[at + 1] = max;
  headers[at + 3] = remaining;
  headers[at + 5] = reset;
}

/**
 * `GET /v1/users/:id` of a monitored user, answered straight from node:http with the body as the registry
 * holds it (or a 304 when `If-None-Match` names their tag).
 *
 * This is the request presence sites poll, and it needs nothing of a framework: the answer was serialized
 * when the presence changed. Fastify's request lifecycle (routing, hooks, reply, promise handling) costs
 * about as much CPU as writing the bytes to the socket (docs/performance.md). Everything else — HEAD, an id that is not a plain
 * snowflake, a user who is not monitored, an exceeded rate limit, a server that is closing — goes on to
 * Fastify, which answers it (errors included) exactly as the contract says.
 */
export class FastReads {
  private budget: ReadBudget | null = null;
  private closing = false;

  constructor(
    private readonly view: PresenceView,
    private readonly clientAddress: ClientAddressOf,
    private readonly metrics?: Metrics,
  ) {}

  /** Read limits on: every read answered here is charged to the budget Fastify's reads are. */
  limitWith(budget: ReadBudget): void {
    this.budget = budget;
  }

  /** From now on every request goes to Fastify, which answers it and closes its connection. */
  close(): void {
    this.closing = true;
  }

  /** Answers the request if it is one of ours and returns true; otherwise returns false, leaving it alone. */
  serve(request: IncomingMessage, response: ServerResponse): boolean {
    if (this.closing || request.method !== 'GET') return false;
    const id = idOf(request.url ?? '');
    const held = id === null ? undefined : this.lookup(id);
    if (held === undefined) return false;
    const budget = this.budget;
    if (budget === null) return this.answer(held, request, response, ANSWER_HEADERS, NOT_MODIFIED_HEADERS);
    const used = budget.charge(clientKey(this.clientAddress(request)), 1);
    // Over budget: Fastify answers the 429 as it answers every error (charging the read again, to no effect
    // on a budget already spent).
    if (used > budget.max) return false;
    const remaining = budget.max - used;
    const reset = budget.secondsLeft();
    writeBudget(LIMITED_ANSWER_HEADERS, budget.max, remaining, reset);
    writeBudget(LIMITED_NOT_MODIFIED_HEADERS, budget.max, remaining, reset);
    return this.answer(held, request, response, LIMITED_ANSWER_HEADERS, LIMITED_NOT_MODIFIED_HEADERS);
  }

  /** `answer` and `notModified`: ANSWER_HEADERS and NOT_MODIFIED_HEADERS, or their LIMITED forms. */
  private answer(
    held: PresenceBody,
    request: IncomingMessage,
    response: ServerResponse,
    answer: (string | number)[],
    notModified: (string | number)[],
  ): true {
    // What hooks in server.ts set on Fastify's answers (security headers, CORS); a test compares the two.
    const etag = digestEtag(held.digest);
    if (noneMatch(request.headers['if-none-match'], etag)) {
      notModified[ETAG_AT] = etag;
      response.writeHead(304, notModified);
      response.end();
      this.metrics?.fastRead();
      return true;
    }
    const { body } = held;
    answer[ETAG_AT] = etag;
    answer[LENGTH_AT] = body.length;
    response.writeHead(200, answer);
    // An ASCII body as Latin-1 is copied out as it is, with no UTF-8 encoding, and goes out in one write
    // with the head; a large one is bytes already, written in slices from the one buffer every reader shares.
    if (typeof body === 'string') response.end(body, 'latin1');
    else if (body.length <= STREAM_HIGH_WATER_BYTES) response.end(body);
    else endInSlices(response, body).catch(() => response.destroy());
    this.metrics?.fastRead();
    return true;
  }

  /** The body, or undefined when there is none or the view fails: Fastify answers those, errors included. */
  private lookup(id: string): PresenceBody | undefined {
    try {
      return this.view.body(id);
    } catch {
      return undefined;
    }
  }
}

/** The id of `/v1/users/<digits>` (a query string allowed), or null for any other path. */
function idOf(url: string): string | null {
  if (!url.startsWith(PREFIX)) return null;
  const query = url.indexOf('?', PREFIX.length);
  const end = query < 0 ? url.length : query;
  const length = end - PREFIX.length;
  if (length === 0 || length > MAX_ID_LENGTH) return null;
  for (let i = PREFIX.length; i < end; i++) {
    const code = url.charCodeAt(i);
    if (code < ZERO || code > NINE) return null;
  }
  return url.slice(PREFIX.length, end);
}
