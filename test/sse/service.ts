import { afterAll, afterEach, beforeAll, expect, vi } from 'vitest';
import type { AppOptions } from '../../src/app.js';
import { terminateAll } from '../socket/client.js';
import { fixtureReady, seed } from '../socket/fixture.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { SseReader } from './reader.js';

/** The streams a test opened, closed after it. */
const open = new Set<SseReader>();

/** A stream, kept to be closed after the test. */
export async function stream(
  h: Harness,
  path: string,
  headers: Record<string, string> = {},
): Promise<SseReader> {
  const reader = await SseReader.connect(h.base, path, headers);
  open.add(reader);
  return reader;
}

export const many = (...ids: string[]) => `/v1/events?ids=${ids.join(',')}`;
export const one = (id: string) => `/v1/users/${id}/events`;

/**
 * The seeded world for a describe block; after each test its streams and sockets are closed, all of them
 * gone from the server, and the clock is the real one again.
 */
export function service(
  options: { env?: Record<string, string>; sse?: AppOptions['sse'] } = {},
): () => Harness {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await startHarness({ setup: seed, ...options });
    await fixtureReady(h);
  });
  afterEach(async () => {
    vi.useRealTimers();
    for (const reader of open) reader.close();
    open.clear();
    await terminateAll();
    await eventually(() => {
      expect(h?.app.sse.streamCount).toBe(0);
      expect(h?.app.sockets.socketCount).toBe(0);
    });
  });
  afterAll(async () => {
    await h?.close();
  });
  return () => h as Harness;
}
