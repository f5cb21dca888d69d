import { type BenchChild, type Message, startChild } from './child.js';
import { markerText } from './fanout-marker.js';

export interface ServiceReady extends Message {
  /** The service's base URL. */
  url: string;
  /** Bench user 0, whom every scenario reads. */
  userId: string;
  /** That user's presence JSON, as the socket gateway sends it. */
  json: string;
  /** A live API key for bench user `apiKeyUser`, when asked for. */
  apiKey?: string;
}

export interface ServiceOptions {
  /** Bench users the simulated Discord lists (1 unless told). */
  users?: number;
  /** User 0's custom status carries the fan-out marker from the start (fanout). */
  fanout?: boolean;
  /** Node flags for the service's process (e.g. MEMORY_FLAGS). */
  nodeFlags?: readonly string[];
  /** Every per-address limit at its default, as a public instance runs (otherwise they are off). */
  defaultLimits?: boolean;
  /** `TRUST_PROXY`: whose `X-Forwarded-For` names the client (wrk's address, with forwarded-for.ts). */
  trustProxy?: string;
  /** Bench user whose API key the service makes and sends in `ready`. */
  apiKeyUser?: number;
  /** Another checkout whose service runs instead (the previous release: previous.ts). */
  tree?: string;
}

/**
 * bench/processes/service.ts with a simulated Discord of its own in another process (discord.ts,
 * `WORKLOAD=realistic`): the service's process holds what it holds in production, and what the simulator
 * spends is not counted in it. Both go into `children`, the service first, so it is stopped first.
 */
export async function startService(
  children: BenchChild[],
  options: ServiceOptions = {},
): Promise<{ child: BenchChild; discord: BenchChild; ready: ServiceReady }> {
  const users = String(options.users ?? 1);
  const start = String(Date.now() - 30_000);
  const discord = startChild('discord', [], {
    WORKLOAD: 'realistic',
    USERS: users,
    START: start,
    ...(options.fanout ? { MARKER: markerText(0, 0) } : {}),
  });
  children.push(discord);
  const endpoints = await discord.next<Message & { token: string; apiUrl: string; cdnUrl: string }>('ready');
  const child = startChild(
    'service',
    [],
    {
      TOKEN: endpoints.token,
      API_URL: endpoints.apiUrl,
      CDN_URL: endpoints.cdnUrl,
      USERS: users,
      START: start,
      ...(options.defaultLimits ? { DEFAULT_LIMITS: '1' } : {}),
      ...(options.trustProxy === undefined ? {} : { TRUST_PROXY: options.trustProxy }),
      ...(options.apiKeyUser === undefined ? {} : { API_KEY_USER: String(options.apiKeyUser) }),
    },
    options.nodeFlags,
    options.tree,
  );
  children.splice(children.indexOf(discord), 0, child);
  return { child, discord, ready: await child.next<ServiceReady>('ready') };
}
