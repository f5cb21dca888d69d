import pino, { type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.js';
import { redactUrl, redactUrlSecrets } from './redact-url.js';

/**
 * What must never reach a log line, wherever it is logged from. API keys and read tokens travel in
 * `Authorization`, read tokens in URLs too (`?token=`: see serializeRequest); the bot's messages carry
 * keys (a reply to `?apikey`, the DM after a leak), and an error of Discord's REST client holds the
 * request it failed on, body included (`requestBody`). A Redis error holds the command it answered,
 * arguments included: those of AUTH are the password in REDIS_URL.
 */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.headers.authorization',
  'err.requestBody',
  '*.requestBody',
  'err.command.args',
  '*.command.args',
];

/** An error as logged, the URL an HTTP client failed on shown without its password. */
function serializeError(error: Error): pino.SerializedError {
  const shown = pino.stdSerializers.err(error);
  if (typeof shown.url === 'string') shown.url = redactUrlSecrets(redactUrl(shown.url));
  return shown;
}

/** What Fastify logs of a request (its own serializer's fields), the URL's tokens masked. */
function serializeRequest(request: {
  method?: string;
  url?: string;
  headers?: Record<string, unknown>;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}): Record<string, unknown> {
  return {
    method: request.method,
    url: typeof request.url === 'string' ? redactUrlSecrets(request.url) : request.url,
    version: request.headers?.['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/**
 * Structured JSON logs; readable lines when a person is watching the terminal. `destination`: where the
 * lines go instead of stdout (tests read them).
 */
export function createLogger(
  level: LogLevel,
  pretty = process.stdout.isTTY === true,
  destination?: DestinationStream,
): Logger {
  const options = {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError, req: serializeRequest },
  };
  if (destination) return pino(options, destination);
  return pino({
    ...options,
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss' } } } : {}),
  });
}
