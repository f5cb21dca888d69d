import type { Logger } from 'pino';

/** The exit status of a process ended by an error nothing handled (EX_SOFTWARE): its supervisor restarts it. */
export const UNHANDLED_EXIT_CODE = 70;

/**
 * The last line of defence. Every request and every socket frame has its own error handling, so an error
 * that reaches the process is a bug: it is logged once, fatal, with what is known of it, and the process
 * exits rather than serve on in a state nobody knows.
 */
export function installProcessGuards(logger: Logger, exit: (code: number) => void = process.exit): void {
  let exiting = false;
  const fail = (error: unknown, message: string, context: Record<string, unknown>): void => {
    if (exiting) return;
    exiting = true;
    logger.fatal({ err: error, ...context }, message);
    logger.flush();
    exit(UNHANDLED_EXIT_CODE);
  };
  process.on('uncaughtException', (error, origin) =>
    fail(error, 'an error reached the process; exiting for a restart', { origin }),
  );
  process.on('unhandledRejection', (reason) =>
    fail(reason, 'a promise was rejected and nothing handled it; exiting for a restart', {
      origin: 'unhandledRejection',
    }),
  );
}
