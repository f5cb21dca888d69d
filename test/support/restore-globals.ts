import { afterAll, vi } from 'vitest';

/*
 * Test files share their worker and its globals (no isolation, for speed): whatever a file faked, its
 * clock included, is put back once it ends, so the next file starts from the real ones.
 */
afterAll(() => {
  vi.useRealTimers();
});
