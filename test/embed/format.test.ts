import { describe, expect, it } from 'vitest';
import type { Presence } from '../../src/client/types.js';
import { clockText, customStatusText, progressAt, statusOf, webLink } from '../../src/embed/format.js';
import { fieldsOf, layoutOf, MAX_FIELDS, themeOf } from '../../src/embed/options.js';

/** The element's words and attribute rules, which need no browser. */

const presence = (fields: Partial<Presence>): Presence =>
  ({ discord_status: 'online', stale: false, custom_status: null, ...fields }) as Presence;

describe('clockText', () => {
  it.each([
    [0, '0:00'],
    [999, '0:00'],
    [61_000, '1:01'],
    [3_599_000, '59:59'],
    [3_600_000, '1:00:00'],
    [37_230_000, '10:20:30'],
    [-5_000, '0:00'],
  ])('%i ms is %s', (ms, text) => expect(clockText(ms)).toBe(text));
});

describe('progressAt', () => {
  it('is the share of the track played, kept within 0 and 1', () => {
    expect(progressAt(1_000, 3_000, 2_000)).toBe(0.5);
    expect(progressAt(1_000, 3_000, 0)).toBe(0);
    expect(progressAt(1_000, 3_000, 9_000)).toBe(1);
    expect(progressAt(3_000, 3_000, 3_000)).toBe(0);
  });
});

describe('statusOf', () => {
  it('is the status, and unknown for a stale presence whatever it says', () => {
    expect(statusOf(presence({ discord_status: 'dnd' }))).toBe('dnd');
    expect(statusOf(presence({ discord_status: 'dnd', stale: true }))).toBe('unknown');
  });
});

describe('customStatusText', () => {
  it('puts the emoji before the text, a server’s own by its name', () => {
    expect(
      customStatusText(
        presence({ custom_status: { text: 'hi', emoji: { name: '🎧', id: null, animated: false } } }),
      ),
    ).toBe('🎧 hi');
    expect(
      customStatusText(
        presence({ custom_status: { text: null, emoji: { name: 'blob', id: '1', animated: true } } }),
      ),
    ).toBe(':blob:');
    expect(customStatusText(presence({ custom_status: { text: '', emoji: null } }))).toBeNull();
  });
});

describe('webLink', () => {
  it('takes web addresses only', () => {
    expect(webLink('https://open.spotify.com/track/x')).toBe('https://open.spotify.com/track/x');
    expect(webLink('javascript:alert(1)')).toBeNull();
    expect(webLink(null)).toBeNull();
  });
});

describe('the attributes’ rules', () => {
  it('read an enumerated value as HTML does: case and spaces aside, empty is the default, else null', () => {
    expect(themeOf(' DARK ')).toBe('dark');
    expect(themeOf(null)).toBe('auto');
    expect(themeOf('')).toBe('auto');
    expect(themeOf('blue')).toBeNull();
    expect(layoutOf('Badge')).toBe('badge');
    expect(layoutOf(undefined)).toBe('full');
  });

  it('read fields as KV keys, each once, in order, with the items that cannot be one', () => {
    expect(fieldsOf(' mood, location ,,mood,a-b ')).toEqual({
      fields: ['mood', 'location'],
      invalid: ['a-b'],
      extra: 0,
    });
    expect(fieldsOf(null)).toEqual({ fields: [], invalid: [], extra: 0 });
  });

  it(`keeps the first ${MAX_FIELDS} fields and counts the rest`, () => {
    const keys = Array.from({ length: MAX_FIELDS + 3 }, (_, n) => `k${n}`);
    const { fields, extra } = fieldsOf(keys.join(','));
    expect(fields).toEqual(keys.slice(0, MAX_FIELDS));
    expect(extra).toBe(3);
  });
});
