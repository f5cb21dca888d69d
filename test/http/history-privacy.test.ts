import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RECENT_STATUS_MS, RecentStatuses } from '../../src/history/recent-status.js';
import { historyRoutes } from '../../src/http/routes/history.js';
import { ApiKeyService } from '../../src/keys/service.js';
import type { TrackEntry } from '../../src/model/history.js';
import type { DiscordStatus, MusicSource, RawPresence } from '../../src/presence/model.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { type PrivacyPatch, recordsHistory } from '../../src/presence/privacy.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';
import { PrivacyDirectory } from '../../src/privacy/directory.js';
import { PublicView } from '../../src/privacy/public-view.js';
import type { HistoryWrite } from '../../src/store/ports.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import { insertApiKey } from '../support/api-key.js';
import { comparableHeaders } from '../support/comparable-headers.js';
import { buildTestHttpServer } from '../support/http-server.js';

/**
 * `/history`, `/stats` and `/top-tracks` under the users' privacy settings, on a real SQLite store and the
 * registry, public view and privacy directory wired as app.ts wires them.
 */

const GUILD = '300000000000000001';
const USER = { id: '80351110224678912', username: 'alice' };
const OTHER = { id: '80351110224678913', username: 'bob' };
const UNKNOWN = '123456789012345678';
const NOW = Date.UTC(2026, 10, 22, 12);
const MINUTE = 60_000;
/** An Apple Music player's application (DEFAULT_MUSIC_APPS). */
const APPLE_MUSIC_APP = '1247654840780460125';
const PATHS = ['history', 'stats', 'top-tracks?limit=5', 'recent?limit=10'] as const;

function track(source: MusicSource, id: string, ts: number): TrackEntry {
  return {
    source,
    song: id,
    artist: 'A',
    album: 'B',
    album_art_url: null,
    track_id: id,
    track_url: null,
    timestamps: { start: ts, end: ts + 3 * MINUTE },
    duration_ms: 3 * MINUTE,
    ts,
  };
}

const write = (userId: string, entry: Partial<HistoryWrite>): HistoryWrite => ({
  userId,
  status: null,
  track: null,
  countsPlay: false,
  lastSeen: null,
  ...entry,
});

/** USER's stored history: online, then offline two hours ago; six plays, one of them yesterday. */
const PLAYS: TrackEntry[] = [
  track('spotify', 's1', NOW - 24 * 60 * MINUTE),
  track('spotify', 's1', NOW - 100 * MINUTE),
  track('apple_music', 'a1', NOW - 90 * MINUTE),
  track('apple_music', 'a1', NOW - 80 * MINUTE),
  track('spotify', 's2', NOW - 70 * MINUTE),
  track('spotify', 's1', NOW - 60 * MINUTE),
];

const online = (status: DiscordStatus): RawPresence => ({
  status,
  client_status: status === 'offline' ? {} : { desktop: status },
  activities: [],
});

interface Setup {
  app: FastifyInstance;
  base: string;
  store: SqliteStore;
  registry: PresenceRegistry;
  keys: ApiKeyService;
  ownKey: string;
  otherKey: string;
  setPrivacy(patch: PrivacyPatch): Promise<void>;
  advance(ms: number): void;
}

const opened: Array<{ app: FastifyInstance; store: SqliteStore; directory: PrivacyDirectory }> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const { app, store, directory } of opened.splice(0)) {
    await app.close();
    directory.close();
    await store.close();
  }
});

