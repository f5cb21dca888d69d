import { isIP } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';

/**
 * Whose `X-Forwarded-For` is believed (`TRUST_PROXY`): nobody (null), the first `hops` proxies in front of
 * us whoever they are, or peers in these addresses and CIDRs (`loopback`, `linklocal` and `uniquelocal`
 * name proxy-addr's ranges).
 */
export type TrustProxy = { hops: number } | { addresses: string[] } | null;

/** Whether the `hop`th address of a request's chain (0: the TCP peer) is a proxy to look past. */
export type TrustFunction = (address: string, hop: number) => boolean;

/** Proxies a request may pass through; more is a typo, not a deployment. */
export const MAX_PROXY_HOPS = 16;

/** The ranges proxy-addr names. */
export const NAMED_RANGES = ['loopback', 'linklocal', 'uniquelocal'] as const;

function isNamedRange(value: string): boolean {
  return (NAMED_RANGES as readonly string[]).includes(value);
}

/** A value of `TRUST_PROXY`; throws a TypeError saying what is wrong with it. */
export function parseTrustProxy(value: string): TrustProxy {
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops < 1 || hops > MAX_PROXY_HOPS) {
      throw new TypeError(`a hop count must be from 1 to ${MAX_PROXY_HOPS}`);
    }
    return { hops };
  }
  const addresses = value.split(',').map((item) => item.trim());
  if (addresses.some((item) => item === '')) {
    throw new TypeError(
      `must be a hop count or a comma-separated list of addresses, CIDRs or ${NAMED_RANGES.join(', ')}`,
    );
  }
  for (const item of addresses) {
    // ipaddr.js, under proxy-addr, also takes inet_aton's short forms ("1" for 0.0.0.1): nobody means those.
    const address = item.replace(/\/[^/]*$/, '');
    if (!isNamedRange(item) && isIP(address) === 0) throw new TypeError(`invalid IP address: ${address}`);
  }
  // proxy-addr says which range it cannot read ("invalid range on address: x").
  proxyAddr.compile(addresses);
  return { addresses };
}

/**
 * Addresses whose trust is remembered at once: the proxies in front of the service are a handful, and the
 * addresses a client may write into its chain are forgotten all together past this many.
 */
const REMEMBERED_ADDRESSES = 1_024;

/**
 * The function Fastify and every limit use to walk a request's `X-Forwarded-For`; null when nobody is
 * trusted. A hop count trusts the nearest proxies whatever their address, as Express does (Fastify no
 * longer takes a number): right only when nobody can reach the service but through them.
 */
export function trustFunction(trust: TrustProxy): TrustFunction | null {
  if (trust === null) return null;
  if ('hops' in trust) {
    const { hops } = trust;
    return (_address, hop) => hop < hops;
  }
  // proxy-addr parses the address with ipaddr.js on every call, which costs more than the rest of a read's
  // limit check, and it is the same proxy's address every time. Its answer goes by the address alone.
  const compiled = proxyAddr.compile(trust.addresses);
  const known = new Map<string, boolean>();
  return (address, hop) => {
    let trusted = known.get(address);
    if (trusted === undefined) {
      trusted = compiled(address, hop);
      if (known.size >= REMEMBERED_ADDRESSES) known.clear();
      known.set(address, trusted);
    }
    return trusted;
  };
}
