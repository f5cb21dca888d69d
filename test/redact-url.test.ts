import { describe, expect, it } from 'vitest';
import { redactUrl, redactUrlSecrets } from '../src/redact-url.js';

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

describe('redactUrlSecrets', () => {
  const token = `prt_${'a'.repeat(43)}`;
  const key = `prs_${'b'.repeat(43)}`;

  it.each([
    [
      `/v1/users/1/card.svg?theme=dark&token=${token}&hide_badges=true`,
      '/v1/users/1/card.svg?theme=dark&token=***&hide_badges=true',
    ],
    [`/v1/users/1/events?token=${token}`, '/v1/users/1/events?token=***'],
    // Whatever it holds, and however the parameter is spelt.
    ['/v1/users/1?TOKEN=not-even-a-token#top', '/v1/users/1?TOKEN=***#top'],
    // A key or token under another name, or in the path.
    [`/v1/users/1?apikey=${key}`, '/v1/users/1?apikey=prs_***'],
    [`/v1/users/${token}/stats`, '/v1/users/prt_***/stats'],
  ])('masks the secrets of %s', (value, shown) => {
    expect(redactUrlSecrets(value)).toBe(shown);
  });

  it('leaves a URL without them as it is', () => {
    const url = '/v1/users/1/card.svg?theme=dark&tokens=2&last_event_id=abc-1';
    expect(redactUrlSecrets(url)).toBe(url);
  });
});
