import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Presence } from '../../../src/presence/model.js';
import {
  asciiJson,
  assembleBody,
  envelopeOf,
  fieldsJsonIn,
  kvAtOf,
  LARGE_BODY_BYTES,
  PresenceSnapshot,
  snapshotOfJson,
  userJsonIn,
} from '../../../src/presence/registry/snapshot.js';

/** What every presence serialized in parts here says of its freshness. */
const FRESH = { observed_at: 1_700_000_000_000, stale: false };

const presence = (name: string) =>
  ({ discord_user: { username: name }, discord_status: 'online', kv: {} }) as unknown as Presence;

/** A snapshot of a presence serialized here, as another node would publish it. */
const snapshotOf = (presence: Presence, json: string, version: number) =>
  snapshotOfJson(json, version, presence.discord_status, kvAtOf(json, presence));

const NAMES = [
  'nova',
  'Zoë 🎧',
  '名前',
  '"quoted" \\ back',
  'lone \ud83c surrogate',
  '\u2028 line separator',
];

describe('a snapshot holds its envelope once, as ASCII', () => {
  it('escapes every character beyond ASCII, and parses back to the same value', () => {
    for (const name of NAMES) {
      const body = envelopeOf(JSON.stringify(presence(name)));
      expect(body).toMatch(/^[\x20-\x7e]*$/);
      expect(Buffer.byteLength(body)).toBe(body.length);
      expect(JSON.parse(body)).toEqual({ success: true, data: presence(name) });
    }
  });

  it('leaves ASCII JSON as it is, and writes a surrogate pair as two escapes', () => {
    const json = JSON.stringify(presence('nova'));
    expect(asciiJson(json)).toBe(json);
    expect(asciiJson('"🎧"')).toBe('"\\ud83c\\udfa7"');
    expect(asciiJson('"é"')).toBe('"\\u00e9"');
  });

  it('gives back the JSON and, once released, the presence parsed from it', () => {
    for (const name of NAMES) {
      const snapshot = snapshotOf(presence(name), JSON.stringify(presence(name)), 1);
      expect(JSON.parse(snapshot.json)).toEqual(presence(name));
      expect(snapshot.presence).toEqual(presence(name));
      snapshot.release();
      expect(snapshot.presence).toEqual(presence(name));
    }
  });

  it('writes a presence serialized in parts as the same bytes, and gives the user and the KV back out', () => {
    for (const name of NAMES) {
      for (const status of ['online', 'dnd ✨']) {
        const kv = { note: name };
        const { discord_user: user, kv: _none, ...fields } = { ...presence(name), discord_status: status };
        const whole = envelopeOf(JSON.stringify({ discord_user: user, ...fields, ...FRESH, kv }));
        const parts = {
          userJson: JSON.stringify(user),
          fieldsJson: JSON.stringify(fields),
          freshness: FRESH,
          kvJson: JSON.stringify(kv),
        };
        const { body, userLength, kvAt } = assembleBody(parts);
        expect(body).toBe(whole);
        expect(JSON.parse(userJsonIn(body, userLength))).toEqual(user);
        expect(JSON.parse(fieldsJsonIn(body, userLength, kvAt))).toEqual({ ...fields, ...FRESH });
        const snapshot = new PresenceSnapshot(null, body, 1, 'online', kvAt);
        expect(JSON.parse(snapshot.kvJson() as string)).toEqual(kv);
        // What comes back out goes back in as it is.
        const again = assembleBody({
          ...parts,
          userJson: userJsonIn(body, userLength),
          kvJson: snapshot.kvJson(),
        });
        expect(again.body).toBe(whole);
      }
    }
  });

  it('escapes any text, however long, to the same value in ASCII', () => {
    const long = `${'ascii '.repeat(20_000)}🎧${'é名'.repeat(5_000)}\ud800`;
    for (const text of [long, 'short é', long]) {
      const json = JSON.stringify({ text });
      const ascii = asciiJson(json);
      expect(ascii).toMatch(/^[\x20-\x7e]*$/);
      expect(JSON.parse(ascii)).toEqual({ text });
    }
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), (user, status) => {
        const fields = { discord_status: status };
        const kv = { [status]: user };
        const { body, userLength } = assembleBody({
          userJson: JSON.stringify({ username: user }),
          fieldsJson: JSON.stringify(fields),
          freshness: FRESH,
          kvJson: JSON.stringify(kv),
        });
        expect(body).toMatch(/^[\x20-\x7e]*$/);
        expect(JSON.parse(body as string)).toEqual({
          success: true,
          data: { discord_user: { username: user }, ...fields, ...FRESH, kv },
        });
        expect(JSON.parse(userJsonIn(body, userLength))).toEqual({ username: user });
      }),
    );
  });
});

