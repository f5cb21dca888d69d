import { describe, expect, it } from 'vitest';
import { customStatusFrom } from '../../../src/presence/normalize/custom-status.js';
import { customStatusActivity } from '../../../src/simulator/activities.js';
import { CUSTOM_STATUS_LITERAL, copy, jsonNumber, SPOTIFY_LITERAL, VSCODE_LITERAL } from '../payloads.js';

describe('customStatusActivity (simulator)', () => {
  it('builds what Discord sends, field order included', () => {
    const built = customStatusActivity({
      text: 'looking for a job',
      emoji: { name: '🤍' },
      createdAt: 1661560734744,
    });
    expect(JSON.stringify(built)).toBe(JSON.stringify(CUSTOM_STATUS_LITERAL));
  });

  it('leaves out what is not set', () => {
    expect(customStatusActivity({ text: 'hi', createdAt: 1 })).toEqual({
      type: 4,
      state: 'hi',
      name: 'Custom Status',
      id: 'custom',
      created_at: 1,
    });
  });
});

describe('customStatusFrom', () => {
  it('reads text and a unicode emoji', () => {
    expect(customStatusFrom([copy(SPOTIFY_LITERAL), copy(CUSTOM_STATUS_LITERAL)])).toEqual({
      text: 'looking for a job',
      emoji: { name: '🤍', id: null, animated: false },
    });
  });

  it('reads text only', () => {
    expect(customStatusFrom([customStatusActivity({ text: 'in a meeting until 3' })])).toEqual({
      text: 'in a meeting until 3',
      emoji: null,
    });
  });

  it('reads a unicode emoji only', () => {
    expect(customStatusFrom([customStatusActivity({ emoji: { name: '🎧' } })])).toEqual({
      text: null,
      emoji: { name: '🎧', id: null, animated: false },
    });
  });

  it('reads a custom emoji, animated or not', () => {
    expect(
      customStatusFrom([
        customStatusActivity({
          text: 'vibing',
          emoji: { name: 'blobdance', id: '753291932364882012', animated: true },
        }),
      ]),
    ).toEqual({ text: 'vibing', emoji: { name: 'blobdance', id: '753291932364882012', animated: true } });
    expect(
      customStatusFrom([
        customStatusActivity({ emoji: { name: 'pepega', id: '662406521565495296', animated: false } }),
      ]),
    ).toEqual({ text: null, emoji: { name: 'pepega', id: '662406521565495296', animated: false } });
  });

  it('gives an emoji id sent as a number as a string', () => {
    const activity = {
      ...copy(CUSTOM_STATUS_LITERAL),
      emoji: { name: 'blob', id: jsonNumber('753291932364882012') },
    };
    expect(customStatusFrom([activity])?.emoji).toEqual({
      name: 'blob',
      id: '753291932364882000',
      animated: false,
    });
  });

  it('is null without a custom status activity', () => {
    expect(customStatusFrom([])).toBeNull();
    expect(customStatusFrom([copy(SPOTIFY_LITERAL), copy(VSCODE_LITERAL)])).toBeNull();
  });

  it('is null for a custom status with neither text nor emoji', () => {
    expect(customStatusFrom([customStatusActivity({})])).toBeNull();
    expect(customStatusFrom([customStatusActivity({ text: '   ' })])).toBeNull();
    expect(customStatusFrom([{ ...copy(CUSTOM_STATUS_LITERAL), state: null, emoji: null }])).toBeNull();
  });

  it('never throws on garbage', () => {
    for (const input of [null, undefined, 4, 'Custom Status', {}, [null, 4, 'x', []]]) {
      expect(customStatusFrom(input)).toBeNull();
    }
    const garbled = { type: 4, name: 'Custom Status', state: 12, emoji: { id: '1', animated: 'yes' } };
    expect(customStatusFrom([garbled])).toBeNull();
    const badEmoji = {
      type: 4,
      name: 'Custom Status',
      state: 'ok',
      emoji: { name: 'x', id: { a: 1 }, animated: 1 },
    };
    expect(customStatusFrom([badEmoji])).toEqual({
      text: 'ok',
      emoji: { name: 'x', id: null, animated: false },
    });
  });
});
