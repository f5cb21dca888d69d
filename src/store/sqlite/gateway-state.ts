import type { Database, Statement } from 'better-sqlite3';
import type { GatewayStateStore, SavedGatewaySession, SavedGatewayState } from '../ports.js';

interface GatewayStateRow {
  saved_at: number;
  sessions: string;
  presences: Buffer;
}

/** What writes a file's gateway state off the event loop (write-thread.ts). */
export interface GatewayStateWriter {
  /** False once it can write no more: the state is then written on the store's connection. */
  readonly available: boolean;
  saveGatewayState(node: string, state: SavedGatewayState, keepForMs: number): Promise<void>;
  clearGatewayState(node: string): Promise<void>;
}

/**
 * A row per ingest node (table `gateway_state`): its shards' sessions as JSON text, its presences as a
 * blob. A file's saves and clears go to its write thread, in the order they are made: a save is tens of
 * MB, written and synced to disk beside the event loop.
 */
export class SqliteGatewayStateStore implements GatewayStateStore {
  private readonly select: Statement<[string], GatewayStateRow>;
  private readonly upsert: Statement<[string, number, string, Buffer]>;
  private readonly remove: Statement<[string]>;
  private readonly expire: Statement<[number]>;
  private readonly replace: (node: string, state: SavedGatewayState, keepForMs: number) => void;

  /** `writer`: writes in place of `db` (a file's write thread); null, everything is written on `db`. */
  constructor(
    db: Database,
    private readonly writer: GatewayStateWriter | null = null,
  ) {
    this.select = db.prepare('SELECT saved_at, sessions, presences FROM gateway_state WHERE node = ?');
    this.upsert = db.prepare(
      `INSERT INTO gateway_state (node, saved_at, sessions, presences) VALUES (?, ?, ?, ?)
       ON CONFLICT (node) DO UPDATE SET saved_at = excluded.saved_at, sessions = excluded.sessions,
         presences = excluded.presences`,
    );
    this.remove = db.prepare('DELETE FROM gateway_state WHERE node = ?');
    this.expire = db.prepare('DELETE FROM gateway_state WHERE saved_at < ?');
    this.replace = db.transaction((node: string, state: SavedGatewayState, keepForMs: number) => {
      this.upsert.run(node, state.savedAt, JSON.stringify(state.sessions), state.presences);
      this.expire.run(Date.now() - keepForMs);
    });
  }

  async save(node: string, state: SavedGatewayState, keepForMs: number): Promise<void> {
    if (await this.written(() => this.writer?.saveGatewayState(node, state, keepForMs))) return;
    this.replace(node, state, keepForMs);
  }

  async load(node: string): Promise<SavedGatewayState | null> {
    const row = this.select.get(node);
    if (row === undefined) return null;
    return {
      savedAt: row.saved_at,
      sessions: JSON.parse(row.sessions) as SavedGatewaySession[],
      presences: row.presences,
    };
  }

  async clear(node: string): Promise<void> {
    if (await this.written(() => this.writer?.clearGatewayState(node))) return;
    this.remove.run(node);
  }

  /** Whether the writer wrote it; false when it is (or has just become) unavailable. */
  private async written(write: () => Promise<void> | undefined): Promise<boolean> {
    if (!this.writer?.available) return false;
    try {
      await write();
      return true;
    } catch (error) {
      // The writer died with this in hand: written here instead. Refused by the file: refused here too.
      if (this.writer.available) throw error;
      return false;
    }
  }
}
