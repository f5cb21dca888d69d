import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import ipaddr from 'ipaddr.js';
import type { TrustFunction } from './trust-proxy.js';

/** The address a request comes from: its TCP peer, or what trusted proxies say in `X-Forwarded-For`. */
export type ClientAddressOf = (request: IncomingMessage) => string;

/** What stands for a peer whose socket is already gone. */
const UNKNOWN = 'unknown';

/** One IPv6 client is a /64: what one household or one server is given, not one of its 2^64 addresses. */
export const IPV6_CLIENT_PREFIX = 64;

/** The longest text of an IP address (an IPv6 one ending in a dotted IPv4 address): anything longer is not one. */
const MAX_ADDRESS_LENGTH = 45;

/**
 * Whether `text` is an IPv4 address in dotted decimal or an IPv6 address without a zone. ipaddr.js's
 * IPv4 parser alone would also take inet_aton's short and hex forms, which no proxy writes.
 */
export function isIpAddress(text: string): boolean {
  if (text.length > MAX_ADDRESS_LENGTH || text.includes('%')) return false;
  return isDottedDecimal(text) || (text.includes(':') && ipaddr.IPv6.isValid(text));
}

/**
 * Four numbers of 0 to 255 without leading zeros, joined by dots: every request behind a proxy asks this
 * of its client's address, so it is a walk over the characters, not ipaddr.js's regular expressions.
 */
export function isDottedDecimal(text: string): boolean {
  let parts = 0;
  let value = -1;
  let digits = 0;
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : 46;
    if (code === 46) {
      if (digits === 0 || value > 255 || ++parts > 4) return false;
      value = -1;
      digits = 0;
    } else if (code >= 48 && code <= 57) {
      // A leading zero only stands alone.
      if (value === 0) return false;
      value = value < 0 ? code - 48 : value * 10 + code - 48;
      digits++;
    } else {
      return false;
    }
  }
  return parts === 4;
}

/**
 * The client address of requests, as trusted proxies name it. An `X-Forwarded-For` entry that is not an IP
 * address ends the walk at the hop that wrote it, the TCP peer when no proxy is in front: made-up text is
 * never anyone's address, so no limit counts it and no log line names it. The request's header is cut to
 * the entries believed, so Fastify's `request.ip`, which walks it again, names the same client.
 */
export function clientAddressOf(trust: TrustFunction | null): ClientAddressOf {
  if (trust === null) return (request) => request.socket.remoteAddress ?? UNKNOWN;
  // The walk goes no further than an entry that is not an address, and the trust function never sees one.
  const believed: TrustFunction = (address, hop) =>
    (hop === 0 || isIpAddress(address.trim())) && trust(address, hop);
  return (request) => {
    const chain = proxyAddr.all(request, believed);
    const last = chain.length - 1;
    const client = chain[last]?.trim();
    if (client === undefined) return UNKNOWN;
    if (last === 0 || isIpAddress(client)) return client;
    believeOnly(request, chain, last);
    return chain[last - 1]?.trim() ?? UNKNOWN;
  };
}

/** Leaves in the request's `X-Forwarded-For` the entries of `chain` (nearest last) before `hop`. */
function believeOnly(request: IncomingMessage, chain: (string | undefined)[], hop: number): void {
  if (hop === 1) delete request.headers['x-forwarded-for'];
  else request.headers['x-forwarded-for'] = chain.slice(1, hop).reverse().join(', ');
}

/**
 * What limits count a client by: its address, an IPv4-mapped IPv6 address as the IPv4 one, and an IPv6
 * address as its /64. IPv4 (no colon) is taken as it is: this runs on every limited read.
 */
export function clientKey(address: string): string {
  if (!address.includes(':') || !ipaddr.IPv6.isValid(address)) return address;
  const ip = ipaddr.IPv6.parse(address);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  const prefixParts = IPV6_CLIENT_PREFIX / 16;
  return new ipaddr.IPv6(ip.parts.map((part, n) => (n < prefixParts ? part : 0))).toString();
}
