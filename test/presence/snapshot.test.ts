import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Presence } from '../../src/presence/model.js';
import {
  asciiJson,
  envelopeOf,
  envelopeOfParts,
  snapshotOf,
  userJsonIn,
} from '../../src/presence/snapshot.js';

const presence = (name: string) =>
  ({ discord_status: 'online', discord_user: { username: name } }) as unknown as Presence;

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

  it('writes a presence serialized in two parts as the same bytes, and gives the user back out', () => {
    for (const name of NAMES) {
      for (const status of ['online', 'dnd ✨']) {
        const { discord_user: user, ...fields } = { ...presence(name), discord_status: status };
        const whole = envelopeOf(JSON.stringify({ discord_user: user, ...fields }));
        const { body, userLength } = envelopeOfParts(JSON.stringify(user), JSON.stringify(fields));
        expect(body).toBe(whole);
        expect(JSON.parse(userJsonIn(body, userLength))).toEqual(user);
        // What comes back out goes back in as it is.
        expect(envelopeOfParts(userJsonIn(body, userLength), JSON.stringify(fields)).body).toBe(whole);
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
        const fields = { discord_status: status, kv: { [status]: user } };
        const { body, userLength } = envelopeOfParts(
          JSON.stringify({ username: user }),
          JSON.stringify(fields),
        );
        expect(body).toMatch(/^[\x20-\x7e]*$/);
        expect(JSON.parse(body)).toEqual({
          success: true,
          data: { discord_user: { username: user }, ...fields },
        });
        expect(JSON.parse(userJsonIn(body, userLength))).toEqual({ username: user });
      }),
    );
  });
});
