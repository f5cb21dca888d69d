import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { isDottedDecimal } from '../../src/net/client-address.js';

describe('isDottedDecimal', () => {
  it('agrees with ipaddr.js on four-part decimal IPv4 for any text of digits and dots', () => {
    const text = fc.string({ unit: fc.constantFrom('0', '1', '2', '5', '9', '.', '3'), maxLength: 20 });
    fc.assert(
      fc.property(text, (candidate) => {
        expect(isDottedDecimal(candidate)).toBe(ipaddr.IPv4.isValidFourPartDecimal(candidate));
      }),
      { numRuns: 5_000 },
    );
    for (const address of ['0.0.0.0', '255.255.255.255', '10.1.2.3'])
      expect(isDottedDecimal(address)).toBe(true);
    for (const text of ['256.1.1.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '1..2.3', ' 1.2.3.4', '1.2.3.4x', ''])
      expect(isDottedDecimal(text)).toBe(false);
  });
});
