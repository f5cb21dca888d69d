/** What is to be done when a connection becomes a WebSocket, by what counted it as an HTTP connection. */
const handlers = new WeakMap<object, () => void>();

/** `handler` runs if and when `connection` becomes a WebSocket. */
export function whenUpgraded(connection: object, handler: () => void): void {
  handlers.set(connection, handler);
}

/** The connection is a WebSocket now: accepted, not merely asked for. */
export function upgraded(connection: object): void {
  const handler = handlers.get(connection);
  handlers.delete(connection);
  handler?.();
}
