import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HistoryRecorder } from '../../src/history/recorder.js';
import type { RawPresence } from '../../src/presence/model.js';
import { PresenceRegistry } from '../../src/presence/registry.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/youtube-music.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/index.js';
import { activity, SPOTIFY_LITERAL } from '../presence/payloads.js';
import { type AnswerLosingRelay, startAnswerLosingRelay } from '../support/answer-losing-relay.js';
import { eventually } from '../support/eventually.js';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/postgres.js';

/**
 * PostgreSQL commits a history batch and its answer never reaches the service (a relay drops the
 * connection as the server answers the COMMIT): the recorder tries the batch again under its id, the store
 * finds it written and writes nothing more, and what was seen since goes in a batch after it. Every play
 * counts once.
 */

const SUITE = 'a history batch whose answer PostgreSQL lost';
const hasPostgres = await postgresAvailable(SUITE);
const GUILD = '1';
const USER = { id: '80351110224678912', username: 'alice' };
const T0 = Date.UTC(2026, 10, 22, 12);

function listening(song: string, start: number): RawPresence {
  return {
    status: 'online',
    client_status: { desktop: 'online' },
    activities: [
      activity({
        ...SPOTIFY_LITERAL,
        sync_id: song.padEnd(22, '0'),
        details: song,
        timestamps: { start, end: start + 180_000 },
        created_at: start,
      }),
    ],
  };
}

describe.skipIf(!hasPostgres)(SUITE, () => {
  let database: TestDatabase;
  const relays: AnswerLosingRelay[] = [];
  const stores: PostgresStore[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const relay of relays.splice(0)) await relay.close();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('is written once when the recorder tries it again, and its plays count once', async () => {
    const url = new URL(await database.schema());
    const relay = await startAnswerLosingRelay({ host: url.hostname, port: Number(url.port || 5432) });
    relays.push(relay);
    const relayed = new URL(url);
    relayed.port = String(relay.port);
    const store = await openPostgresStore(relayed.toString());
    const direct = await openPostgresStore(url.toString());
    stores.push(store, direct);
    const lines: Record<string, unknown>[] = [];
    let now = T0;
    const recorder = new HistoryRecorder({
      store: store.history,
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
      now: () => now,
      flushMs: 3_600_000,
    });
    const registry = new PresenceRegistry({
      cdnUrl: 'https://cdn.discordapp.com',
      youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
      now: () => now,
    });
    registry.onChange(recorder.observe);
    const songs = async () => (await direct.history.history(USER.id, 10)).tracks.map((entry) => entry.song);

    let lost = false;
    void relay.loseAnswerTo('COMMIT').then(() => {
      lost = true;
    });
    registry.memberSeen(GUILD, USER, listening('first', now));
    // Flushed once the user's stored history has been read and the play is waiting.
    await eventually(async () => {
      await recorder.flush();
      expect(lost).toBe(true);
    });
    expect(lines.at(-1)).toMatchObject({ msg: 'could not write history; will retry', writes: 1 });
    // The server kept the commit.
    expect(await songs()).toEqual(['first']);

    now += 200_000;
    registry.memberSeen(GUILD, USER, listening('second', now));
    await recorder.flush();
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'history written again', writes: 1 }));
    expect(await songs()).toEqual(['second', 'first']);
    expect(await direct.history.topTracks(USER.id, 1, 10)).toMatchObject([
      { song: 'second', play_count: 1 },
      { song: 'first', play_count: 1 },
    ]);
    expect(await direct.history.stats(USER.id)).toMatchObject({ plays: 2 });
    expect((await direct.history.history(USER.id, 10)).status).toEqual([{ status: 'online', ts: T0 }]);
    await recorder.close();
  });
});
