import { describe, expect, it } from 'vitest';
import type { Presence } from '../../src/presence/model.js';
import { envelopeOf, sameBody, snapshotOf } from '../../src/presence/snapshot.js';

const presence = (name: string) =>
  ({ discord_status: 'online', discord_user: { username: name } }) as unknown as Presence;

describe('a snapshot holds its envelope once', () => {
  it('as a string when ASCII, whose length is its byte length', () => {
    const json = JSON.stringify(presence('nova'));
    const body = envelopeOf(json);
    expect(typeof body).toBe('string');
    expect(body.length).toBe(Buffer.byteLength(`{"success":true,"data":${json}}`));
    expect(JSON.parse(body.toString())).toEqual({ success: true, data: presence('nova') });
  });

  it('as UTF-8 bytes otherwise, so length is still the byte length', () => {
    const json = JSON.stringify(presence('Zoë 🎧'));
    const body = envelopeOf(json);
    expect(Buffer.isBuffer(body)).toBe(true);
    expect(body.length).toBe(Buffer.byteLength(`{"success":true,"data":${json}}`));
    expect(JSON.parse(body.toString())).toEqual({ success: true, data: presence('Zoë 🎧') });
  });

  it('gives back the JSON and, once released, the presence parsed from it, either way', () => {
    for (const name of ['nova', 'Zoë 🎧', '名前', '\\"quoted\\"']) {
      const json = JSON.stringify(presence(name));
      const snapshot = snapshotOf(presence(name), json, 1);
      expect(snapshot.json).toBe(json);
      snapshot.release();
      expect(snapshot.presence).toEqual(presence(name));
    }
  });

  it('compares envelopes by their text, whichever way each is held', () => {
    const ascii = JSON.stringify(presence('nova'));
    const other = JSON.stringify(presence('Zoë'));
    expect(sameBody(envelopeOf(ascii), envelopeOf(ascii))).toBe(true);
    expect(sameBody(envelopeOf(other), envelopeOf(other))).toBe(true);
    expect(sameBody(envelopeOf(ascii), envelopeOf(other))).toBe(false);
    expect(sameBody(envelopeOf(other), envelopeOf(JSON.stringify(presence('Zoé'))))).toBe(false);
  });
});
