import { isSnowflake } from '../presence/snowflake.js';

/** Lanyard's socket protocol. */
export const Op = { Event: 0, Hello: 1, Initialize: 2, Heartbeat: 3, Unsubscribe: 4 } as const;

/** What Hello advertises; a socket silent for twice this long is closed with 4007. */
export const HEARTBEAT_INTERVAL_MS = 30_000;
/** A client frame larger than this is closed with 1009. */
export const MAX_CLIENT_FRAME_BYTES = 64 * 1024;
/** A socket whose unsent data passes this is a slow consumer: closed with 4008 instead of growing memory. */
export const SEND_BUFFER_CAP_BYTES = 4 * 1024 * 1024;

export const Close = {
  GoingAway: { code: 1001, reason: 'going_away' },
  /** Something failed on our side while handling the socket's frame. */
  InternalError: { code: 1011, reason: 'internal_error' },
  /** The process holds MAX_SOCKETS already. */
  TryAgainLater: { code: 1013, reason: 'try_again_later' },
  SubscriptionsFull: {
    code: 1013,
    reason: 'try_again_later: the server holds as many subscriptions as it may',
  },
  UnknownOpcode: { code: 4004, reason: 'unknown_opcode' },
  RequiresDataObject: { code: 4005, reason: 'requires_data_object' },
  InvalidPayload: { code: 4006, reason: 'invalid_payload' },
  SubscribeToAllOff: { code: 4006, reason: 'invalid_payload: subscribe_to_all is turned off on this server' },
  HeartbeatTimeout: { code: 4007, reason: 'heartbeat_timeout' },
  SlowConsumer: { code: 4008, reason: 'slow_consumer' },
  RateLimited: { code: 4009, reason: 'rate_limited' },
} as const;

export type CloseReason = (typeof Close)[keyof typeof Close];

/** A client frame, understood; or the close it earns. */
export type ClientCommand =
  | { op: 'subscribe'; ids: string[]; all: boolean; single: string | undefined }
  | { op: 'unsubscribe'; ids: string[]; all: boolean }
  | { op: 'heartbeat' }
  | { op: 'close'; close: CloseReason };

const fail = (close: CloseReason): ClientCommand => ({ op: 'close', close });

/** What a server allows of op 2. */
export interface FrameRules {
  /** Ids one frame may name. */
  maxIds: number;
  /** `subscribe_to_all` is on (SUBSCRIBE_TO_ALL). */
  subscribeToAll: boolean;
}

/** Parses one client frame. Every malformed frame maps to the close code the contract names for it. */
export function parseClientFrame(text: string, rules: FrameRules): ClientCommand {
  const { maxIds } = rules;
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return fail(Close.InvalidPayload);
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return fail(Close.InvalidPayload);
  const { op, d } = frame as { op?: unknown; d?: unknown };
  if (op === Op.Heartbeat) return { op: 'heartbeat' };
  if (op !== Op.Initialize && op !== Op.Unsubscribe) return fail(Close.UnknownOpcode);
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return fail(Close.RequiresDataObject);
  const data = d as Record<string, unknown>;
  if (op === Op.Unsubscribe) {
    return unsubscription(
      data.unsubscribe_from_id,
      data.unsubscribe_from_ids,
      data.unsubscribe_from_all,
      maxIds,
    );
  }
  if (data.subscribe_to_all === true && !rules.subscribeToAll) return fail(Close.SubscribeToAllOff);
  return subscription(data.subscribe_to_id, data.subscribe_to_ids, data.subscribe_to_all, maxIds);
}

function subscription(single: unknown, many: unknown, all: unknown, maxIds: number): ClientCommand {
  const ids = idList(single, many, maxIds);
  if (ids === undefined || (all !== undefined && typeof all !== 'boolean')) return fail(Close.InvalidPayload);
  if (single === undefined && many === undefined && all !== true) return fail(Close.InvalidPayload);
  return {
    op: 'subscribe',
    ids,
    all: all === true,
    single: many === undefined && all !== true ? (single as string) : undefined,
  };
}

function unsubscription(single: unknown, many: unknown, all: unknown, maxIds: number): ClientCommand {
  const ids = idList(single, many, maxIds);
  if (ids === undefined || (all !== undefined && typeof all !== 'boolean')) return fail(Close.InvalidPayload);
  if (single === undefined && many === undefined && all !== true) return fail(Close.InvalidPayload);
  return { op: 'unsubscribe', ids, all: all === true };
}

/** The ids of `…_id` and `…_ids` together; undefined when either is malformed or there are too many. */
function idList(single: unknown, many: unknown, maxIds: number): string[] | undefined {
  const ids: string[] = [];
  if (single !== undefined) {
    if (typeof single !== 'string' || !isSnowflake(single)) return undefined;
    ids.push(single);
  }
  if (many !== undefined) {
    if (!Array.isArray(many) || many.length > maxIds) return undefined;
    for (const id of many) {
      if (typeof id !== 'string' || !isSnowflake(id)) return undefined;
      ids.push(id);
    }
  }
  return ids;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether JSON text nests objects and arrays deeper than `max`, found by counting brackets outside strings:
 * a frame of nothing but brackets costs the parser far more than its size, and no command needs it.
 */
export function nestedDeeperThan(json: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const byte = json[i] as number;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
  }
  return false;
}
