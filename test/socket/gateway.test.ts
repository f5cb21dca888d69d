import { inflateSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventually, within } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { type Frame, rawUpgrade, refusedUpgrade, SocketClient, socketUrl, terminateAll } from './client.js';
import {
  ALICE,
  apiKeyFor,
  BOB,
  bump,
  CAROL,
  DAVE,
  ERIN,
  FIXTURE_USERS,
  fixtureReady,
  GUILD_A,
  NOBODY,
  type PresenceData,
  playTrack,
  presenceOf,
  restPresence,
  seed,
  updatedUsers,
  updateFor,
} from './fixture.js';

const ZLIB = '?compression=zlib_json';

afterEach(async () => {
  await terminateAll();
});

/** Frames before the barrier's own update, which is dropped. */
async function untilBarrier(h: Harness, client: SocketClient): Promise<Frame[]> {
  bump(h, ERIN);
  const frames = await client.until(updateFor(ERIN));
  return frames.slice(0, -1);
}

/** An op 2 that subscribes to nothing: its INIT_STATE proves every earlier frame of ours was handled. */
async function sync(client: SocketClient): Promise<void> {
  const init = await client.subscribe({ subscribe_to_ids: [] });
  expect(init.d).toEqual({});
}

async function kvRequest(
  h: Harness,
  method: 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  key: string,
  body?: string,
): Promise<void> {
  const response = await fetch(`${h.base}${path}`, {
    method,
    headers: { Authorization: key, ...(method === 'PATCH' ? { 'Content-Type': 'application/json' } : {}) },
    ...(body === undefined ? {} : { body }),
  });
  expect(response.status, await response.clone().text()).toBe(204);
}

