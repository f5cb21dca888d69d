import { describe, expect, it } from 'vitest';
import { addressRefusal, classifyAddress } from '../../src/webhooks/address-guard.js';

/** Which addresses a webhook may reach: public ones only, private ones only when the operator allows. */

const PUBLIC = [
  '8.8.8.8',
  '93.184.216.34',
  '2001:4860:4860::8888',
  '2606:4700:4700::1111',
  // Forms embedding a public IPv4 address reach that address.
  '::ffff:8.8.8.8',
  '::8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
];

const PRIVATE: [string, string][] = [
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback'],
  ['10.1.2.3', 'private'],
  ['172.16.0.1', 'private'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['::1', 'loopback'],
  ['fc00::1', 'unique local'],
  ['fd12:3456::1', 'unique local'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:0:7f00:1', 'loopback'],
  ['::127.0.0.1', 'loopback'],
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::a00:1', 'private'],
  ['2002:7f00:1::1', 'loopback'],
  ['2002:c0a8:101::1', 'private'],
];

const SPECIAL: [string, string][] = [
  ['169.254.169.254', 'link-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['::ffff:169.254.169.254', 'link-local'],
  ['0.0.0.0', 'unspecified'],
  ['::', 'unspecified'],
  ['224.0.0.1', 'multicast'],
  ['ff02::1', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['192.0.2.1', 'reserved or documentation'],
  ['198.51.100.7', 'reserved or documentation'],
  ['203.0.113.5', 'reserved or documentation'],
  ['198.18.0.1', 'reserved or documentation'],
  ['240.0.0.1', 'reserved or documentation'],
  ['2001:db8::1', 'reserved or documentation'],
  ['3fff::1', 'reserved or documentation'],
  ['4000::1', 'reserved or documentation'],
  ['2001:2::1', 'benchmarking'],
  ['2001::1', 'Teredo'],
  ['64:ff9b:1::1', 'local-use NAT64'],
  ['fec0::1', 'site-local'],
  ['100::1', 'discard'],
  ['::ffff:224.0.0.1', 'multicast'],
];

describe('address classification', () => {
  it.each(PUBLIC)('%s is public', (address) => {
    expect(classifyAddress(address)).toEqual({ kind: 'public' });
    expect(addressRefusal(address, false)).toBeUndefined();
  });

  it.each(PRIVATE)('%s is private (%s): refused unless private targets are allowed', (address, range) => {
    expect(classifyAddress(address)).toEqual({ kind: 'private', range });
    expect(addressRefusal(address, false)).toBe(`${address} (${range} address)`);
    expect(addressRefusal(address, true)).toBeUndefined();
  });

  it.each(SPECIAL)('%s is never a target (%s)', (address, range) => {
    expect(classifyAddress(address)).toEqual({ kind: 'special', range });
    expect(addressRefusal(address, true)).toBe(`${address} (${range} address)`);
  });

  it('is not fooled by text that is not an address', () => {
    for (const text of ['localhost', '127.1', '0x7f.0.0.1', '', '1.2.3.4.5']) {
      expect(classifyAddress(text).kind, text).toBe('special');
    }
  });
});
