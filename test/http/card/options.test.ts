import { describe, expect, it } from 'vitest';
import {
  DEFAULT_CARD_OPTIONS,
  MAX_BORDER_RADIUS,
  MAX_IDLE_MESSAGE_LENGTH,
  parseCardOptions,
} from '../../../src/http/card/options.js';
import { ApiError } from '../../../src/http/errors.js';

function rejection(query: Record<string, unknown>): ApiError {
  try {
    parseCardOptions(query);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error(`accepted ${JSON.stringify(query)}`);
}

describe('parseCardOptions', () => {
  it('defaults', () => {
    expect(parseCardOptions({})).toEqual(DEFAULT_CARD_OPTIONS);
    expect(parseCardOptions(undefined)).toEqual(DEFAULT_CARD_OPTIONS);
  });

  it('ignores parameters it does not know (cache busters)', () => {
    expect(parseCardOptions({ v: '2', t: 'x' })).toEqual(DEFAULT_CARD_OPTIONS);
  });

  it('theme', () => {
    expect(parseCardOptions({ theme: 'light' }).theme).toBe('light');
    expect(parseCardOptions({ theme: 'DARK' }).theme).toBe('dark');
  });

  it('bg in every hex spelling, and picks the theme that reads on it when none is given', () => {
    expect(parseCardOptions({ bg: 'fff' })).toMatchObject({ background: '#ffffff', theme: 'light' });
    expect(parseCardOptions({ bg: '#0D1117' })).toMatchObject({ background: '#0d1117', theme: 'dark' });
    expect(parseCardOptions({ bg: '0d111780' }).background).toBe('#0d111780');
    expect(parseCardOptions({ bg: 'f008' }).background).toBe('#ff000088');
    expect(parseCardOptions({ bg: 'ffffff', theme: 'dark' }).theme).toBe('dark');
  });

  it('borderRadius as a number of px', () => {
    expect(parseCardOptions({ borderRadius: '0' }).borderRadius).toBe(0);
    expect(parseCardOptions({ borderRadius: '10px' }).borderRadius).toBe(10);
    expect(parseCardOptions({ borderRadius: '4.5' }).borderRadius).toBe(4.5);
    expect(parseCardOptions({ borderRadius: String(MAX_BORDER_RADIUS) }).borderRadius).toBe(
      MAX_BORDER_RADIUS,
    );
  });

  it('booleans: true/false/1/0, and a bare flag means true', () => {
    for (const name of ['hideStatus', 'hideTimestamp', 'hideActivity', 'hideMusic'] as const) {
      expect(parseCardOptions({ [name]: 'true' })[name]).toBe(true);
      expect(parseCardOptions({ [name]: '1' })[name]).toBe(true);
      expect(parseCardOptions({ [name]: '' })[name]).toBe(true);
      expect(parseCardOptions({ [name]: 'FALSE' })[name]).toBe(false);
      expect(parseCardOptions({ [name]: '0' })[name]).toBe(false);
    }
    expect(parseCardOptions({ animated: 'false' }).animated).toBe(false);
  });

  it('idleMessage as given', () => {
    expect(parseCardOptions({ idleMessage: 'Touching grass 🌱' }).idleMessage).toBe('Touching grass 🌱');
    expect(parseCardOptions({ idleMessage: '🌱'.repeat(MAX_IDLE_MESSAGE_LENGTH) }).idleMessage).toHaveLength(
      2 * MAX_IDLE_MESSAGE_LENGTH,
    );
  });

  it.each([
    ['theme', 'blue'],
    ['theme', ''],
    ['bg', 'red'],
    ['bg', '#12345'],
    ['bg', 'url(x)'],
    ['borderRadius', '-1'],
    ['borderRadius', '41'],
    ['borderRadius', '1e1'],
    ['borderRadius', 'abc'],
    ['hideStatus', 'yes'],
    ['hideTimestamp', '2'],
    ['hideActivity', 'no'],
    ['hideMusic', 'on'],
    ['animated', 'nope'],
    ['idleMessage', ''],
    ['idleMessage', '   '],
    ['idleMessage', 'x'.repeat(MAX_IDLE_MESSAGE_LENGTH + 1)],
  ])('%s=%j is invalid_query, naming the option', (name, value) => {
    const error = rejection({ [name]: value });
    expect(error.code).toBe('invalid_query');
    expect(error.status).toBe(400);
    expect(error.message.startsWith(`${name}:`)).toBe(true);
  });

  it('a repeated option is invalid_query', () => {
    expect(rejection({ theme: ['dark', 'light'] }).code).toBe('invalid_query');
  });
});
