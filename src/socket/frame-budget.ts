import { SOCKET_COMMAND_BURST } from './command-budget.js';

/** Frames besides its commands a socket may send in a row: a reconnecting client's first heartbeats, with room. */
export const SOCKET_FRAME_BURST_BEYOND_COMMANDS = 10;
/** Frames besides its commands a socket may send per heartbeat interval, after its burst: it needs one. */
export const SOCKET_FRAMES_PER_HEARTBEAT_INTERVAL = 10;

/** A budget's size and the pace it is refilled at. */
export interface FramePace {
  burst: number;
  /** 0: no budget. */
  perMinute: number;
}

/**
 * A socket's budget of frames of any op, heartbeats included, charged before a frame is read: what its
 * commands may take, and some frames per heartbeat interval on top. Nothing is free to send, so a flood
 * of heartbeats ends at the budget like a flood of commands. Off with the command budget
 * (SOCKET_COMMANDS_PER_MINUTE=0), since every command is a frame.
 */
export function framePace(commandsPerMinute: number, heartbeatIntervalMs: number): FramePace {
  if (commandsPerMinute === 0) return { burst: 0, perMinute: 0 };
  return {
    burst: SOCKET_COMMAND_BURST + SOCKET_FRAME_BURST_BEYOND_COMMANDS,
    perMinute: commandsPerMinute + (SOCKET_FRAMES_PER_HEARTBEAT_INTERVAL * 60_000) / heartbeatIntervalMs,
  };
}