describe('the socket gateway on a live service', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ setup: seed });
    await fixtureReady(h);
  });

  afterAll(async () => {
    await terminateAll();
    await h?.close();
  });

  describe('Hello', () => {
    it('is the first frame: op 1 with heartbeat_interval 30000, as text', async () => {
      const client = await SocketClient.open(socketUrl(h.base));
      expect(await client.next()).toEqual({ op: 1, d: { heartbeat_interval: 30_000 } });
      expect(client.raw[0]?.binary).toBe(false);
      expect(client.raw[0]?.data.toString()).toBe('{"op":1,"d":{"heartbeat_interval":30000}}');
    });

    it('with ?compression=zlib_json it is a binary zlib frame', async () => {
      const client = await SocketClient.open(socketUrl(h.base, ZLIB));
      expect(await client.next()).toEqual({ op: 1, d: { heartbeat_interval: 30_000 } });
      const raw = client.raw[0];
      expect(raw?.binary).toBe(true);
      expect(raw?.data[0]).toBe(0x78);
      expect(inflateSync(raw?.data as Buffer).toString()).toBe('{"op":1,"d":{"heartbeat_interval":30000}}');
    });

    it('another compression value, or other query parameters, leave frames as text', async () => {
      const client = await SocketClient.open(socketUrl(h.base, '?compression=zstd&v=2'));
      await client.next();
      expect(client.raw[0]?.binary).toBe(false);
      const zipped = await SocketClient.open(socketUrl(h.base, '?v=2&compression=zlib_json'));
      await zipped.next();
      expect(zipped.raw[0]?.binary).toBe(true);
    });
  });

  describe('INIT_STATE', () => {
    it('subscribe_to_id: the presence, equal to GET /v1/users/:id, with seq 1', async () => {
      const client = await SocketClient.connect(h.base);
      const init = await client.subscribe({ subscribe_to_id: ALICE });
      expect(init).toMatchObject({ op: 0, seq: 1, t: 'INIT_STATE' });
      expect(Object.keys(init)).toEqual(['op', 'seq', 't', 'd']);
      expect(init.d).toEqual(await restPresence(h, ALICE));
      expect(presenceOf(init)).toMatchObject({ discord_user: { id: ALICE }, discord_status: 'online' });
    });

    it('subscribe_to_id of a user nobody monitors: {}', async () => {
      const client = await SocketClient.connect(h.base);
      const init = await client.subscribe({ subscribe_to_id: NOBODY });
      expect(init).toEqual({ op: 0, seq: 1, t: 'INIT_STATE', d: {} });
    });

    it('subscribe_to_id of an offline monitored user: the offline presence', async () => {
      const client = await SocketClient.connect(h.base);
      const init = await client.subscribe({ subscribe_to_id: CAROL });
      expect(presenceOf(init).discord_status).toBe('offline');
      expect(init.d).toEqual(await restPresence(h, CAROL));
    });

    it('subscribe_to_ids: a map id → presence, unmonitored ids left out', async () => {
      const client = await SocketClient.connect(h.base);
      const init = await client.subscribe({ subscribe_to_ids: [ALICE, NOBODY, CAROL, ALICE] });
      expect(init).toMatchObject({ op: 0, seq: 1, t: 'INIT_STATE' });
      const map = init.d as Record<string, PresenceData>;
      expect(Object.keys(map).sort()).toEqual([ALICE, CAROL].sort());
      expect(map[ALICE]).toEqual(await restPresence(h, ALICE));
      expect(map[CAROL]).toEqual(await restPresence(h, CAROL));
    });

    it('subscribe_to_ids of one id is still a map', async () => {
      const client = await SocketClient.connect(h.base);
      const init = await client.subscribe({ subscribe_to_ids: [BOB] });
      expect(init.d).toEqual({ [BOB]: await restPresence(h, BOB) });
    });

    it('subscribe_to_all: every monitored user, offline ones included', async () => {
      const client = await SocketClient.connect(h.base);
      const init = await client.subscribe({ subscribe_to_all: true });
      const map = init.d as Record<string, PresenceData>;
      const monitored = [...h.app.registry.snapshots()].map(([id]) => id);
      expect(Object.keys(map).sort()).toEqual(monitored.sort());
      for (const id of FIXTURE_USERS) expect(map[id]).toEqual(await restPresence(h, id));
      expect(map[CAROL]?.discord_status).toBe('offline');
      expect(map[NOBODY]).toBeUndefined();
    });

    it('each op 2 is answered, with seq counting up', async () => {
      const client = await SocketClient.connect(h.base);
      expect((await client.subscribe({ subscribe_to_id: ALICE })).seq).toBe(1);
      const second = await client.subscribe({ subscribe_to_ids: [ALICE, BOB] });
      expect(second.seq).toBe(2);
      expect(Object.keys(second.d as object).sort()).toEqual([ALICE, BOB].sort());
      expect((await client.subscribe({ subscribe_to_all: true })).seq).toBe(3);
    });
  });

  describe('PRESENCE_UPDATE', () => {
    it('on a presence change: the full presence plus user_id, with the next seq', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_id: ALICE });
      const text = bump(h, ALICE, 'dnd');
      const frame = await client.next();
      expect(frame).toMatchObject({ op: 0, seq: 2, t: 'PRESENCE_UPDATE' });
      expect(Object.keys(frame)).toEqual(['op', 'seq', 't', 'd']);
      const { user_id, ...presence } = presenceOf(frame);
      expect(user_id).toBe(ALICE);
      expect(Object.keys(presenceOf(frame))[0]).toBe('user_id');
      expect(presence).toMatchObject({ discord_status: 'dnd', custom_status: { text } });
      expect(presence).toEqual(await restPresence(h, ALICE));
    });

    it('seq counts per socket', async () => {
      const one = await SocketClient.connect(h.base);
      const two = await SocketClient.connect(h.base);
      await one.subscribe({ subscribe_to_id: ALICE });
      await two.subscribe({ subscribe_to_id: BOB });
      await two.subscribe({ subscribe_to_id: ALICE });
      await two.subscribe({ subscribe_to_id: NOBODY });
      bump(h, ALICE);
      bump(h, ALICE, 'idle');
      const fromOne = [await one.next(), await one.next()];
      const fromTwo = [await two.next(), await two.next()];
      expect(fromOne.map((frame) => frame.seq)).toEqual([2, 3]);
      expect(fromTwo.map((frame) => frame.seq)).toEqual([4, 5]);
      expect(fromOne.map((frame) => frame.d)).toEqual(fromTwo.map((frame) => frame.d));
    });

    it('subscriptions add up across op 2s and repeats are ignored: one change, one frame', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_id: ALICE });
      await client.subscribe({ subscribe_to_ids: [ALICE, BOB] });
      await client.subscribe({ subscribe_to_ids: [BOB, ERIN, ALICE] });
      await client.subscribe({ subscribe_to_id: ALICE });
      const text = bump(h, ALICE);
      bump(h, BOB);
      const frames = await untilBarrier(h, client);
      expect(updatedUsers(frames)).toEqual([ALICE, BOB]);
      expect(frames.map((frame) => frame.seq)).toEqual([5, 6]);
      expect(presenceOf(frames[0] as Frame).custom_status?.text).toBe(text);
    });

    it('subscribed by id and to all: still one frame per change', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [ALICE, ERIN] });
      await client.subscribe({ subscribe_to_all: true });
      await client.subscribe({ subscribe_to_all: true, subscribe_to_id: ALICE });
      bump(h, ALICE);
      bump(h, CAROL, 'idle');
      const frames = await untilBarrier(h, client);
      expect(updatedUsers(frames)).toEqual([ALICE, CAROL]);
      h.simulator.setPresence(CAROL, { status: 'offline' }); // as she was
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([CAROL]);
    });

    it('only to the users subscribed to', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [BOB, ERIN] });
      bump(h, ALICE);
      bump(h, DAVE, 'dnd');
      bump(h, BOB, 'idle');
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([BOB]);
    });

    it('on every KV change (PUT, PATCH, DELETE), with the new kv', async () => {
      const key = await apiKeyFor(h, ALICE);
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [ALICE, ERIN] });

      await kvRequest(h, 'PUT', `/v1/users/${ALICE}/kv/mood`, key, 'happy');
      let frame = await client.next();
      expect(presenceOf(frame)).toMatchObject({ user_id: ALICE, kv: { mood: 'happy' } });
      expect({ ...presenceOf(frame), user_id: undefined }).toEqual({
        ...(await restPresence(h, ALICE)),
        user_id: undefined,
      });

      await kvRequest(h, 'PATCH', '/v1/users/@me/kv', key, JSON.stringify({ a: '1', b: '2' }));
      frame = await client.next();
      expect(presenceOf(frame).kv).toEqual({ mood: 'happy', a: '1', b: '2' });
      expect(await untilBarrier(h, client)).toEqual([]); // one PATCH, one frame

      await kvRequest(h, 'DELETE', `/v1/users/${ALICE}/kv/mood`, key);
      frame = await client.next();
      expect(presenceOf(frame)).toMatchObject({ user_id: ALICE, kv: { a: '1', b: '2' } });
      // A write that changes nothing (the same value again) is no change: no frame.
      await kvRequest(h, 'PATCH', `/v1/users/${ALICE}/kv`, key, '{"a":"1"}');
      expect(await untilBarrier(h, client)).toEqual([]);

      await kvRequest(h, 'DELETE', `/v1/users/${ALICE}/kv/a`, key);
      await kvRequest(h, 'DELETE', `/v1/users/${ALICE}/kv/b`, key);
      expect((await client.next()).d).toMatchObject({ kv: { b: '2' } });
      expect((await client.next()).d).toMatchObject({ kv: {} });
    });

    it('per-guild copies of one change (user in two guilds, copies shifted in time): exactly one frame', async () => {
      const byId = await SocketClient.connect(h.base);
      const toAll = await SocketClient.connect(h.base);
      await byId.subscribe({ subscribe_to_ids: [DAVE, ERIN] });
      await toAll.subscribe({ subscribe_to_all: true });

      const song = playTrack(h, DAVE, { jitterMs: 3_000 });
      const byIdFrames = await untilBarrier(h, byId);
      const toAllFrames = await toAll.until(updateFor(ERIN));
      expect(updatedUsers(byIdFrames)).toEqual([DAVE]);
      expect(updatedUsers(toAllFrames)).toEqual([DAVE, ERIN]);
      expect(presenceOf(byIdFrames[0] as Frame).now_playing?.song).toBe(song);

      const text = bump(h, DAVE, 'dnd', { jitterMs: 3_000 });
      const again = await untilBarrier(h, byId);
      expect(updatedUsers(again)).toEqual([DAVE]);
      expect(presenceOf(again[0] as Frame).custom_status?.text).toBe(text);
    });

    it('identical per-guild copies: exactly one frame', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [DAVE, ERIN] });
      bump(h, DAVE, 'idle');
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([DAVE]);
    });

    it('a pending member, not rendered yet, is rendered for the subscriber and reaches it in INIT_STATE only', async () => {
      const listed = '90000000000000002';
      const toAll = await SocketClient.connect(h.base);
      await toAll.subscribe({ subscribe_to_all: true });
      // As a member chunk has it: the service's pending renderer is not told, so it waits for this read.
      h.app.registry.memberListed(
        GUILD_A,
        { id: listed, username: 'listed' },
        { status: 'dnd', client_status: { mobile: 'dnd' }, activities: [] },
      );
      const client = await SocketClient.connect(h.base);
      const init = await client.subscribe({ subscribe_to_ids: [listed, ERIN] });
      expect(init.seq).toBe(1);
      const { user_id: _, ...presence } = (init.d as Record<string, PresenceData>)[listed] ?? {};
      expect(presence).toMatchObject({ discord_status: 'dnd', active_on_discord_mobile: true });
      expect(presence).toEqual(await restPresence(h, listed));
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([]);
      // Announced to those already listening, as a user who became monitored.
      const announced = await toAll.until(updateFor(listed));
      expect(presenceOf(announced.at(-1) as Frame)).toMatchObject({ discord_status: 'dnd' });

      h.app.registry.memberRemoved(GUILD_A, listed); // leave the fixture as it was
    });

    it('subscribe_to_all while pending members wait to be rendered: answered once they are, with them, then the commands after it', async () => {
      const listed = ['90000000000000003', '90000000000000004'];
      for (const id of listed) {
        h.app.registry.memberListed(
          GUILD_A,
          { id, username: `listed${id.slice(-1)}` },
          { status: 'online', client_status: { desktop: 'online' }, activities: [] },
        );
      }
      const client = await SocketClient.connect(h.base);
      client.send({ op: 2, d: { subscribe_to_all: true } });
      client.send({ op: 2, d: { subscribe_to_id: ALICE } });
      // Both commands were read (the pong follows them), and nothing was answered yet.
      expect(await client.ping()).toBe('pong');
      expect(client.pending).toEqual([]);

      h.app.registry.renderPending(10);
      const all = await client.next();
      expect(all).toMatchObject({ op: 0, seq: 1, t: 'INIT_STATE' });
      for (const id of listed) {
        expect((all.d as Record<string, PresenceData>)[id]).toMatchObject({ discord_status: 'online' });
      }
      const single = await client.next();
      expect(single).toMatchObject({ op: 0, seq: 2, t: 'INIT_STATE' });
      expect(presenceOf(single).discord_user.id).toBe(ALICE);
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([]);

      for (const id of listed) h.app.registry.memberRemoved(GUILD_A, id); // leave the fixture as it was
    });

    it('commands large and small sent after a waiting subscribe_to_all are answered in the order sent', async () => {
      const listed = '90000000000000005';
      h.app.registry.memberListed(
        GUILD_A,
        { id: listed, username: 'listed5' },
        { status: 'online', client_status: { desktop: 'online' }, activities: [] },
      );
      const client = await SocketClient.connect(h.base);
      // More than a kilobyte: it waits its turn in the command queue, as bytes.
      const many = [ALICE, ...Array.from({ length: 80 }, (_, i) => String(10n ** 17n + BigInt(i)))];
      client.send({ op: 2, d: { subscribe_to_all: true } });
      client.send({ op: 2, d: { subscribe_to_ids: many } });
      client.send({ op: 2, d: { subscribe_to_id: ERIN } });
      expect(await client.ping()).toBe('pong');
      expect(client.pending).toEqual([]);

      h.app.registry.renderPending(10);
      const [all, ofMany, single] = [await client.next(), await client.next(), await client.next()];
      expect([all.seq, ofMany.seq, single.seq]).toEqual([1, 2, 3]);
      expect((all.d as Record<string, unknown>)[listed]).toBeDefined();
      expect(Object.keys(ofMany.d as object)).toEqual([ALICE]);
      expect(presenceOf(single).discord_user.id).toBe(ERIN);

      h.app.registry.memberRemoved(GUILD_A, listed); // leave the fixture as it was
    });

    it('subscribe_to_all hears of a user who becomes monitored after it subscribed; so does a subscriber by id', async () => {
      const newcomer = '90000000000000001';
      const toAll = await SocketClient.connect(h.base);
      const byId = await SocketClient.connect(h.base);
      const other = await SocketClient.connect(h.base);
      const init = await toAll.subscribe({ subscribe_to_all: true });
      expect((init.d as Record<string, unknown>)[newcomer]).toBeUndefined();
      expect((await byId.subscribe({ subscribe_to_id: newcomer })).d).toEqual({});
      await other.subscribe({ subscribe_to_ids: [ALICE, ERIN] });

      h.simulator.addMember(GUILD_A, {
        user: { id: newcomer, username: 'newcomer' },
        presence: { status: 'online', activities: [] },
      });
      const online = (frame: Frame) =>
        updateFor(newcomer)(frame) && presenceOf(frame).discord_status === 'online';
      const toAllFrames = await toAll.until(online);
      const byIdFrames = await byId.until(online);
      expect(updatedUsers(toAllFrames).every((id) => id === newcomer)).toBe(true);
      expect(updatedUsers(byIdFrames).every((id) => id === newcomer)).toBe(true);
      const { user_id: _, ...presence } = presenceOf(toAllFrames.at(-1) as Frame);
      expect(presence).toEqual(await restPresence(h, newcomer));
      expect(updatedUsers(await untilBarrier(h, other))).toEqual([]);

      h.simulator.removeMember(GUILD_A, newcomer); // leave the fixture as it was
      await eventually(() => expect(h.app.registry.isMonitored(newcomer)).toBe(false));
    });
  });

  describe('op 4 unsubscribe', () => {
    it('unsubscribe_from_id: no more frames for that user, the others still come', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [ALICE, BOB, ERIN] });
      client.send({ op: 4, d: { unsubscribe_from_id: ALICE } });
      await sync(client);
      bump(h, ALICE);
      bump(h, BOB);
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([BOB]);
    });

    it('unsubscribe_from_ids: none of them any more', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [ALICE, BOB, DAVE, ERIN] });
      client.send({ op: 4, d: { unsubscribe_from_ids: [ALICE, BOB, NOBODY] } });
      await sync(client);
      bump(h, ALICE);
      bump(h, BOB);
      bump(h, DAVE, 'dnd');
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([DAVE]);
    });

    it('unsubscribe_from_all: nothing any more, until it subscribes again', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_all: true });
      await client.subscribe({ subscribe_to_ids: [ALICE, BOB] });
      client.send({ op: 4, d: { unsubscribe_from_all: true } });
      await sync(client);
      const init = await client.subscribe({ subscribe_to_id: ERIN }); // the barrier user only
      expect(init.d).toEqual(await restPresence(h, ERIN));
      bump(h, ALICE);
      bump(h, BOB);
      bump(h, CAROL, 'idle');
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([]);
      h.simulator.setPresence(CAROL, { status: 'offline' });
    });

    it('unsubscribing from what was never subscribed changes nothing', async () => {
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [ALICE, ERIN] });
      client.send({ op: 4, d: { unsubscribe_from_ids: [BOB, NOBODY] } });
      await sync(client);
      bump(h, ALICE);
      expect(updatedUsers(await untilBarrier(h, client))).toEqual([ALICE]);
    });
  });

  describe('zlib_json', () => {
    it('every frame is binary zlib and inflates to the JSON an uncompressed socket gets', async () => {
      const plain = await SocketClient.connect(h.base);
      const zipped = await SocketClient.connect(h.base, ZLIB);
      for (const client of [plain, zipped]) {
        await client.subscribe({ subscribe_to_id: ALICE });
        await client.subscribe({ subscribe_to_ids: [BOB, NOBODY, ERIN] });
      }
      const all = [
        await plain.subscribe({ subscribe_to_all: true }),
        await zipped.subscribe({ subscribe_to_all: true }),
      ];
      expect(all[1]).toEqual(all[0]);
      bump(h, ALICE);
      bump(h, BOB, 'idle');
      bump(h, CAROL, 'dnd');
      h.simulator.setPresence(CAROL, { status: 'offline' });
      bump(h, ERIN);
      const fromPlain = await plain.until(updateFor(ERIN));
      const fromZipped = await zipped.until(updateFor(ERIN));
      expect(updatedUsers(fromPlain)).toEqual([ALICE, BOB, CAROL, CAROL, ERIN]);
      expect(fromZipped).toEqual(fromPlain);
      expect(zipped.frames).toEqual(plain.frames);

      expect(zipped.raw.length).toBe(zipped.frames.length);
      for (const [i, raw] of zipped.raw.entries()) {
        expect(raw.binary).toBe(true);
        expect(inflateSync(raw.data).toString()).toBe(plain.raw[i]?.data.toString());
      }
      for (const raw of plain.raw) expect(raw.binary).toBe(false);
    });

    it('the same event at different seqs: the same JSON but for seq', async () => {
      const plain = await SocketClient.connect(h.base);
      const zipped = await SocketClient.connect(h.base, ZLIB);
      await zipped.subscribe({ subscribe_to_id: NOBODY }); // one frame ahead
      await plain.subscribe({ subscribe_to_ids: [ALICE, ERIN] });
      await zipped.subscribe({ subscribe_to_ids: [ALICE, ERIN] });
      bump(h, ALICE);
      bump(h, ERIN);
      const a = await plain.until(updateFor(ERIN));
      const b = await zipped.until(updateFor(ERIN));
      expect(b.map((frame) => frame.seq)).toEqual(a.map((frame) => (frame.seq ?? 0) + 1));
      expect(b.map(({ seq: _, ...rest }) => rest)).toEqual(a.map(({ seq: _, ...rest }) => rest));
    });

    it('a presence over 100 KB (large KV) arrives whole on both', async () => {
      const key = await apiKeyFor(h, BOB);
      const plain = await SocketClient.connect(h.base);
      const zipped = await SocketClient.connect(h.base, ZLIB);
      await plain.subscribe({ subscribe_to_id: BOB });
      await zipped.subscribe({ subscribe_to_id: BOB });
      const big = Object.fromEntries(
        Array.from({ length: 5 }, (_, i) => [`k${i}`, Buffer.alloc(22_500, i * 7 + 1).toString('base64')]),
      );
      await kvRequest(h, 'PATCH', `/v1/users/${BOB}/kv`, key, JSON.stringify(big));
      const a = await plain.next();
      const b = await zipped.next();
      expect(b).toEqual(a);
      expect(presenceOf(a).kv).toEqual(big);
      expect(plain.raw.at(-1)?.data.length).toBeGreaterThan(100_000);
      expect(zipped.raw.at(-1)?.binary).toBe(true);
      await kvRequest(h, 'PATCH', `/v1/users/${BOB}/kv`, key, '{}');
      for (const k of Object.keys(big)) await kvRequest(h, 'DELETE', `/v1/users/${BOB}/kv/${k}`, key);
    });
  });

  describe('closes', () => {
    const closesWith = async (
      frame: string | Buffer,
      code: number,
      reason: string,
      query = '',
    ): Promise<void> => {
      const client = await SocketClient.connect(h.base, query);
      if (typeof frame === 'string') client.send(frame);
      else client.ws.send(frame);
      expect(await client.closedWith()).toEqual({ code, reason });
    };

    it.each([
      ['missing op', '{}'],
      ['op 0', '{"op":0,"d":{}}'],
      ['op 1', '{"op":1,"d":{}}'],
      ['op 5', '{"op":5,"d":{}}'],
      ['op "2"', `{"op":"2","d":{"subscribe_to_id":"${ALICE}"}}`],
    ])('4004 unknown_opcode: %s', async (_name, frame) => {
      await closesWith(frame, 4004, 'unknown_opcode');
    });

    it.each([
      ['op 2 without d', '{"op":2}'],
      ['op 2 with d null', '{"op":2,"d":null}'],
      ['op 2 with d an array', `{"op":2,"d":["${ALICE}"]}`],
      ['op 2 with d a string', `{"op":2,"d":"${ALICE}"}`],
      ['op 4 without d', '{"op":4}'],
      ['op 4 with d null', '{"op":4,"d":null}'],
    ])('4005 requires_data_object: %s', async (_name, frame) => {
      await closesWith(frame, 4005, 'requires_data_object');
    });

    it.each([
      ['not JSON', 'hello'],
      ['a JSON array', '[]'],
      ['JSON null', 'null'],
      ['an id that is not a snowflake', '{"op":2,"d":{"subscribe_to_id":"abc"}}'],
      ['an id over 64 bits', '{"op":2,"d":{"subscribe_to_ids":["18446744073709551616"]}}'],
      ['an id that is a number', '{"op":2,"d":{"subscribe_to_ids":[80351110224678912]}}'],
      ['subscribe_to_all not a boolean', '{"op":2,"d":{"subscribe_to_all":"true"}}'],
      ['op 2 without a subscription', '{"op":2,"d":{}}'],
      ['op 4 without an unsubscription', '{"op":4,"d":{}}'],
    ])('4006 invalid_payload: %s', async (_name, frame) => {
      await closesWith(frame, 4006, 'invalid_payload');
    });

    it('4006 for a binary frame that is not JSON, on a zlib socket too', async () => {
      await closesWith(Buffer.from([0xff, 0x00, 0x12]), 4006, 'invalid_payload');
      await closesWith('nope', 4006, 'invalid_payload', ZLIB);
    });

    it('a bad frame after good ones still closes, and the socket’s subscriptions go', async () => {
      const before = h.app.sockets.subscriptions.count;
      const client = await SocketClient.connect(h.base);
      await client.subscribe({ subscribe_to_ids: [ALICE, BOB] });
      await client.subscribe({ subscribe_to_all: true });
      expect(h.app.sockets.subscriptions.count).toBe(before + 3);
      client.send('{"op":7}');
      expect(await client.closedWith()).toEqual({ code: 4004, reason: 'unknown_opcode' });
      await eventually(() => expect(h.app.sockets.subscriptions.count).toBe(before));
    });

    it('1009 for a client frame over 64 KiB; exactly 64 KiB is fine', async () => {
      const client = await SocketClient.connect(h.base);
      const heartbeat = '{"op":3}';
      client.send(heartbeat + ' '.repeat(64 * 1024 - heartbeat.length));
      await sync(client); // still open and answering
      client.send(heartbeat + ' '.repeat(64 * 1024 - heartbeat.length + 1));
      const closed = await client.closedWith();
      expect(closed.code).toBe(1009);
    });

    it('a binary frame over 64 KiB: 1009 too', async () => {
      const client = await SocketClient.connect(h.base, ZLIB);
      client.ws.send(Buffer.alloc(100 * 1024, 0x20));
      expect((await client.closedWith()).code).toBe(1009);
    });
  });

  describe('upgrades', () => {
    // `//` is no URL: reading it as one threw in the upgrade handler and ended the whole process.
    // `//localhost/socket` read as a URL is /socket; as a path it is not.
    it.each([
      '/nope',
      '/socket/extra',
      '/v1/users/80351110224678912',
      '/Socket',
      '/',
      '//',
      '//localhost/socket',
    ])('an upgrade to %s is refused with 404 JSON', async (path) => {
      const refused = await refusedUpgrade(`${h.base.replace(/^http/, 'ws')}${path}`);
      expect(refused.statusCode).toBe(404);
      expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(refused.body)).toMatchObject({ success: false, error: { code: 'not_found' } });
    });

    it('the HTTP API is untouched by the socket gateway', async () => {
      expect((await fetch(`${h.base}/v1/users/${ALICE}`)).status).toBe(200);
      expect((await fetch(`${h.base}/socket`)).status).toBe(404);
    });
  });
});

