import { describe, expect, it } from 'vitest';
import { CLIENT_PLATFORMS } from '../../../src/presence/normalize/client-status.js';
import { OFFLINE_PRESENCE, rawPresenceFrom, statusFrom } from '../../../src/presence/normalize/raw.js';
import { garbage, random } from '../garbage.js';
import { CUSTOM_STATUS_LITERAL, copy, SPOTIFY_LITERAL, VSCODE_LITERAL } from '../payloads.js';

const OFFLINE = { status: 'offline', activities: [], client_status: {} };

describe('rawPresenceFrom', () => {
  it('reads a PRESENCE_UPDATE as Discord sends it', () => {
    const payload = {
      user: { id: '94490510688792576' },
      status: 'online',
      guild_id: '81384788765712384',
      client_status: { desktop: 'online', mobile: 'idle' },
      activities: [copy(CUSTOM_STATUS_LITERAL), copy(SPOTIFY_LITERAL), copy(VSCODE_LITERAL)],
      broadcast: null,
    };
    const raw = rawPresenceFrom(payload);
    expect(raw).toEqual({
      status: 'online',
      activities: [CUSTOM_STATUS_LITERAL, SPOTIFY_LITERAL, VSCODE_LITERAL],
      client_status: { desktop: 'online', mobile: 'idle' },
    });
    expect(raw.activities[1]).toBe(payload.activities[1]);
  });

  it('keeps each status Discord reports, and makes anything else offline', () => {
    for (const status of ['online', 'idle', 'dnd', 'offline'] as const) {
      expect(rawPresenceFrom({ status }).status).toBe(status);
      expect(statusFrom(status)).toBe(status);
    }
    for (const status of ['invisible', 'ONLINE', ' online', 'away', '', 1, null, undefined, {}, ['online']]) {
      expect(rawPresenceFrom({ status }).status).toBe('offline');
    }
  });

  it('keeps embedded and vr, and only the five platforms with an active status', () => {
    expect(
      rawPresenceFrom({
        status: 'dnd',
        client_status: {
          desktop: 'dnd',
          mobile: 7,
          web: null,
          vr: 'idle',
          embedded: 'online',
          xbox: 'online',
          console: 'dnd',
        },
      }).client_status,
    ).toEqual({ desktop: 'dnd', vr: 'idle', embedded: 'online' });
    expect(
      rawPresenceFrom({ client_status: { desktop: 'offline', web: 'invisible' } }).client_status,
    ).toEqual({});
  });

  it('drops activity entries that are not activities', () => {
    const keep = { name: 'Celeste', type: 0 };
    const activities = [
      null,
      1,
      'Spotify',
      [],
      { name: 5, type: 0 },
      { name: 'no type' },
      { type: 2 },
      { name: 'string type', type: '0' },
      { name: 'fraction', type: 1.5 },
      { name: 'nan', type: Number.NaN },
      keep,
    ];
    expect(rawPresenceFrom({ status: 'online', activities }).activities).toEqual([keep]);
  });

  it('gives an empty list and map for the wrong shapes', () => {
    expect(rawPresenceFrom({ status: 'idle', activities: 'playing', client_status: 'desktop' })).toEqual({
      status: 'idle',
      activities: [],
      client_status: {},
    });
    expect(
      rawPresenceFrom({ status: 'idle', activities: { 0: keepable() }, client_status: ['online'] }),
    ).toEqual({
      status: 'idle',
      activities: [],
      client_status: {},
    });
  });

  it('is offline for payloads that are not objects', () => {
    for (const payload of [
      undefined,
      null,
      0,
      1,
      Number.NaN,
      '',
      'online',
      true,
      [],
      [{ status: 'online' }],
      5n,
    ]) {
      expect(rawPresenceFrom(payload)).toEqual(OFFLINE);
    }
  });

  it('survives objects that throw when read', () => {
    const trap = new Proxy(
      {},
      {
        get() {
          throw new Error('trap');
        },
      },
    );
    const getter = Object.defineProperty({}, 'status', {
      enumerable: true,
      get() {
        throw new Error('getter');
      },
    });
    expect(rawPresenceFrom(trap)).toEqual(OFFLINE);
    expect(rawPresenceFrom(getter)).toEqual(OFFLINE);
    expect(rawPresenceFrom({ status: 'online', activities: [trap] })).toEqual(OFFLINE);
  });

  it('never throws on random garbage, and its result is always well-formed', () => {
    const next = random(0x5eed);
    const statuses = new Set(['online', 'idle', 'dnd', 'offline']);
    for (let i = 0; i < 3000; i += 1) {
      const value = garbage(next);
      const payloads = [
        value,
        { status: garbage(next), activities: garbage(next), client_status: garbage(next) },
      ];
      for (const payload of payloads) {
        const raw = rawPresenceFrom(payload);
        expect(statuses.has(raw.status)).toBe(true);
        expect(Array.isArray(raw.activities)).toBe(true);
        for (const activity of raw.activities) {
          expect(typeof activity.name).toBe('string');
          expect(Number.isInteger(activity.type)).toBe(true);
        }
        for (const [platform, status] of Object.entries(raw.client_status)) {
          expect(CLIENT_PLATFORMS).toContain(platform);
          expect(['online', 'idle', 'dnd']).toContain(status);
        }
      }
    }
  });
});

describe('OFFLINE_PRESENCE', () => {
  it('is offline, doing nothing, nowhere, and cannot be changed by accident', () => {
    expect(OFFLINE_PRESENCE).toEqual(OFFLINE);
    expect(Object.isFrozen(OFFLINE_PRESENCE)).toBe(true);
    expect(Object.isFrozen(OFFLINE_PRESENCE.activities)).toBe(true);
    expect(Object.isFrozen(OFFLINE_PRESENCE.client_status)).toBe(true);
  });
});

function keepable(): unknown {
  return { name: 'x', type: 0 };
}
