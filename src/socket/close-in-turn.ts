import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { CommandQueue } from './command-queue.js';

type Listener = (this: unknown, ...args: unknown[]) => void;

/** ws's listener of `event` on `emitter`, found by its name; undefined where ws names it otherwise. */
function wsListener(emitter: EventEmitter, event: string, name: string): Listener | undefined {
  return emitter.listeners(event).find((listener) => listener.name === name) as Listener | undefined;
}

/**
 * A client leaving is closed in its own work queue, a slice per turn, rather than when it is heard:
 * thousands of clients leaving together (a proxy in front of them restarting, a machine going away, a flood
 * letting go) are heard in one turn of the event loop, and ws closing each one there (answering its close
 * frame, ending our side, then closing and its close events) would hold every other client up in that turn.
 * `leaving` is told at once, so that nothing more is done for the client meanwhile. Covered: the
 * connection's end without a closing handshake, and a close frame. ws's own listeners are found by their
 * names; where they are not, ws closes as it does.
 */
export function closeInTurn(
  ws: WebSocket,
  connection: Duplex,
  work: Pick<CommandQueue, 'push'>,
  leaving: () => void,
): void {
  /** ws's handler, run when the queue reaches it: unless ws has closed the connection meanwhile. */
  const later = (handler: () => void) =>
    work.push(() => {
      if (connection.destroyed) return;
      try {
        handler();
      } catch {
        connection.destroy();
      }
    });
  const onEnd = wsListener(connection, 'end', 'socketOnEnd');
  if (onEnd) {
    connection.removeListener('end', onEnd);
    connection.on('end', () => {
      leaving();
      later(() => onEnd.call(connection));
    });
  }
  const receiver = (ws as unknown as { _receiver?: EventEmitter | null })._receiver;
  const onConclude = receiver && wsListener(receiver, 'conclude', 'receiverOnConclude');
  const onData = wsListener(connection, 'data', 'socketOnData');
  if (!receiver || !onConclude || !onData) return;
  receiver.removeListener('conclude', onConclude);
  receiver.on('conclude', (code: number, reason: Buffer) => {
    // What follows a close frame is no frame: ws stops handing it to its reader at once, as it would.
    connection.removeListener('data', onData);
    leaving();
    // A view into what the connection read, which is reused.
    const kept = Buffer.from(reason);
    later(() => onConclude.call(receiver, code, kept));
  });
}