describe('heartbeats', () => {
  /** Short, so the tests see the timeout act; the gateway sweeps every half interval. */
  const INTERVAL_MS = 200;
  let h: Harness;

  /** Moves the clock on by half an interval: one sweep of the gateway. */
  const sweep = (times = 1): void => {
    for (let i = 0; i < times; i++) vi.advanceTimersByTime(INTERVAL_MS / 2);
  };

  beforeAll(async () => {
    // The sweep runs on setInterval and judges silence by Date.now(): both are the tests' to move, so a
    // socket's silence is what the test makes it, whatever the machine's load.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    h = await startHarness({ setup: seed, socket: { heartbeatIntervalMs: INTERVAL_MS } });
  });

  afterAll(async () => {
    vi.useRealTimers();
    await terminateAll();
    await h?.close();
  });

  it('Hello advertises the configured interval', async () => {
    const client = await SocketClient.open(socketUrl(h.base));
    expect(await client.next()).toEqual({ op: 1, d: { heartbeat_interval: INTERVAL_MS } });
  });

  it('4007 heartbeat_timeout for a socket silent past 2 × the interval; a heartbeating one stays', async () => {
    const silent = await SocketClient.connect(h.base);
    const zippedSilent = await SocketClient.connect(h.base, ZLIB);
    const beating = await SocketClient.connect(h.base);
    /** A heartbeat the server has taken (its pong says so), then half an interval. */
    const beatThenSweep = async (): Promise<void> => {
      beating.send({ op: 3 });
      expect(await beating.ping()).toBe('pong');
      sweep();
    };

    // Silent for exactly two intervals: still open (a ping is answered, and is no sign of life itself).
    for (let i = 0; i < 4; i++) await beatThenSweep();
    expect(await silent.ping()).toBe('pong');
    expect(await zippedSilent.ping()).toBe('pong');
    // The next sweep closes both.
    await beatThenSweep();
    expect(await silent.closedWith()).toEqual({ code: 4007, reason: 'heartbeat_timeout' });
    expect(await zippedSilent.closedWith()).toEqual({ code: 4007, reason: 'heartbeat_timeout' });

    // The one that heartbeats stays, however long it goes on.
    for (let i = 0; i < 8; i++) await beatThenSweep();
    expect(beating.closeEvent).toBeUndefined();
    await sync(beating);

    // …and once it stops, it goes too: not within two intervals, at the sweep after.
    sweep(4);
    expect(await beating.ping()).toBe('pong');
    sweep();
    expect(await beating.closedWith()).toEqual({ code: 4007, reason: 'heartbeat_timeout' });
  });

  it('any frame counts as a sign of life, not only op 3', async () => {
    const client = await SocketClient.connect(h.base);
    // An op 2 every one and a half intervals, well within the command budget: only silence could close it.
    for (let i = 0; i < 8; i++) {
      await sync(client);
      sweep(3);
    }
    expect(await client.ping()).toBe('pong');
    expect(client.closeEvent).toBeUndefined();
  });
});

