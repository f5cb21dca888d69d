import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * `public`: a global unicast address, a fit target for anyone's webhook. `private`: a network of one's own
 * (RFC 1918, loopback, unique local, carrier-grade NAT), allowed only with WEBHOOKS_ALLOW_PRIVATE.
 * `special`: everything else (link-local, multicast, unspecified, documentation, benchmarking,
 * reserved…), never a target.
 */
export type AddressClass = { kind: 'public' } | { kind: 'private' | 'special'; range: string };

const PRIVATE_RANGES: ReadonlySet<string> = new Set([
  'private',
  'loopback',
  'uniqueLocal',
  'carrierGradeNat',
]);

/** How ipaddr.js's range names read in a refusal. */
const RANGE_WORDS: Record<string, string> = {
  private: 'private',
  loopback: 'loopback',
  uniqueLocal: 'unique local',
  carrierGradeNat: 'carrier-grade NAT',
  linkLocal: 'link-local',
  multicast: 'multicast',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  reserved: 'reserved or documentation',
  benchmarking: 'benchmarking',
  teredo: 'Teredo',
  rfc6052: 'local-use NAT64',
  deprecatedSiteLocal: 'site-local',
};

/** IANA's global unicast space: IPv6 outside it is unassigned or reserved. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
/** NAT64's well-known prefix (RFC 6052): the IPv4 address in its last 32 bits is the one reached. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The IPv4 address an IPv6 one stands for, where it embeds one: IPv4-mapped (`::ffff:a.b.c.d`),
 * IPv4-translated (`::ffff:0:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and
 * 6to4 (`2002:aabb:ccdd::/48`). Such an address reaches that IPv4 host, so it is judged as that host.
 */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const { parts } = address;
  const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const tail = () => v4(parts[6] as number, parts[7] as number);
  const range = address.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145' || address.match(NAT64)) return tail();
  if (range === '6to4') return v4(parts[1] as number, parts[2] as number);
  const compatible = parts.slice(0, 6).every((part) => part === 0);
  if (compatible && range !== 'unspecified' && range !== 'loopback') return tail();
  return undefined;
}

/** Classifies an IP address (as getaddrinfo gives it, or a URL's literal host without brackets). */
export function classifyAddress(text: string): AddressClass {
  if (isIP(text) === 0) return { kind: 'special', range: 'not an IP address' };
  const parsed = ipaddr.parse(text);
  const address = parsed.kind() === 'ipv6' ? (embeddedIpv4(parsed as ipaddr.IPv6) ?? parsed) : parsed;
  const range = address.range();
  if (range === 'unicast') {
    const global = address.kind() === 'ipv4' || (address as ipaddr.IPv6).match(GLOBAL_UNICAST);
    return global ? { kind: 'public' } : { kind: 'special', range: RANGE_WORDS.reserved as string };
  }
  return {
    kind: PRIVATE_RANGES.has(range) ? 'private' : 'special',
    range: RANGE_WORDS[range] ?? range,
  };
}

/** Why a webhook may not reach this address, or undefined when it may. */
export function addressRefusal(address: string, allowPrivate: boolean): string | undefined {
  const found = classifyAddress(address);
  if (found.kind === 'public' || (found.kind === 'private' && allowPrivate)) return undefined;
  return `${address} (${found.range} address)`;
}
