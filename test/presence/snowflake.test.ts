import { describe, expect, it } from 'vitest';
import { isSnowflake } from '../../src/presence/snowflake.js';

describe('isSnowflake', () => {
  it.each(['0', '1', '80351110224678912', '18446744073709551615'])('accepts %s', (id) => {
    expect(isSnowflake(id)).toBe(true);
  });
  it.each([
    '',
    'abc',
    '-1',
    '1.5',
    ' 1',
    '18446744073709551616',
    '99999999999999999999',
    '123456789012345678901',
    '１２',
  ])('rejects %j', (id) => {
    expect(isSnowflake(id)).toBe(false);
  });
});