describe('slow consumers', () => {
  let h: Harness;

  beforeAll(async () => {
    // Large updates one after the other, none held back: what fills a socket that does not read.
    h = await startHarness({
      setup: seed,
      socket: { sendBufferCapBytes: 64 * 1024, pacedBytesPerSecond: 0 },
    });
    await fixtureReady(h);
  });

  afterAll(async () => {
    await terminateAll();
    await h?.close();
  });

  it('4008 slow_consumer once unsent data passes the cap; a reading socket is untouched', async () => {
    // Frames of ~700 KB: Alice's presence carries a large KV.
    const key = await apiKeyFor(h, ALICE);
    const big = Object.fromEntries(
      Array.from({ length: 24 }, (_, i) => [`k${i}`, Buffer.alloc(22_000, i + 1).toString('base64')]),
    );
    await kvRequest(h, 'PATCH', `/v1/users/${ALICE}/kv`, key, JSON.stringify(big));
    await eventually(() => expect(h.app.registry.get(ALICE)?.json.length).toBeGreaterThan(700_000));

    const slow = await SocketClient.connect(h.base);
    const reader = await SocketClient.connect(h.base);
    await slow.subscribe({ subscribe_to_id: ALICE });
    await reader.subscribe({ subscribe_to_id: ALICE });
    const socket = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    socket.pause();

    // The server's own view of its sockets, to stop pushing as soon as it gave up on the slow one.
    const serverClients = (h.app.sockets as unknown as { sockets: Set<{ closing: boolean }> }).sockets;
    let pushed = 0;
    while (![...serverClients].some((client) => client.closing)) {
      if (pushed === 150) throw new Error('the slow socket was never closed');
      bump(h, ALICE);
      pushed++;
      await reader.until(updateFor(ALICE), 10_000); // the update went out to both sockets
    }
    expect(pushed).toBeGreaterThan(1);
    const stillPushedAfterClose = 3;
    for (let i = 0; i < stillPushedAfterClose; i++) {
      bump(h, ALICE);
      pushed++;
      await reader.until(updateFor(ALICE), 10_000);
    }

    socket.resume();
    expect(await slow.closedWith(10_000)).toEqual({ code: 4008, reason: 'slow_consumer' });
    const received = slow.frames.filter(updateFor(ALICE));
    expect(received.length).toBeLessThan(pushed);
    // What did arrive is whole and in order.
    expect(received.map((frame) => frame.seq)).toEqual(received.map((_, i) => i + 2));
    expect(reader.closeEvent).toBeUndefined();
    await eventually(() => expect(h.app.sockets.socketCount).toBe(1));
  });
});

