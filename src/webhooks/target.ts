import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { addressRefusal } from './address-guard.js';

/** A webhook URL's length, at most. */
export const WEBHOOK_URL_MAX_LENGTH = 2048;

/** Resolves a host name to every address it has (injected in tests). */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

/** The system's resolver, as connections use it (getaddrinfo: /etc/hosts, then DNS). */
export const systemResolve: Resolve = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Who may be a target: WEBHOOKS_ALLOW_PRIVATE, and how names are resolved. */
export interface TargetPolicy {
  allowPrivate: boolean;
  resolve: Resolve;
}

/** A target refused by the rules (not a failure to reach it): not retried. */
export class TargetRefused extends Error {
  override readonly name = 'TargetRefused';
}

/** A URL's host as an address or a name: a literal IPv6 without its brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Why a host that is a literal address may not be a target; undefined for an allowed one, or a name. */
export function literalRefusal(host: string, allowPrivate: boolean): string | undefined {
  const refused = isIP(host) === 0 ? undefined : addressRefusal(host, allowPrivate);
  return refused && `the host is ${refused}, which webhooks may not reach`;
}

/**
 * The URL a webhook may have, normalized, or why not: absolute, `https://` (or `http://` when private
 * targets are allowed), no credentials, a literal address allowed by the address rules. A host name is
 * resolved separately (`resolveTarget`), at registration and again at every connection.
 */
export function parseTargetUrl(text: string, allowPrivate: boolean): { url: URL } | { refusal: string } {
  if (text.length > WEBHOOK_URL_MAX_LENGTH) {
    return { refusal: `the URL is longer than ${WEBHOOK_URL_MAX_LENGTH} characters` };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { refusal: 'the URL is not an absolute URL' };
  }
  const schemes = allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    return { refusal: `the URL must start with ${allowPrivate ? 'https:// or http://' : 'https://'}` };
  }
  if (url.username !== '' || url.password !== '') {
    return { refusal: 'the URL must not carry a user name or password' };
  }
  const refused = literalRefusal(hostOf(url), allowPrivate);
  if (refused) return { refusal: refused };
  url.hash = '';
  return { url };
}

/**
 * Every address of `host`, each allowed by the rules; a name with any address that is not (rebinding
 * tricks mix them) is refused whole.
 */
export async function resolveTarget(host: string, policy: TargetPolicy): Promise<LookupAddress[]> {
  if (isIP(host) !== 0) {
    const refused = literalRefusal(host, policy.allowPrivate);
    if (refused) throw new TargetRefused(refused);
    return [{ address: host, family: isIP(host) }];
  }
  const addresses = await policy.resolve(host);
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  for (const { address } of addresses) {
    const refused = addressRefusal(address, policy.allowPrivate);
    if (refused) throw new TargetRefused(`${host} resolves to ${refused}, which webhooks may not reach`);
  }
  return addresses;
}

/**
 * A `lookup` for outgoing connections: the name is resolved and checked when the connection is made, and
 * the connection goes to the address checked, so a name that changes its answer in between (DNS
 * rebinding) cannot lead it elsewhere.
 */
export function guardedLookup(policy: TargetPolicy): LookupFunction {
  return (hostname, options, callback) => {
    resolveTarget(hostname, policy).then(
      (found) => {
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const addresses = found.filter((entry) => family === 0 || entry.family === family);
        const first = addresses[0];
        if (!first) {
          callback(new Error(`${hostname} has no IPv${family} address`), '', 0);
        } else if (options.all) {
          (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (error: Error) => callback(error as NodeJS.ErrnoException, '', 0),
    );
  };
}
