import { describe, expect, it } from 'vitest';
import { bannerUrl, memberSince, profileFields } from '../../../src/presence/normalize/profile.js';
import { CDN } from '../payloads.js';

const ID = '80351110224678912';

describe('memberSince', () => {
  it('is (id >> 22) + 1420070400000, in exact BigInt arithmetic', () => {
    // (80351110224678912n >> 22n) === 19157197529n
    expect(memberSince(ID)).toBe(1439227597529);
    expect(memberSince('94490510688792576')).toBe(1442598693297);
    expect(memberSince('175928847299117063')).toBe(1462015105796);
    expect(memberSince('18446744073709551615')).toBe(Number((18446744073709551615n >> 22n) + 1420070400000n));
  });

  it("is Discord's epoch for id 0 and for anything that is not a snowflake", () => {
    for (const id of [
      '0',
      '',
      'abc',
      '-1',
      '1e10',
      '18446744073709551616',
      '123456789012345678901',
      80351110224678912,
      null,
    ]) {
      expect(memberSince(id)).toBe(1420070400000);
    }
  });
});

describe('profileFields', () => {
  it('links an animated banner as gif', () => {
    expect(
      profileFields(ID, { banner: 'a_5c1b1e0cbc4f0b9b2bf83d3e2fcdeb36', accent_color: 16711680 }, CDN),
    ).toEqual({
      banner: 'a_5c1b1e0cbc4f0b9b2bf83d3e2fcdeb36',
      banner_url: `https://cdn.discordapp.com/banners/${ID}/a_5c1b1e0cbc4f0b9b2bf83d3e2fcdeb36.gif?size=1024`,
      accent_color: 16711680,
      member_since: 1439227597529,
    });
  });

  it('links a still banner as png', () => {
    expect(
      profileFields(ID, { banner: '06c16474723fe537c283b8efa61a30c8', accent_color: null }, CDN),
    ).toEqual({
      banner: '06c16474723fe537c283b8efa61a30c8',
      banner_url: `https://cdn.discordapp.com/banners/${ID}/06c16474723fe537c283b8efa61a30c8.png?size=1024`,
      accent_color: null,
      member_since: 1439227597529,
    });
  });

  it('has an accent colour without a banner, black included', () => {
    expect(profileFields(ID, { banner: null, accent_color: 0 }, CDN)).toEqual({
      banner: null,
      banner_url: null,
      accent_color: 0,
      member_since: 1439227597529,
    });
  });

  it('has nulls until the profile is known', () => {
    expect(profileFields(ID, null, CDN)).toEqual({
      banner: null,
      banner_url: null,
      accent_color: null,
      member_since: 1439227597529,
    });
  });

  it('reads wrong-typed profile fields as null', () => {
    const garbled = { banner: 42, accent_color: 'red' } as unknown as {
      banner: string;
      accent_color: number;
    };
    expect(profileFields(ID, garbled, CDN)).toMatchObject({
      banner: null,
      banner_url: null,
      accent_color: null,
    });
    for (const accent of [-1, 1.5, 0x1000000, Number.NaN]) {
      expect(profileFields(ID, { banner: '', accent_color: accent }, CDN)).toMatchObject({
        banner: null,
        accent_color: null,
      });
    }
  });

  it('follows the CDN it is given', () => {
    expect(bannerUrl(ID, 'abc', 'http://127.0.0.1:9000/cdn/')).toBe(
      `http://127.0.0.1:9000/cdn/banners/${ID}/abc.png?size=1024`,
    );
  });
});