describe('SOCKETS_PER_IP', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ setup: seed, env: { SOCKETS_PER_IP: '3' } });
  });

  afterAll(async () => {
    await terminateAll();
    await h?.close();
  });

  afterEach(async () => {
    await terminateAll();
    await eventually(() => expect(h.app.sockets.socketCount).toBe(0));
  });

  it('the 4th concurrent socket is refused with HTTP 429 JSON; after one closes, a new one is accepted', async () => {
    const open = [
      await SocketClient.connect(h.base),
      await SocketClient.connect(h.base),
      await SocketClient.connect(h.base, ZLIB),
    ];
    const refused = await refusedUpgrade(socketUrl(h.base));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(refused.headers['retry-after']).toBeDefined();
    expect(JSON.parse(refused.body)).toMatchObject({ success: false, error: { code: 'rate_limited' } });
    expect(h.app.sockets.socketCount).toBe(3);

    await open[0]?.close();
    const replacement = await eventually(() => SocketClient.connect(h.base));
    expect((await refusedUpgrade(socketUrl(h.base))).statusCode).toBe(429);

    open[1]?.ws.terminate(); // a cut connection frees its slot too
    await eventually(() => SocketClient.connect(h.base));
    expect((await refusedUpgrade(socketUrl(h.base))).statusCode).toBe(429);
    await replacement.close();
  });

  it('sockets the server closed free their slots', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => SocketClient.connect(h.base)));
    for (const client of clients) client.send('garbage');
    for (const client of clients) expect((await client.closedWith()).code).toBe(4006);
    await eventually(() => expect(h.app.sockets.socketCount).toBe(0));
    await Promise.all([1, 2, 3].map(() => SocketClient.connect(h.base)));
  });

  it('refused upgrades do not use up slots', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => SocketClient.connect(h.base)));
    for (let i = 0; i < 5; i++) expect((await refusedUpgrade(socketUrl(h.base))).statusCode).toBe(429);
    for (const client of clients) await client.close();
    await eventually(() => expect(h.app.sockets.socketCount).toBe(0));
    await eventually(() => Promise.all([1, 2, 3].map(() => SocketClient.connect(h.base))));
  });
});

