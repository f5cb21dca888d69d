import { describe, expect, it } from 'vitest';
import { activitiesFrom, MAX_ACTIVITY_DEPTH } from '../../../src/presence/normalize/activities.js';
import { activityImageUrl } from '../../../src/presence/normalize/images.js';
import { gameActivity } from '../../../src/simulator/activities.js';
import {
  APPLE_MUSIC_LITERAL,
  activity,
  CDN,
  CUSTOM_STATUS_LITERAL,
  copy,
  jsonNumber,
  PEAR_DESKTOP_LITERAL,
  SPOTIFY_LITERAL,
  VSCODE_LITERAL,
} from '../payloads.js';

describe('gameActivity (simulator)', () => {
  it('builds what Discord sends for a rich-presence app, field order included', () => {
    const built = gameActivity({
      name: 'Visual Studio Code',
      applicationId: '383226320970055681',
      details: 'Editing README.md',
      state: 'Workspace: lanyard',
      start: 1615438153941,
      createdAt: 1615529838051,
      smallText: 'Visual Studio Code',
      smallImage: '565945770067623946',
      largeText: 'Editing a MARKDOWN file',
      largeImage: '565945077491433494',
    });
    expect(Object.keys(built)).toEqual(Object.keys(VSCODE_LITERAL));
    expect(built).toEqual({ ...VSCODE_LITERAL, id: expect.stringMatching(/^[0-9a-f]{16}$/) });
  });

  it('gives the same activity id for the same app, and leaves out what is not set', () => {
    const a = gameActivity({ name: 'Celeste', applicationId: '123', start: 1 });
    const b = gameActivity({ name: 'Celeste', applicationId: '123', start: 900 });
    expect(a.id).toBe(b.id);
    expect(gameActivity({ name: 'Celeste', applicationId: '123', createdAt: 5 })).toEqual({
      type: 0,
      name: 'Celeste',
      id: a.id,
      created_at: 5,
      application_id: '123',
    });
  });
});

