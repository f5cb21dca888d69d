import { PresentlySocket } from '../client/socket.js';
import type { Presence, UserId } from '../client/types.js';

/** What the page says of its socket. */
export type ConnectionState =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'reconnecting'; inMs: number }
  /** The server refused what the socket sent: the client does not try again. */
  | { kind: 'closed' };

export interface PresenceSocketHandlers {
  state(state: ConnectionState): void;
  /** The presence of the id shown, as it starts and as it changes; undefined when it is not monitored. */
  presence(id: UserId, presence: Presence | undefined): void;
}

/**
 * One socket for the page, subscribed to the id shown, opened when there is one. The client heartbeats,
 * reconnects with growing pauses and subscribes again; this follows the id the page shows.
 */
export class PresenceSocket {
  private socket: PresentlySocket | null = null;
  private id: UserId | null = null;
  /** Ids subscribed and not yet answered: each op 2 gets one INIT_STATE, in order. */
  private pending: UserId[] = [];
  /** Says "connecting" again when the client's next attempt starts. */
  private attempt: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly handlers: PresenceSocketHandlers) {}

  watch(id: UserId): void {
    const previous = this.id;
    this.id = id;
    if (this.socket === null) {
      this.socket = this.open(id);
      return;
    }
    // The client sends these at once on a greeted socket only; otherwise the next Hello subscribes to `id`.
    const sent = this.socket.connected;
    if (previous !== null) this.socket.unsubscribe(previous);
    this.socket.subscribe(id);
    if (sent) this.pending.push(id);
  }

  private open(id: UserId): PresentlySocket {
    this.handlers.state({ kind: 'connecting' });
    const socket = new PresentlySocket({ baseUrl: location.origin, subscribe: id });
    socket.on('open', () => {
      clearTimeout(this.attempt);
      // Greeted: the client has subscribed again to the one id it holds.
      this.pending = this.id === null ? [] : [this.id];
      this.handlers.state({ kind: 'live' });
    });
    socket.on('init', (presences) => {
      // The answer to an id the viewer has since left is not shown as the new one's.
      const asked = this.pending.shift();
      if (asked !== undefined && asked === this.id) this.handlers.presence(asked, presences[asked]);
    });
    socket.on('update', (presence) => {
      if (presence.user_id === this.id) this.handlers.presence(presence.user_id, presence);
    });
    socket.on('close', ({ reconnectInMs }) => {
      clearTimeout(this.attempt);
      this.pending = [];
      if (reconnectInMs === null) {
        this.handlers.state({ kind: 'closed' });
        return;
      }
      this.handlers.state({ kind: 'reconnecting', inMs: reconnectInMs });
      this.attempt = setTimeout(() => this.handlers.state({ kind: 'connecting' }), reconnectInMs);
    });
    return socket;
  }
}