describe('SOCKETS_PER_IP and upgrades that never become sockets', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ setup: seed, env: { SOCKETS_PER_IP: '3' } });
  });

  afterAll(async () => {
    await terminateAll();
    await h?.close();
  });

  // The slot is taken before ws.handleUpgrade; an upgrade ws then refuses (400) never becomes a socket, so
  // only the TCP socket's close can give the slot back. (It once did not: three of these locked the IP out.)
  it('upgrade requests ws rejects (400) do not use up slots', async () => {
    const key = 'dGhlIHNhbXBsZSBub25jZQ==';
    const malformed: Record<string, string>[] = [
      { 'Sec-WebSocket-Version': '13' }, // no Sec-WebSocket-Key
      { 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'short' },
      { 'Sec-WebSocket-Version': '7', 'Sec-WebSocket-Key': key },
    ];
    for (const headers of malformed) {
      const refused = await rawUpgrade(h.base, '/socket', headers);
      expect(refused.statusCode).toBe(400);
      // In the envelope like every error, not ws's own text/html page.
      expect(JSON.parse(refused.body)).toMatchObject({ success: false, error: { code: 'bad_request' } });
    }
    expect(h.app.sockets.socketCount).toBe(0);
    // With nothing open, all three slots must be free.
    const opened = await Promise.allSettled([1, 2, 3].map(() => SocketClient.connect(h.base)));
    expect(opened.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
  });
});

