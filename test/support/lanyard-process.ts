import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';
import { outputOf } from './node-process.js';

/** What the test asks of the client: its hostname is `host:port` of the https server, as the hooks take it. */
export type LanyardRequest =
  | { kind: 'watch'; hostname: string; id: `${bigint}` }
  | { kind: 'get'; hostname: string; id: `${bigint}` }
  | { kind: 'unmount'; hostname: string };

/** What the client tells: each presence `useLanyardWS` returns, the sockets it opens, what `get()` gave. */
export type LanyardReply =
  | { kind: 'started' }
  | { kind: 'unmounted' }
  | { kind: 'socket'; url: string }
  | { kind: 'presence'; presence: unknown }
  | { kind: 'got'; success: boolean; data?: unknown; status?: number };

export interface LanyardClient {
  /** Every presence the socket hook rendered, in order. */
  readonly presences: Record<string, unknown>[];
  /** The URL of every socket the hook opened. */
  readonly socketUrls: string[];
  /** Renders `useLanyardWS(id)`: from then on its presences arrive in `presences`. */
  watch(id: `${bigint}`): void;
  /** `get(id)`, the library's REST read. */
  get(id: `${bigint}`): Promise<Extract<LanyardReply, { kind: 'got' }>>;
  /** Unmounts the hooks (their sockets close), then ends the process. */
  close(): Promise<void>;
}

const MAIN = fileURLToPath(new URL('./lanyard-process-main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `use-lanyard` pointed at `https://<hostname>`, in a process of its own that trusts the certificate
 * authority in the PEM file `ca` (as a browser trusts its store): TLS verification stays on.
 */
export async function startLanyardClient(hostname: string, ca: string): Promise<LanyardClient> {
  const child: ChildProcess = fork(MAIN, [], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    env: { PATH: process.env.PATH ?? '', NODE_EXTRA_CA_CERTS: ca },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const output = outputOf(child);
  const presences: Record<string, unknown>[] = [];
  const socketUrls: string[] = [];
  const replies: LanyardReply[] = [];
  child.on('message', (reply: LanyardReply) => {
    if (reply.kind === 'presence') presences.push(reply.presence as Record<string, unknown>);
    else if (reply.kind === 'socket') socketUrls.push(reply.url);
    else replies.push(reply);
  });
  const exited = once(child, 'exit');
  /** The next reply of `kind`, taken off the list. */
  const next = async <K extends LanyardReply['kind']>(kind: K): Promise<Extract<LanyardReply, { kind: K }>> =>
    eventually(() => {
      const index = replies.findIndex((reply) => reply.kind === kind);
      if (index === -1) {
        if (child.exitCode !== null) throw new Error(`the Lanyard client exited:\n${output()}`);
        throw new Error(`no ${kind} from the Lanyard client yet:\n${output()}`);
      }
      return replies.splice(index, 1)[0] as Extract<LanyardReply, { kind: K }>;
    }, 15_000);
  const ask = (request: LanyardRequest): void => {
    child.send(request);
  };
  await next('started');
  return {
    presences,
    socketUrls,
    watch: (id) => ask({ kind: 'watch', hostname, id }),
    get: async (id) => {
      ask({ kind: 'get', hostname, id });
      return next('got');
    },
    close: async () => {
      if (child.exitCode === null) {
        ask({ kind: 'unmount', hostname });
        await next('unmounted');
        child.kill('SIGTERM');
      }
      await exited;
    },
  };
}
