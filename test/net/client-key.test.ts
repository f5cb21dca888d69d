import { describe, expect, it } from 'vitest';
import { clientKey } from '../../src/net/client-address.js';

describe('clientKey', () => {
  it('counts an IPv6 address by its /64, however it is written', () => {
    const key = clientKey('2001:db8:0:1::1');
    expect(clientKey('2001:0db8:0000:0001:ffff:ffff:ffff:ffff')).toBe(key);
    expect(clientKey('2001:DB8:0:1:abcd::')).toBe(key);
    expect(clientKey('2001:db8:0:2::1')).not.toBe(key);
    expect(key).toBe('2001:db8:0:1::');
  });

  it('counts an IPv4 address seen through an IPv6 socket as that IPv4 address', () => {
    expect(clientKey('::ffff:198.51.100.30')).toBe('198.51.100.30');
    expect(clientKey('::FFFF:c633:641e')).toBe('198.51.100.30');
  });

  it('takes IPv4 addresses and what is not an address as they are', () => {
    expect(clientKey('198.51.100.30')).toBe('198.51.100.30');
    expect(clientKey('unknown')).toBe('unknown');
  });

  it('counts a link-local address with a zone by its /64', () => {
    expect(clientKey('fe80::1%eth0')).toBe('fe80::');
  });
});
