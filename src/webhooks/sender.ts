import http from 'node:http';
import https from 'node:https';
import { guardedLookup, hostOf, literalRefusal, type TargetPolicy, TargetRefused } from './target.js';

/** An attempt, from the first byte of the lookup to the end of the answer, takes at most this long. */
export const DELIVERY_TIMEOUT_MS = 5_000;
/** A receiver's answer is read up to this many bytes (so the connection can be kept), then let go. */
export const RESPONSE_BODY_CAP = 16 * 1024;
/** Idle kept-alive connections to receivers close after this. */
const IDLE_CONNECTION_MS = 30_000;

export interface AttemptResult {
  delivered: boolean;
  /** The receiver's HTTP status, when it answered. */
  status: number | null;
  error: string | null;
  /** Worth trying again later: the receiver could not be reached, was slow, or failed (5xx, 408, 429). */
  retryable: boolean;
}

export interface SenderOptions {
  policy: TargetPolicy;
  userAgent: string;
  /** Tests shorten it. */
  timeoutMs?: number;
}

/** What an answer with this status means for the event. */
function resultOf(status: number): AttemptResult {
  if (status >= 200 && status < 300) return { delivered: true, status, error: null, retryable: false };
  if (status >= 300 && status < 400) {
    return { delivered: false, status, error: `redirect (HTTP ${status}) not followed`, retryable: false };
  }
  const retryable = status >= 500 || status === 408 || status === 429;
  return { delivered: false, status, error: `HTTP ${status}`, retryable };
}

/** A failure before any answer, in a few words (never the request, which carries the signature). */
function failureOf(error: NodeJS.ErrnoException): AttemptResult {
  if (error instanceof TargetRefused) {
    return { delivered: false, status: null, error: `refused: ${error.message}`, retryable: false };
  }
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host name lookup failed',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
  };
  const said = (error.code && words[error.code]) || error.code || error.message;
  return { delivered: false, status: null, error: said, retryable: true };
}

/**
 * Sends deliveries: one POST each, to an address the target rules allow (checked at every connection),
 * redirects not followed, answers read up to a small cap, everything within the timeout.
 */
export class WebhookSender {
  private readonly agents: { 'https:': https.Agent; 'http:': http.Agent };
  private readonly timeoutMs: number;

  constructor(private readonly options: SenderOptions) {
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    const lookup = guardedLookup(options.policy);
    const agentOptions = { keepAlive: true, timeout: IDLE_CONNECTION_MS, lookup };
    this.agents = { 'https:': new https.Agent(agentOptions), 'http:': new http.Agent(agentOptions) };
  }

  send(target: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const url = new URL(target);
    const host = hostOf(url);
    // A connection to a literal address makes no lookup: its check is here.
    const refused = literalRefusal(host, this.options.policy.allowPrivate);
    if (refused) return Promise.resolve(failureOf(new TargetRefused(refused)));
    const agent = url.protocol === 'https:' ? this.agents['https:'] : this.agents['http:'];
    const request = (url.protocol === 'https:' ? https : http).request;

    return new Promise((resolve) => {
      let status: number | null = null;
      const finish = (result: AttemptResult): void => {
        clearTimeout(timer);
        resolve(result);
      };
      const outgoing = request(
        {
          protocol: url.protocol,
          hostname: host,
          port: url.port === '' ? undefined : Number(url.port),
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          agent,
          headers: {
            ...headers,
            'user-agent': this.options.userAgent,
            'content-length': String(Buffer.byteLength(body)),
          },
        },
        (response) => {
          status = response.statusCode ?? 0;
          const answered = resultOf(status);
          let read = 0;
          response.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > RESPONSE_BODY_CAP) {
              response.destroy();
              finish(answered);
            }
          });
          response.on('end', () => finish(answered));
          // The status is what counts: a body cut short changes nothing about it.
          response.on('error', () => finish(answered));
        },
      );
      const timer = setTimeout(() => {
        outgoing.destroy();
        const seconds = this.timeoutMs / 1000;
        finish(
          status === null
            ? { delivered: false, status: null, error: `no answer within ${seconds} s`, retryable: true }
            : resultOf(status),
        );
      }, this.timeoutMs);
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        if (status === null) finish(failureOf(error));
      });
      outgoing.end(body);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.agents['https:'].destroy();
    this.agents['http:'].destroy();
  }
}