describe('SUBSCRIPTIONS_PER_SOCKET', () => {
  let h: Harness;
  const ids = Array.from({ length: 7 }, (_, i) => `${70000000000000000n + BigInt(i)}`);

  beforeAll(async () => {
    h = await startHarness({ setup: seed, env: { SUBSCRIPTIONS_PER_SOCKET: '5' } });
  });

  afterAll(async () => {
    await terminateAll();
    await h?.close();
  });

  it('6 ids in one op 2: 4006', async () => {
    const client = await SocketClient.connect(h.base);
    client.send({ op: 2, d: { subscribe_to_ids: ids.slice(0, 6) } });
    expect(await client.closedWith()).toEqual({ code: 4006, reason: 'invalid_payload' });
  });

  it('5 across two op 2s are fine, repeats and subscribe_to_all count nothing; a 6th id: 4006', async () => {
    const client = await SocketClient.connect(h.base);
    await client.subscribe({ subscribe_to_ids: ids.slice(0, 3) });
    await client.subscribe({ subscribe_to_id: ids[3], subscribe_to_ids: [ids[4]] });
    await client.subscribe({ subscribe_to_ids: ids.slice(0, 5) });
    await client.subscribe({ subscribe_to_all: true });
    client.send({ op: 2, d: { subscribe_to_id: ids[5] } });
    expect(await client.closedWith()).toEqual({ code: 4006, reason: 'invalid_payload' });
    await eventually(() => expect(h.app.sockets.subscriptions.count).toBe(0));
  });

  it('room freed by unsubscribing can be used again', async () => {
    const client = await SocketClient.connect(h.base);
    await client.subscribe({ subscribe_to_ids: ids.slice(0, 5) });
    client.send({ op: 4, d: { unsubscribe_from_ids: ids.slice(0, 2) } });
    await client.subscribe({ subscribe_to_ids: ids.slice(5, 7) });
    expect(client.closeEvent).toBeUndefined();
    expect(h.app.sockets.subscriptions.count).toBe(5);
  });
});

