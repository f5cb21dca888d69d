import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { MIGRATIONS, migrate } from '../../src/store/sqlite/migrations.js';
import { storeContract } from './contract.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'presently-store-'));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('embedded SQLite store', () => {
  it('creates the directory of a file database, uses WAL, and migrates to the newest version', async () => {
    const path = join(tempDir(), 'nested', 'deeper', 'presently.db');
    const store = openSqliteStore({ kind: 'sqlite', path });
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(await store.ping()).toBe(true);
    await store.close();
    expect(await store.ping()).toBe(false);
  });

  it('keeps profiles across a reopen', async () => {
    const path = join(tempDir(), 'presently.db');
    const first = openSqliteStore({ kind: 'sqlite', path });
    await first.profiles.putProfiles(
      new Map([['1', { profile: { banner: 'a_abc', accent_color: 0xff00ff }, fetchedAt: 123 }]]),
    );
    await first.profiles.putProfiles(
      new Map([['1', { profile: { banner: 'a_def', accent_color: null }, fetchedAt: 456 }]]),
    );
    await first.close();

    const second = openSqliteStore({ kind: 'sqlite', path });
    expect(await second.profiles.getProfile('1')).toEqual({
      profile: { banner: 'a_def', accent_color: null },
      fetchedAt: 456,
    });
    expect(await second.profiles.getProfile('2')).toBeUndefined();
    await second.close();
  });

  it('runs only the migrations a database has not run yet', () => {
    const db = new BetterSqlite3(':memory:');
    expect(migrate(db)).toBe(MIGRATIONS.length);
    expect(migrate(db)).toBe(MIGRATIONS.length);
    db.close();
  });

  it('refuses a database from a newer build rather than corrupt it', () => {
    const db = new BetterSqlite3(':memory:');
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    expect(() => migrate(db)).toThrow(/newer than this build/);
    db.close();
  });

  it('works in memory for throwaway runs', async () => {
    const store = openSqliteStore({ kind: 'sqlite-memory' });
    await store.profiles.putProfiles(
      new Map([['9', { profile: { banner: null, accent_color: 1 }, fetchedAt: 1 }]]),
    );
    expect((await store.profiles.getProfile('9'))?.profile.accent_color).toBe(1);
    await store.close();
  });
});

storeContract('SQLite', async () => openSqliteStore({ kind: 'sqlite-memory' }));
