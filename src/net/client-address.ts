import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import { normalizeIP } from '@fastify/rate-limit';
import type { TrustFunction } from './trust-proxy.js';

/** The address a request comes from: its TCP peer, or what trusted proxies say in `X-Forwarded-For`. */
export type ClientAddressOf = (request: IncomingMessage) => string;

/** What stands for a peer whose socket is already gone. */
const UNKNOWN = 'unknown';

/** One IPv6 client is a /64: what one household or one server is given, not one of its 2^64 addresses. */
export const IPV6_CLIENT_PREFIX = 64;

/** The client address of requests, as Fastify's `request.ip` sees it with the same trust function. */
export function clientAddressOf(trust: TrustFunction | null): ClientAddressOf {
  if (trust === null) return (request) => request.socket.remoteAddress ?? UNKNOWN;
  return (request) => proxyAddr(request, trust) ?? UNKNOWN;
}

/**
 * What limits count a client by: its address, an IPv4-mapped IPv6 address as the IPv4 one, and an IPv6
 * address as its /64. IPv4 (no colon) is taken as it is: this runs on every limited read.
 */
export function clientKey(address: string): string {
  return address.includes(':') ? normalizeIP(address, IPV6_CLIENT_PREFIX) : address;
}
