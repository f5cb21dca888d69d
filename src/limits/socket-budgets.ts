import { type Pace, refillMs, TokenBucket, TokenBuckets } from './token-bucket.js';

/** Op 2 and op 4 frames a socket may send in a row before the per-minute pace applies. */
export const SOCKET_COMMAND_BURST = 10;
/** Frames besides its commands a socket may send in a row: a reconnecting client's first heartbeats, with room. */
export const SOCKET_FRAME_BURST_BEYOND_COMMANDS = 10;
/** Frames besides its commands a socket may send per heartbeat interval, after its burst: it needs one. */
export const SOCKET_FRAMES_PER_HEARTBEAT_INTERVAL = 10;

/**
 * A socket's budget of subscribe and unsubscribe commands: SOCKET_COMMAND_BURST at once, refilled at
 * `perMinute` (SOCKET_COMMANDS_PER_MINUTE; 0: no limit). Each command costs a look-up per id and an
 * INIT_STATE, which a flood must not get for free.
 */
function commandPace(perMinute: number): Pace {
  return { burst: SOCKET_COMMAND_BURST, perMinute };
}

/**
 * A socket's budget of frames of any op, heartbeats included, charged before a frame is read: what its
 * commands may take, and some frames per heartbeat interval on top. Nothing is free to send, so a flood
 * of heartbeats ends at the budget like a flood of commands. Off with the command budget
 * (SOCKET_COMMANDS_PER_MINUTE=0), since every command is a frame.
 */
export function framePace(commandsPerMinute: number, heartbeatIntervalMs: number): Pace {
  if (commandsPerMinute === 0) return { burst: 0, perMinute: 0 };
  return {
    burst: SOCKET_COMMAND_BURST + SOCKET_FRAME_BURST_BEYOND_COMMANDS,
    perMinute: commandsPerMinute + (SOCKET_FRAMES_PER_HEARTBEAT_INTERVAL * 60_000) / heartbeatIntervalMs,
  };
}

/** What `sockets` sockets of `pace` may spend together; no limit when SOCKETS_PER_IP is off (0). */
function clientPace(pace: Pace, sockets: number): Pace {
  return { burst: pace.burst * sockets, perMinute: sockets === 0 ? 0 : pace.perMinute * sockets };
}

/**
 * The budgets of what sockets send. Each socket has its own of commands and of frames, and each client the
 * same over all its sockets, what SOCKETS_PER_IP sockets may spend together and no more, so that closing a
 * socket and opening another is no way to a fresh budget. A client whose socket spends one is refused new
 * sockets until such a budget would have filled again: a socket's budget starts full, and reconnecting
 * must not refill it.
 */
export class SocketBudgets {
  private readonly commands: Pace;
  private readonly frames: Pace;
  private readonly clientCommands: TokenBuckets;
  private readonly clientFrames: TokenBuckets;
  /** Clients whose socket spent a budget, and until when their new sockets are refused. */
  private readonly refusedUntil = new Map<string, number>();

  constructor(commandsPerMinute: number, heartbeatIntervalMs: number, socketsPerIp: number) {
    this.commands = commandPace(commandsPerMinute);
    this.frames = framePace(commandsPerMinute, heartbeatIntervalMs);
    this.clientCommands = new TokenBuckets(clientPace(this.commands, socketsPerIp));
    this.clientFrames = new TokenBuckets(clientPace(this.frames, socketsPerIp));
  }

  /** A new socket's own budget of commands, for `takeCommand`. */
  commandBucket(): TokenBucket {
    return new TokenBucket(this.commands.perMinute, this.commands.burst);
  }

  /** A new socket's own budget of frames, for `takeFrame`. */
  frameBucket(): TokenBucket {
    return new TokenBucket(this.frames.perMinute, this.frames.burst);
  }

  /** Takes a command of the socket's (`own`) and of its client's; false when either is spent. */
  takeCommand(own: TokenBucket, client: string): boolean {
    if (own.take() && this.clientCommands.take(client)) return true;
    this.refuse(client, this.commands);
    return false;
  }

  /** Takes a frame of the socket's (`own`) and of its client's; false when either is spent. */
  takeFrame(own: TokenBucket, client: string): boolean {
    if (own.take() && this.clientFrames.take(client)) return true;
    this.refuse(client, this.frames);
    return false;
  }

  /** How long `client`'s new sockets are still refused for, in ms; 0 or less: they are not. */
  refusedFor(client: string): number {
    return (this.refusedUntil.get(client) ?? 0) - Date.now();
  }

  /** Forgets the refusals that are over and the clients whose budgets are whole again. */
  sweep(): void {
    const now = Date.now();
    for (const [client, until] of this.refusedUntil) if (until <= now) this.refusedUntil.delete(client);
    this.clientCommands.sweep();
    this.clientFrames.sweep();
  }

  private refuse(client: string, pace: Pace): void {
    const until = Date.now() + refillMs(pace);
    this.refusedUntil.set(client, Math.max(this.refusedUntil.get(client) ?? 0, until));
  }
}
