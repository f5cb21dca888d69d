/**
 * `presently/client`: Presently's REST API and live socket, typed, for browsers and Node 20+. It imports
 * nothing from the server but types.
 */
export { DEFAULT_RECONNECT_DELAY, reconnectDelay } from './backoff.js';
export { PresentlyError, type PresentlyErrorCode } from './errors.js';
export {
  type EventSourceConstructor,
  type EventSourceLike,
  PresentlyEvents,
  type PresentlyEventsOptions,
  type StreamFetch,
  type StreamResponse,
} from './events.js';
export {
  type FetchLike,
  type FetchResponse,
  PresentlyClient,
  type PresentlyClientOptions,
} from './rest.js';
export {
  NO_RECONNECT_CLOSE_CODES,
  PresentlySocket,
  type PresentlySocketEvents,
  type PresentlySocketOptions,
  type SocketClose,
  type WebSocketConstructor,
  type WebSocketLike,
} from './socket.js';
export type * from './types.js';
