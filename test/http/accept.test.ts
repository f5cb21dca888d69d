import { describe, expect, it } from 'vitest';
import { prefersHtml } from '../../src/http/accept.js';

/** What browsers and common clients send, and which of the two answers of `GET /` each should get. */
describe('prefersHtml', () => {
  it.each([
    [
      'Chromium',
      'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7',
    ],
    ['Firefox', 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'],
    ['Safari', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
    ['HTML alone', 'text/html'],
    ['any text', 'text/*'],
    ['HTML over weighted-down JSON', 'application/json;q=0.5, text/html'],
    ['upper case and spaces', ' TEXT/HTML ; Q=1 , */* ; q=0.1'],
    ['a specific JSON refusal beats the wildcard', 'application/json;q=0, */*'],
  ])('%s: HTML', (_client, accept) => {
    expect(prefersHtml(accept)).toBe(true);
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['curl and most libraries', '*/*'],
    ['JSON', 'application/json'],
    ['axios', 'application/json, text/plain, */*'],
    ['a tie', 'text/html, application/json'],
    ['JSON over weighted-down HTML', 'text/html;q=0.5, application/json'],
    ['HTML refused', 'text/html;q=0, */*'],
    ['HTML refused, even with text/* allowed', 'text/*, text/html;q=0'],
    ['any application type', 'application/*'],
    ['a weight that is no weight: the range is dropped', 'text/html;q=2'],
    ['a weight with too many decimals', 'text/html;q=0.5555, application/json;q=0.5'],
    ['nonsense', 'html please'],
    ['neither type', 'image/png'],
  ])('%s: JSON', (_client, accept) => {
    expect(prefersHtml(accept)).toBe(false);
  });
});