async function setup(): Promise<Setup> {
  let now = NOW;
  const store = openSqliteStore({ kind: 'sqlite-memory' });
  const directory = new PrivacyDirectory(store.privacy, { now: () => now });
  await directory.load();
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
    now: () => now,
    privacy: (userId) => directory.of(userId),
  });
  const view = new PublicView(registry, directory, () => now);
  view.start([]);
  directory.onChange((userId) => registry.privacyChanged(userId));
  // Told which changes history records, as the recorder is.
  const recent = new RecentStatuses(
    () => now,
    RECENT_STATUS_MS,
    (userId, at) => recordsHistory(directory.of(userId), at),
  );
  registry.onChange(recent.observe);
  const keys = new ApiKeyService(store.apiKeys);

  await store.history.appendHistory(
    [
      write(USER.id, { status: { status: 'online', ts: NOW - 180 * MINUTE } }),
      ...PLAYS.map((play) => write(USER.id, { track: play, countsPlay: true })),
      write(USER.id, { status: { status: 'offline', ts: NOW - 50 * MINUTE }, lastSeen: NOW - 50 * MINUTE }),
    ],
    { history: 100, trackedTracks: 1000 },
  );
  // Back, and seen changing status lately: what the recent statuses hold.
  registry.memberSeen(GUILD, USER, online('online'));
  now += 1_000;
  registry.memberSeen(GUILD, USER, online('dnd'));
  registry.memberSeen(GUILD, OTHER, online('online'));

  const app = await buildTestHttpServer({ serveApi: false, keys, history: store.history });
  await app.register(
    historyRoutes({
      view,
      ownView: registry,
      history: store.history,
      keys,
      recent,
      privacy: { of: (userId) => directory.of(userId), isPrivate: (userId) => view.isPrivate(userId) },
      now: () => now,
    }),
  );
  opened.push({ app, store, directory });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    app,
    base,
    store,
    registry,
    keys,
    ownKey: await insertApiKey(store, USER.id),
    otherKey: await insertApiKey(store, OTHER.id),
    setPrivacy: async (patch) => {
      await store.privacy.patchPrivacy(USER.id, patch);
      await directory.refresh(USER.id);
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

interface Answer {
  status: number;
  body: Buffer;
  headers: Record<string, string>;
  contentLength: string | null;
}

async function read(base: string, id: string, path: string, key?: string): Promise<Answer> {
  const response = await fetch(`${base}/v1/users/${id}/${path}`, {
    headers: key === undefined ? {} : { authorization: key },
  });
  return {
    status: response.status,
    body: Buffer.from(await response.arrayBuffer()),
    headers: comparableHeaders(response),
    contentLength: response.headers.get('content-length'),
  };
}

async function data<T = Record<string, unknown>>(
  base: string,
  id: string,
  path: string,
  key?: string,
): Promise<T> {
  const answer = await read(base, id, path, key);
  expect(answer.status).toBe(200);
  return (JSON.parse(answer.body.toString()) as { data: T }).data;
}

const ids = (tracks: Array<{ track_id: string | null }>) => tracks.map((entry) => entry.track_id);

describe('history routes under privacy settings', () => {
  it('recent: the latest plays, newest first, as many as asked within 1–10, or as an RSS feed', async () => {
    const { base } = await setup();
    const recent = (path: string) => data<{ recent_tracks: TrackEntry[] }>(base, USER.id, path);
    expect(ids((await recent('recent')).recent_tracks)).toEqual(['s1', 's2', 'a1', 'a1', 's1']);
    expect(ids((await recent('recent?limit=2')).recent_tracks)).toEqual(['s1', 's2']);
    expect((await recent('recent?limit=0')).recent_tracks).toHaveLength(1);
    expect((await recent('recent?limit=99')).recent_tracks).toHaveLength(6);
    const refused = await fetch(`${base}/v1/users/${USER.id}/recent?format=atom`);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_query');

    const feed = await fetch(`${base}/v1/users/${USER.id}/recent?format=rss&limit=2`);
    expect(feed.status).toBe(200);
    expect(feed.headers.get('content-type')).toBe('application/rss+xml; charset=utf-8');
    const xml = await feed.text();
    expect(xml).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<rss version="2.0"><channel>/);
    expect(xml.match(/<item>/g)).toHaveLength(2);
    expect(xml).toContain('<title>s1 — A</title>');
    expect(xml).toContain(`<pubDate>${new Date(NOW - 60 * MINUTE).toUTCString()}</pubDate>`);
    expect(xml).toContain('<title>alice: recently played</title>');
  });

  it("answers for a private user exactly what an unknown id gets, whatever key comes but the user's own", async () => {
    const { base, setPrivacy, otherKey } = await setup();
    const unknown = await Promise.all(PATHS.map((path) => read(base, UNKNOWN, path)));
    expect(JSON.parse(unknown[1]?.body.toString() ?? '')).toEqual({
      success: true,
      data: {
        current_status: 'offline',
        last_seen: null,
        tracks_today: 0,
        track_history_count: 0,
        is_monitored: false,
      },
    });
    // Public, the user has a history to hide.
    for (const [index, path] of PATHS.entries()) {
      expect((await read(base, USER.id, path)).body.equals(unknown[index]?.body as Buffer)).toBe(false);
    }

    await setPrivacy({ visibility: 'private' });
    for (const key of [
      undefined,
      otherKey,
      `Bearer ${otherKey}`,
      'prs_not-a-key',
      'Bearer ',
      'x'.repeat(300),
    ]) {
      for (const [index, path] of PATHS.entries()) {
        const expected = unknown[index] as Answer;
        const answer = await read(base, USER.id, path, key);
        expect(answer.status, `${path} with ${key}`).toBe(expected.status);
        expect(answer.body.toString(), `${path} with ${key}`).toBe(expected.body.toString());
        expect(answer.body.equals(expected.body)).toBe(true);
        expect(answer.headers, `${path} with ${key}`).toEqual(expected.headers);
        expect(answer.contentLength).toBe(expected.contentLength);
      }
    }
  });

  it("answers a private user's own key with their real history, live status included", async () => {
    const { base, setPrivacy, ownKey } = await setup();
    const asPublic = await Promise.all(PATHS.map((path) => read(base, USER.id, path)));
    await setPrivacy({ visibility: 'private' });
    for (const key of [ownKey, `Bearer ${ownKey}`]) {
      for (const [index, path] of PATHS.entries()) {
        expect((await read(base, USER.id, path, key)).body.toString()).toBe(asPublic[index]?.body.toString());
      }
    }
    expect(await data(base, USER.id, 'stats', ownKey)).toEqual({
      current_status: 'dnd',
      last_seen: NOW + 1_000,
      tracks_today: 5,
      track_history_count: 6,
      is_monitored: true,
    });
    const history = await data<{ status_history: unknown[]; track_history: TrackEntry[] }>(
      base,
      USER.id,
      'history',
      ownKey,
    );
    expect(history.status_history).toEqual([
      { status: 'dnd', ts: NOW + 1_000 },
      { status: 'online', ts: NOW },
      { status: 'offline', ts: NOW - 50 * MINUTE },
      { status: 'online', ts: NOW - 180 * MINUTE },
    ]);
    expect(ids(history.track_history)).toEqual(['s1', 's2', 'a1', 'a1', 's1', 's1']);
  });

  it('looks at no key for a public user', async () => {
    const { base, keys, otherKey } = await setup();
    const ownerOf = vi.spyOn(keys, 'ownerOf');
    for (const path of PATHS) {
      const plain = await read(base, USER.id, path);
      const keyed = await read(base, USER.id, path, otherKey);
      expect(keyed.body.toString()).toBe(plain.body.toString());
    }
    expect(ownerOf).not.toHaveBeenCalled();
  });

  it('show_last_seen: false answers last_seen null and nothing else differs', async () => {
    const { base, registry, setPrivacy } = await setup();
    registry.memberSeen(GUILD, USER, online('offline'));
    const before = await data(base, USER.id, 'stats');
    expect(before.last_seen).toBe(NOW + 1_000);
    await setPrivacy({ show_last_seen: false });
    expect(await data(base, USER.id, 'stats')).toEqual({ ...before, last_seen: null });
    // While online too, where it would be the time of the read.
    registry.memberSeen(GUILD, USER, online('idle'));
    expect(await data(base, USER.id, 'stats')).toEqual(expect.objectContaining({ last_seen: null }));
  });

  it('leaves the plays of hidden music sources out of the track history, top tracks and both counts', async () => {
    const { base, setPrivacy, ownKey } = await setup();
    await setPrivacy({ hide_music_sources: ['spotify'] });
    const history = await data<{ track_history: TrackEntry[] }>(base, USER.id, 'history');
    expect(ids(history.track_history)).toEqual(['a1', 'a1']);
    const recent = await data<{ recent_tracks: TrackEntry[] }>(base, USER.id, 'recent?limit=1');
    expect(ids(recent.recent_tracks)).toEqual(['a1']);
    const top = await data<{ top_tracks: TrackEntry[] }>(base, USER.id, 'top-tracks');
    expect(ids(top.top_tracks)).toEqual(['a1']);
    // s1, the most played, is hidden: the one place asked for goes to the next shown.
    expect(
      ids((await data<{ top_tracks: TrackEntry[] }>(base, USER.id, 'top-tracks?limit=1')).top_tracks),
    ).toEqual(['a1']);
    expect(await data(base, USER.id, 'stats')).toEqual(
      expect.objectContaining({ tracks_today: 2, track_history_count: 2 }),
    );

    // A hidden application hides the service it plays, for its owner too.
    await setPrivacy({
      hide_music_sources: [],
      hide_application_ids: [APPLE_MUSIC_APP],
      visibility: 'private',
    });
    const own = await data<{ track_history: TrackEntry[] }>(base, USER.id, 'history', ownKey);
    expect(ids(own.track_history)).toEqual(['s1', 's2', 's1', 's1']);
    expect(
      ids((await data<{ top_tracks: TrackEntry[] }>(base, USER.id, 'top-tracks', ownKey)).top_tracks),
    ).toEqual(['s1']);
    // s1 yesterday is in the history, not in today's plays.
    expect(await data(base, USER.id, 'stats', ownKey)).toEqual(
      expect.objectContaining({ tracks_today: 3, track_history_count: 4 }),
    );
  });

  it('hides every play when listening is hidden', async () => {
    const { base, setPrivacy } = await setup();
    await setPrivacy({ hide_activity_types: ['listening'] });
    expect(await data(base, USER.id, 'history')).toEqual(expect.objectContaining({ track_history: [] }));
    expect(await data(base, USER.id, 'top-tracks')).toEqual({ top_tracks: [] });
    expect(await data(base, USER.id, 'recent')).toEqual({ recent_tracks: [] });
    expect(await data(base, USER.id, 'stats')).toEqual(
      expect.objectContaining({ tracks_today: 0, track_history_count: 0, is_monitored: true }),
    );
  });

  it('while paused: offline, no last_seen, no plays, and the status history as it was', async () => {
    const { base, setPrivacy, advance } = await setup();
    const statusBefore = (await data(base, USER.id, 'history')).status_history;
    advance(1_000);
    await setPrivacy({ paused_until: NOW + 60 * MINUTE });
    expect(await data(base, USER.id, 'stats')).toEqual({
      current_status: 'offline',
      last_seen: null,
      tracks_today: 0,
      track_history_count: 0,
      is_monitored: true,
    });
    expect(await data(base, USER.id, 'history')).toEqual({ status_history: statusBefore, track_history: [] });
    expect(await data(base, USER.id, 'top-tracks')).toEqual({ top_tracks: [] });

    // Once it has ended, all is shown again.
    advance(60 * MINUTE);
    expect(await data(base, USER.id, 'stats')).toEqual(
      expect.objectContaining({ last_seen: NOW - 50 * MINUTE, tracks_today: 5, track_history_count: 6 }),
    );
  });

  it('puts in the status history nothing seen live while history is not recorded', async () => {
    const { base, registry, setPrivacy, advance } = await setup();
    await setPrivacy({ record_history: false });
    const before = (await data(base, USER.id, 'history')).status_history;
    advance(1_000);
    registry.memberSeen(GUILD, USER, online('idle'));
    advance(1_000);
    registry.memberSeen(GUILD, USER, online('offline'));
    expect((await data(base, USER.id, 'history')).status_history).toEqual(before);
    // The live status is no history: it is shown as ever; going offline unrecorded moves no last_seen.
    expect(await data(base, USER.id, 'stats')).toEqual(
      expect.objectContaining({ current_status: 'offline', last_seen: NOW - 50 * MINUTE }),
    );
  });
});
