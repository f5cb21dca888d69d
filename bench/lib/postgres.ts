import { Client } from 'pg';
import { processCpuMicros } from './proc-cpu.js';

/**
 * The CPU of the server processes serving the service's connections (`application_name` presently) to the
 * database of `url`, from /proc: PostgreSQL's share of the work, which runs on this machine. A backend that
 * has ended keeps the last reading.
 */
export class PostgresBackends {
  private readonly client: Client;
  private connected: Promise<unknown> | null = null;
  private readonly micros = new Map<number, number>();

  constructor(url: string) {
    this.client = new Client({ connectionString: url, application_name: 'presently-bench' });
  }

  async cpuMicros(): Promise<number> {
    this.connected ??= this.client.connect();
    await this.connected;
    const { rows } = await this.client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'presently'`,
    );
    for (const { pid } of rows) {
      const micros = await processCpuMicros(pid).catch(() => {
        throw new Error('the storage scenario reads PostgreSQL’s CPU in /proc: its server must run here');
      });
      this.micros.set(pid, micros);
    }
    let total = 0;
    for (const value of this.micros.values()) total += value;
    return total;
  }

  async close(): Promise<void> {
    if (this.connected) await this.client.end();
  }
}
