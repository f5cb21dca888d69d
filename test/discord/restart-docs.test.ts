import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RESTART_HOLD_MS } from '../../src/cluster/publisher.js';
import { STALE_AFTER_DISCONNECT_MS } from '../../src/discord/gateway.js';
import {
  FINAL_SAVE_TIMEOUT_MS,
  STATE_MAX_AGE_MS,
  STATE_SAVE_INTERVAL_MS,
  STATE_SAVE_SPACING,
} from '../../src/discord/restart-state.js';

const operations = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8').replace(
  /\s+/g,
  ' ',
);

/** The words of docs/operations.md just before it names `constant` in parentheses. */
function wordsBefore(constant: string): string {
  const at = operations.indexOf(`(\`${constant}\``);
  if (at < 0) throw new Error(`docs/operations.md does not name ${constant}`);
  return operations.slice(Math.max(0, at - 80), at);
}

describe('docs/operations.md', () => {
  it('gives the restart and staleness timings the code has', () => {
    expect(wordsBefore('STATE_SAVE_INTERVAL_MS')).toContain(`every ${STATE_SAVE_INTERVAL_MS / 1000} s`);
    expect(wordsBefore('STATE_SAVE_SPACING')).toContain(`${STATE_SAVE_SPACING} times`);
    expect(wordsBefore('STATE_MAX_AGE_MS')).toContain(`${STATE_MAX_AGE_MS / 60_000} minutes`);
    expect(wordsBefore('STALE_AFTER_DISCONNECT_MS')).toContain(`${STALE_AFTER_DISCONNECT_MS / 1000} s`);
    expect(wordsBefore('FINAL_SAVE_TIMEOUT_MS')).toContain(`within ${FINAL_SAVE_TIMEOUT_MS / 1000} s`);
    expect(wordsBefore('RESTART_HOLD_MS')).toContain(`for ${RESTART_HOLD_MS / 1000} s`);
  });
});