describe('a large presence is held as UTF-8 bytes, its KV apart', () => {
  const user = { id: '94490510688792576', username: 'Zoë 🎧' };
  const fields = { discord_status: 'dnd', activities: [] };
  const bigKv = { a: '🎵'.repeat(LARGE_BODY_BYTES), b: 'plain' };

  it('past LARGE_BODY_BYTES the body is a Buffer of the same JSON, not escaped', () => {
    const { body, userLength, kvAt } = assembleBody({
      userJson: JSON.stringify(user),
      fieldsJson: JSON.stringify(fields),
      freshness: FRESH,
      kvJson: JSON.stringify(bigKv),
    });
    expect(Buffer.isBuffer(body)).toBe(true);
    const data = { discord_user: user, ...fields, ...FRESH, kv: bigKv };
    expect(JSON.parse(body.toString())).toEqual({ success: true, data });
    // Four bytes an emoji, not the twelve of two escapes.
    expect(body.length).toBeLessThan(JSON.stringify(bigKv).length * 2 + 1000);
    expect(JSON.parse(userJsonIn(body, userLength))).toEqual(user);
    expect(JSON.parse(fieldsJsonIn(body, userLength, kvAt))).toEqual({ ...fields, ...FRESH });

    const snapshot = new PresenceSnapshot(null, body, 3, 'dnd', kvAt);
    expect(snapshot.summary()).toEqual({ discord_user: user, ...fields, ...FRESH });
    expect(snapshot.presence).toEqual(data);
    expect(JSON.parse(snapshot.json)).toEqual(data);
    const json = snapshot.jsonData();
    expect(Buffer.isBuffer(json) && json.buffer === (body as Buffer).buffer).toBe(true);
  });

  it('a KV taken out of a large body goes into the next one without a copy of its own', () => {
    const first = assembleBody({
      userJson: JSON.stringify(user),
      fieldsJson: JSON.stringify(fields),
      freshness: FRESH,
      kvJson: JSON.stringify(bigKv),
    });
    const held = new PresenceSnapshot(null, first.body, 1, 'dnd', first.kvAt).kvJson();
    expect(Buffer.isBuffer(held)).toBe(true);
    const next = assembleBody({
      userJson: userJsonIn(first.body, first.userLength),
      fieldsJson: JSON.stringify({ ...fields, discord_status: 'online' }),
      freshness: FRESH,
      kvJson: held,
    });
    expect(JSON.parse(next.body.toString()).data.kv).toEqual(bigKv);
    expect(JSON.parse(next.body.toString()).data.discord_status).toBe('online');
  });

  it('a KV that shrinks brings the body back to ASCII text', () => {
    const small = assembleBody({
      userJson: JSON.stringify(user),
      fieldsJson: JSON.stringify(fields),
      freshness: FRESH,
      kvJson: JSON.stringify({ b: 'plain é' }),
    });
    expect(typeof small.body).toBe('string');
    expect(small.body).toMatch(/^[\x20-\x7e]*$/);
  });

  it("another node's JSON, small or large, gives the same presence and summary", () => {
    for (const kv of [{}, { note: 'é' }, bigKv]) {
      const data = { discord_user: user, ...fields, kv } as unknown as Presence;
      const json = JSON.stringify(data);
      const snapshot = snapshotOf(data, json, 2);
      expect(snapshot.presence).toEqual(data);
      expect(snapshot.summary()).toEqual({ discord_user: user, ...fields });
      expect(JSON.parse(snapshot.kvJson().toString())).toEqual(kv);
      const ascii = asciiJson(json);
      const escaped = snapshotOfJson(
        ascii,
        2,
        'dnd',
        snapshotOf(data, ascii, 2).kvAt - '{"success":true,"data":'.length,
      );
      expect(escaped.summary()).toEqual({ discord_user: user, ...fields });
    }
  });
});