describe('leaks', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ setup: seed });
    await fixtureReady(h);
  });

  afterAll(async () => {
    await terminateAll();
    await h?.close();
  });

  it('50 sockets subscribing to ids and to all, closed cleanly or cut: nothing left behind', async () => {
    const clients = await Promise.all(
      Array.from({ length: 50 }, (_, i) => SocketClient.connect(h.base, i % 3 === 0 ? ZLIB : '')),
    );
    await Promise.all(
      clients.map(async (client, i) => {
        await client.subscribe({ subscribe_to_ids: [ALICE, BOB, NOBODY, `${1000 + i}`] });
        await client.subscribe({ subscribe_to_all: true });
        await client.subscribe({ subscribe_to_id: FIXTURE_USERS[i % FIXTURE_USERS.length] });
      }),
    );
    expect(h.app.sockets.socketCount).toBe(50);
    expect(h.app.sockets.subscriptions.subscriberCount).toBe(50);
    // 4 ids each (the third op 2 repeats or adds one fixture user), plus the "all" flag
    const perSocket = (i: number) => 4 + ([ALICE, BOB].includes(FIXTURE_USERS[i % 5] as string) ? 0 : 1) + 1;
    expect(h.app.sockets.subscriptions.count).toBe(clients.reduce((sum, _, i) => sum + perSocket(i), 0));

    bump(h, ALICE); // every socket hears of it
    await Promise.all(clients.map((client) => client.until(updateFor(ALICE))));

    await Promise.all(
      clients.map(async (client, i) => {
        if (i % 2 === 0) await client.close();
        else {
          client.ws.terminate();
          await client.closed;
        }
      }),
    );
    await eventually(() => {
      expect(h.app.sockets.socketCount).toBe(0);
      expect(h.app.sockets.subscriptions.count).toBe(0);
      expect(h.app.sockets.subscriptions.subscriberCount).toBe(0);
    });
    // Changes after everyone left reach nobody and break nothing.
    bump(h, ALICE);
    const late = await SocketClient.connect(h.base);
    await late.subscribe({ subscribe_to_id: ALICE });
    await late.close();
    await eventually(() => expect(h.app.sockets.socketCount).toBe(0));
  });
});

describe('shutdown', () => {
  it('app.close() closes every open socket with 1001 going_away, waiting on no timer', async () => {
    const h = await startHarness({ setup: seed });
    try {
      await fixtureReady(h);
      const clients = [
        await SocketClient.connect(h.base),
        await SocketClient.connect(h.base),
        await SocketClient.connect(h.base, ZLIB),
        await SocketClient.connect(h.base, ZLIB),
      ];
      await clients[0]?.subscribe({ subscribe_to_all: true });
      await clients[2]?.subscribe({ subscribe_to_ids: [ALICE, BOB] });
      // The clients answer the close handshake, and that is what the shutdown waits for: with the timers
      // the test's, the one that cuts a client that never answers (nor any other) cannot be what ended it.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        await within(h.app.close(), 10_000, 'app.close() with no timer firing');
      } finally {
        vi.useRealTimers();
      }
      for (const client of clients) {
        expect(await client.closedWith()).toEqual({ code: 1001, reason: 'going_away' });
      }
      expect(h.app.sockets.socketCount).toBe(0);
      expect(h.app.sockets.subscriptions.count).toBe(0);
      // No new socket once closed.
      await expect(SocketClient.open(socketUrl(h.base))).rejects.toThrow();
    } finally {
      await h.close();
    }
  });
});
