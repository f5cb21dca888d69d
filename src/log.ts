import pino, { type Logger } from 'pino';
import type { LogLevel } from './config.js';

/** Structured JSON logs; readable lines when a person is watching the terminal. */
export function createLogger(level: LogLevel, pretty = process.stdout.isTTY === true): Logger {
  return pino({
    level,
    // API keys travel in Authorization: they must never reach a log line.
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization', 'authorization'],
      censor: '[redacted]',
    },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss' } } } : {}),
  });
}
