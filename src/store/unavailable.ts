/**
 * The store cannot be reached now: its server is down, refuses connections or dropped the one in use.
 * Requests that need it are told to try again (503) rather than that something broke (500).
 */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('the store cannot be reached', { cause });
    this.name = 'StoreUnavailableError';
  }
}
