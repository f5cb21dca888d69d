import pino, { type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.js';

/**
 * What must never reach a log line, wherever it is logged from. API keys travel in `Authorization`; the
 * bot's messages carry keys (a reply to `?apikey`, the DM after a leak), and an error of Discord's REST
 * client holds the request it failed on, body included (`requestBody`).
 */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.headers.authorization',
  'err.requestBody',
  '*.requestBody',
];

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
  };
  if (destination) return pino(options, destination);
  return pino({
    ...options,
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss' } } } : {}),
  });
}
