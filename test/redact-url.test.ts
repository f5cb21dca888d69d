import { describe, expect, it } from 'vitest';
import { redactUrl } from '../src/redact-url.js';

describe('redactUrl', () => {
  it.each([
    ['redis://user:hunter2@redis.internal:6379/0', 'redis://user:***@redis.internal:6379/0'],
    ['rediss://:hunter2@redis.internal', 'rediss://:***@redis.internal'],
    // A userinfo without a password may be a token: all of it goes.
    ['https://hunter2@proxy.internal/api', 'https://***@proxy.internal/api'],
    // An @ in the password itself, and a / that stops it from parsing as a URL.
    ['redis://user:hunter@2@redis.internal', 'redis://user:***@redis.internal'],
    ['redis://user:hunter/2@redis.internal', 'redis://user:***@redis.internal'],
  ])('masks the password of %s', (value, shown) => {
    expect(redactUrl(value)).toBe(shown);
  });

  it.each([
    'redis://redis.internal:6379/0',
    'https://discord.com/api?contact=ops@example.com',
    'redis://@redis.internal',
    'sqlite:./data/presently.db',
  ])('leaves %s as it is: it holds no userinfo', (value) => {
    expect(redactUrl(value)).toBe(value);
  });
});
