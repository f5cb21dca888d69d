import type { SimulatedGateway } from './gateway.js';
import { RestErrorCodes } from './rest.js';
import type { MessageRefusal, SimulatorState } from './state.js';

/**
 * The ways Discord breaks a connection or refuses the bot, for tests and benches to provoke: sockets
 * dropped, cut mid-frame or gone silent, closes with a code, op 7 and op 9, heartbeats unanswered, DMs
 * refused. Each names the shard it breaks (0 unless told).
 */
export class SimulatorFaults {
  constructor(
    private readonly gateway: SimulatedGateway,
    private readonly state: SimulatorState,
  ) {}

  /** Destroys the shard's TCP socket without a close frame: the client should RESUME. */
  dropConnection(shardId = 0): void {
    const connection = this.gateway.connectionOf(shardId);
    this.gateway.abandon(connection);
    connection.ws.terminate();
  }

  /**
   * The connection breaks in the middle of the next frame it sends: the client gets the frame's header and
   * half of its bytes (compressed, on a zlib-stream connection), then the TCP socket is destroyed without a
   * close frame. The session stays resumable, and the frame, if a dispatch, waits in the replay buffer with
   * the rest.
   */
  dropConnectionMidFrame(shardId = 0): void {
    const connection = this.gateway.connectionOf(shardId);
    connection.interceptNext = (frame) => {
      this.gateway.abandon(connection);
      // After the frames sent before it, which a compressed connection may still be deflating.
      void connection.encode(frame).then(
        ({ bytes, binary }) => {
          const half = Buffer.concat([
            frameHeader(bytes.length, binary),
            bytes.subarray(0, bytes.length >> 1),
          ]);
          // Destroyed once the half frame is on its way, not before.
          connection.socket.write(half, () => connection.ws.terminate());
        },
        () => connection.ws.terminate(),
      );
    };
  }

  /**
   * The connection becomes a zombie, as one whose network path died: nothing more reaches the client,
   * heartbeat ACKs included, while its session goes on collecting dispatches for a RESUME. The socket
   * still completes a close handshake (a peer gone altogether would leave the client to ws's own close
   * timeout). A new connection is healthy; the client should notice the missing ACKs and resume there.
   */
  zombifyConnection(shardId = 0): void {
    this.gateway.connectionOf(shardId).silent = true;
  }

  /** Closes the shard's socket with a code (4000 resumable; 4004, 4014… fatal; 4007, 4009 end the session). */
  closeConnection(code: number, shardId = 0, reason?: string): void {
    this.gateway.close(this.gateway.connectionOf(shardId), code, reason);
  }

  /**
   * Every session without a connection ends, as if Discord's resume window had passed for it: its client's
   * RESUME gets op 9 `d: false` and it must identify anew. A session with a connection is kept.
   * Returns how many ended.
   */
  expireDetachedSessions(): number {
    return this.gateway.expireDetachedSessions();
  }

  /**
   * The gateway cannot be reached: every shard's socket is cut (sessions kept for a RESUME) and every new
   * connection is refused with 503, until `gatewayBack`. A shard down for longer than the resume window is
   * refused its RESUME once back.
   */
  gatewayDown(): void {
    this.gateway.setUnreachable(true);
  }

  gatewayBack(): void {
    this.gateway.setUnreachable(false);
  }

  /** op 7 Reconnect. */
  requestReconnect(shardId = 0): void {
    this.gateway.requestReconnect(this.gateway.connectionOf(shardId));
  }

  /** op 9 Invalid Session; `resumable` is its `d`. */
  invalidateSession(resumable: boolean, shardId = 0): void {
    this.gateway.invalidateSession(this.gateway.connectionOf(shardId), resumable);
  }

  /** Heartbeats on this shard go unanswered (the client should treat the connection as a zombie). */
  stopHeartbeatAcks(shardId = 0): void {
    this.gateway.unansweredHeartbeats.add(shardId);
  }

  resumeHeartbeatAcks(shardId = 0): void {
    this.gateway.unansweredHeartbeats.delete(shardId);
  }

  /**
   * The user stops accepting DMs from the bot (Discord's privacy setting, or a block): every message the
   * bot posts in their DM channel is refused with 403, code 50007, as Discord does; `closed = false` undoes it.
   */
  closeDms(userId: string, closed = true): void {
    if (closed) this.state.closedDms.add(userId);
    else this.state.closedDms.delete(userId);
  }

  /**
   * The bot's next message in this channel is refused as given (default: 403, code 50007, what Discord
   * answers when it will not deliver a DM); later ones are accepted again. Called n times, n are refused.
   */
  refuseNextMessage(
    channelId: string,
    refusal: MessageRefusal = {
      status: 403,
      code: RestErrorCodes.CannotSendMessagesToThisUser,
      message: 'Cannot send messages to this user',
    },
  ): void {
    const queued = this.state.messageRefusals.get(channelId) ?? [];
    queued.push(refusal);
    this.state.messageRefusals.set(channelId, queued);
  }
}

/** The header of an unmasked, unfragmented text or binary frame (RFC 6455 §5.2) carrying `length` bytes. */
function frameHeader(length: number, binary: boolean): Buffer {
  const first = binary ? 0x82 : 0x81;
  if (length < 126) return Buffer.from([first, length]);
  if (length < 0x10000) {
    const header = Buffer.from([first, 126, 0, 0]);
    header.writeUInt16BE(length, 2);
    return header;
  }
  const header = Buffer.alloc(10);
  header[0] = first;
  header[1] = 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  return header;
}
