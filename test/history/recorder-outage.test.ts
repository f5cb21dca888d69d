import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { HISTORY_BATCH_SIZE, HistoryRecorder } from '../../src/history/recorder.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';

/**
 * The store cannot take history for a while: writes wait in a bounded queue, the oldest past the bound are
 * dropped, counted and logged, the store is not called once per write meanwhile, and what waits is
 * written when it takes batches again.
 */

const GUILD = '1';
const T0 = Date.UTC(2026, 10, 22, 12);
const MAX_PENDING = 5;
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

const userId = (index: number) => String(80_351_110_224_678_912n + BigInt(index));
const settled = () => new Promise((resolve) => setImmediate(resolve));

it('keeps the newest writes up to its bound while the store fails, then writes them', async () => {
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  stores.push(store);
  let down = true;
  let attempts = 0;
  const append = store.history.appendHistory.bind(store.history);
  store.history.appendHistory = async (batch, limits) => {
    attempts++;
    if (down) throw new Error('connect ECONNREFUSED');
    return append(batch, limits);
  };
  const lines: Record<string, unknown>[] = [];
  const dropped: number[] = [];
  const recorder = new HistoryRecorder({
    store: store.history,
    logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    now: () => T0,
    flushMs: 60_000,
    maxPending: MAX_PENDING,
    onDropped: (writes) => dropped.push(writes),
  });
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    now: () => T0,
  });
  registry.onChange(recorder.observe);
  const see = async (from: number, count: number) => {
    for (let i = from; i < from + count; i++)
      registry.memberSeen(GUILD, { id: userId(i), username: `u${i}` });
    await settled();
  };

  await see(0, 8);
  await recorder.flush();
  expect(dropped).toEqual([3]);
  expect(lines.at(-1)).toMatchObject({ msg: 'could not write history; will retry', writes: 5, dropped: 3 });

  // Past a batch's worth more, no write calls on the store; the oldest go a batch at a time.
  await see(8, HISTORY_BATCH_SIZE);
  expect(attempts).toBe(1);
  expect(dropped).toEqual([3, HISTORY_BATCH_SIZE]);

  down = false;
  await recorder.flush();
  expect(lines.at(-1)).toMatchObject({ msg: 'history written again', writes: MAX_PENDING, dropped: 1_003 });
  const written = await store.history.latest(
    Array.from({ length: HISTORY_BATCH_SIZE + 8 }, (_, i) => userId(i)),
  );
  expect([...written.keys()].sort()).toEqual(
    Array.from({ length: MAX_PENDING }, (_, i) => userId(HISTORY_BATCH_SIZE + 3 + i)).sort(),
  );
  await recorder.close();
});
