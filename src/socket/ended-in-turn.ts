import type { Duplex } from 'node:stream';
import type { CommandQueue } from './command-queue.js';

/**
 * A client gone without a closing handshake (its connection ended: the machine, or a proxy in front of
 * many clients, went away) is closed in the work queue, a slice per turn, rather than when the end is read.
 * Thousands of connections ending together are read in one turn of the event loop, and ws closing each one
 * there (ending our side, then closing, then its close events) would hold every other client up in it.
 * ws's own listener of the connection's end is found by its name; where it is not, ws closes as it does.
 */
export function closeEndedInTurn(connection: Duplex, work: Pick<CommandQueue, 'push'>): void {
  const closeOnEnd = connection.listeners('end').find((listener) => listener.name === 'socketOnEnd') as
    | ((this: Duplex) => void)
    | undefined;
  if (!closeOnEnd) return;
  connection.removeListener('end', closeOnEnd);
  connection.on('end', () =>
    work.push(() => {
      // Destroyed meanwhile (an error, our own close): ws has closed it already.
      if (!connection.destroyed) closeOnEnd.call(connection);
    }),
  );
}
