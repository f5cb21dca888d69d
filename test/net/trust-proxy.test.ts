import { describe, expect, it } from 'vitest';
import { parseTrustProxy, trustFunction } from '../../src/net/trust-proxy.js';

describe('the trust function of TRUST_PROXY', () => {
  it('a hop count trusts the nearest hops, whatever their address', () => {
    const trust = trustFunction(parseTrustProxy('2'));
    expect([trust?.('198.51.100.1', 0), trust?.('198.51.100.1', 1), trust?.('198.51.100.1', 2)]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('addresses and ranges answer the same however often and among however many addresses they are asked', () => {
    const trust = trustFunction(parseTrustProxy('127.0.0.1/8, 10.0.0.1')) ?? (() => false);
    const asked = ['127.0.0.5', '10.0.0.1', '10.0.0.2', '198.51.100.1', 'not an address'];
    const first = asked.map((address) => trust(address, 0));
    expect(first).toEqual([true, true, false, false, false]);
    // More addresses than are remembered at once (a client can write any into its chain).
    for (let n = 0; n < 3_000; n++) trust(`203.0.${n >> 8}.${n & 255}`, 1);
    expect(asked.map((address) => trust(address, 0))).toEqual(first);
    expect(trustFunction(null)).toBeNull();
  });
});