describe('activitiesFrom', () => {
  it("passes Discord's activities through, as copies", () => {
    const raw = [CUSTOM_STATUS_LITERAL, SPOTIFY_LITERAL, PEAR_DESKTOP_LITERAL, VSCODE_LITERAL].map(activity);
    const activities = activitiesFrom(raw, CDN);
    // As sent, with each image key's URL beside it.
    const expected = raw.map((sent) => {
      const { assets, application_id } = sent as {
        assets?: Record<string, unknown>;
        application_id?: string;
      };
      if (!assets) return sent;
      const url = (key: unknown) => activityImageUrl(key, application_id, CDN);
      return {
        ...sent,
        assets: {
          ...assets,
          large_image_url: url(assets.large_image),
          small_image_url: url(assets.small_image),
        },
      };
    });
    expect(activities).toEqual(expected);
    expect(JSON.stringify(activities)).toBe(JSON.stringify(expected));
    expect(activities[1]?.assets).toMatchObject({
      large_image_url: expect.stringMatching(/^https:\/\/i\.scdn\.co\//),
    });
    expect(activities[1]).not.toBe(raw[1]);
    expect(activities[1]?.assets).not.toBe(raw[1]?.assets);
  });

  it('gives snowflakes sent as numbers as strings, imprecise as the number already is', () => {
    const raw = [
      { ...copy(VSCODE_LITERAL), application_id: jsonNumber('383226320970055681') },
      {
        ...copy(CUSTOM_STATUS_LITERAL),
        emoji: { name: 'blob', id: jsonNumber('753291932364882012'), animated: true },
      },
      { ...copy(APPLE_MUSIC_LITERAL), application_id: 12345 },
    ];
    const [vscode, custom, apple] = activitiesFrom(raw, CDN);
    // 383226320970055681 is above 2^53: the double JSON.parse made of it prints as …700.
    expect(vscode?.application_id).toBe('383226320970055700');
    expect(custom?.emoji).toEqual({ name: 'blob', id: '753291932364882000', animated: true });
    expect(apple?.application_id).toBe('12345');
  });

  it('gives a BigInt snowflake exactly', () => {
    const [activity] = activitiesFrom(
      [{ ...copy(VSCODE_LITERAL), application_id: 383226320970055681n }],
      CDN,
    );
    expect(activity?.application_id).toBe('383226320970055681');
  });

  it('keeps a null emoji id, and leaves out snowflake fields that cannot be ids', () => {
    const [custom, game] = activitiesFrom(
      [
        { ...copy(CUSTOM_STATUS_LITERAL), emoji: { name: '🤍', id: null } },
        { ...copy(VSCODE_LITERAL), application_id: { id: '1' } },
      ],
      CDN,
    );
    expect(custom?.emoji).toEqual({ name: '🤍', id: null });
    expect(game && 'application_id' in game).toBe(false);
    const [negative] = activitiesFrom([{ ...copy(VSCODE_LITERAL), application_id: -1 }], CDN);
    expect(negative && 'application_id' in negative).toBe(false);
  });

  it('leaves no undefined, non-finite or non-JSON value behind', () => {
    const raw = [
      {
        ...copy(VSCODE_LITERAL),
        details: undefined,
        state: () => 'x',
        flags: Number.NaN,
        instance: Symbol('i'),
        buttons: ['Join', undefined, Number.POSITIVE_INFINITY],
        timestamps: { start: 1, end: undefined },
      },
    ];
    const [activity] = activitiesFrom(raw, CDN);
    expect(activity).toEqual({
      type: 0,
      timestamps: { start: 1 },
      name: 'Visual Studio Code',
      id: '66b84f5317e9de6c',
      flags: null,
      created_at: 1615529838051,
      assets: {
        ...VSCODE_LITERAL.assets,
        large_image_url: `${CDN}/app-assets/383226320970055681/565945077491433494.png`,
        small_image_url: `${CDN}/app-assets/383226320970055681/565945770067623946.png`,
      },
      application_id: '383226320970055681',
      buttons: ['Join', null, null],
    });
    expect(Object.keys(activity ?? {})).not.toContain('details');
    expect(JSON.parse(JSON.stringify(activitiesFrom(raw, CDN)))).toStrictEqual(activitiesFrom(raw, CDN));
  });

  it('gives timestamps as epoch-ms integers, leaving out what cannot be one', () => {
    const [digits, broken] = activitiesFrom(
      [
        {
          ...copy(VSCODE_LITERAL),
          created_at: '1615529838051',
          timestamps: { start: '1615438153941', end: 5.9 },
        },
        { ...copy(VSCODE_LITERAL), created_at: -1, timestamps: { start: 1e21, end: 'soon' } },
      ],
      CDN,
    );
    expect(digits?.created_at).toBe(1615529838051);
    expect(digits?.timestamps).toEqual({ start: 1615438153941, end: 5 });
    expect(broken && 'created_at' in broken).toBe(false);
    expect(broken?.timestamps).toEqual({});
  });

  it('drops entries that are not objects, and is empty for a non-array', () => {
    expect(activitiesFrom([null, 1, 'x', [], copy(CUSTOM_STATUS_LITERAL), undefined], CDN)).toEqual([
      CUSTOM_STATUS_LITERAL,
    ]);
    for (const input of [null, undefined, 0, 'activities', {}, { 0: CUSTOM_STATUS_LITERAL, length: 1 }]) {
      expect(activitiesFrom(input, CDN)).toEqual([]);
    }
  });

  it('keeps a "__proto__" key as data, without touching any prototype', () => {
    const raw = JSON.parse('[{"type":0,"name":"x","id":"1","created_at":1,"__proto__":{"polluted":true}}]');
    const [activity] = activitiesFrom(raw, CDN);
    expect(Object.getPrototypeOf(activity)).toBe(Object.prototype);
    expect(Object.hasOwn(activity ?? {}, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(JSON.stringify(activity)).toBe(
      '{"type":0,"name":"x","id":"1","created_at":1,"__proto__":{"polluted":true}}',
    );
  });

  it('cuts absurd nesting and survives cycles', () => {
    let deep: Record<string, unknown> = { leaf: true };
    for (let i = 0; i < 10_000; i += 1) deep = { deep };
    const cyclic: Record<string, unknown> = { type: 0, name: 'loop', id: '1', created_at: 1 };
    cyclic.self = cyclic;
    const [nested, loop] = activitiesFrom(
      [{ type: 0, name: 'nested', id: '1', created_at: 1, metadata: deep }, cyclic],
      CDN,
    );
    // The activity is level 1 and `metadata` level 2; nothing below level MAX_ACTIVITY_DEPTH is kept.
    expect(MAX_ACTIVITY_DEPTH).toBe(8);
    expect(JSON.stringify((nested as unknown as { metadata: unknown }).metadata)).toBe(
      '{"deep":{"deep":{"deep":{"deep":{"deep":{"deep":{}}}}}}}',
    );
    expect(() => JSON.stringify(loop)).not.toThrow();
  });
});

describe('timestamps in microseconds', () => {
  it('become milliseconds, as some rich-presence libraries send them', () => {
    const start = 1_700_000_000_123;
    const [activity] = activitiesFrom(
      [
        {
          ...copy(VSCODE_LITERAL),
          created_at: start * 1000,
          timestamps: { start: start * 1000 + 456, end: start + 60_000 },
        },
      ],
      CDN,
    );
    expect(activity?.created_at).toBe(start);
    expect(activity?.timestamps).toEqual({ start, end: start + 60_000 });
  });
});
