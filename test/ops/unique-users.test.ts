import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/ops/metrics.js';
import {
  REVIEW_NOTICE,
  UNIQUE_USER_WARNINGS,
  UniqueUsers,
  watchUniqueUsers,
} from '../../src/ops/unique-users.js';
import type { PresenceChange, PresenceListener } from '../../src/presence/registry/registry.js';
import { parseExposition, sampleValue } from '../support/prometheus.js';

/**
 * `presently_unique_users` and the warnings ahead of Discord's review of privileged intents: the count is
 * a number the test sets, so no users and no time are needed.
 */

/** A logger that keeps what it was told to warn of. */
function warnings() {
  const lines: { fields: { uniqueUsers: number; threshold: number }; message: string }[] = [];
  return {
    lines,
    logger: {
      warn: (fields: { uniqueUsers: number; threshold: number }, message: string) => {
        lines.push({ fields, message });
      },
    } as never,
  };
}

describe('the warnings', () => {
  it('warn at 8,000 and at 10,000, citing Discord’s review', () => {
    expect(UNIQUE_USER_WARNINGS).toEqual([8_000, 10_000]);
    let count = 0;
    const { lines, logger } = warnings();
    const users = new UniqueUsers(() => count, logger);
    for (count of [0, 5_000, 7_999]) expect(users.read()).toBe(count);
    expect(lines).toEqual([]);
    count = 8_000;
    users.read();
    count = 10_250;
    users.read();
    expect(lines).toEqual([
      {
        fields: { uniqueUsers: 8_000, threshold: 8_000 },
        message: `presently_unique_users reached 8,000: ${REVIEW_NOTICE}`,
      },
      {
        fields: { uniqueUsers: 10_250, threshold: 10_000 },
        message: `presently_unique_users reached 10,000: ${REVIEW_NOTICE}`,
      },
    ]);
    expect(REVIEW_NOTICE).toBe(
      'Discord reviews the privileged intents of apps that reach more than 10,000 unique users, every year: see docs/deployment.md',
    );
  });

  it('once per crossing, however often the count is read', () => {
    const count = 8_500;
    const { lines, logger } = warnings();
    const users = new UniqueUsers(() => count, logger);
    for (let n = 0; n < 100; n++) users.read();
    expect(lines.map((line) => line.fields.threshold)).toEqual([8_000]);
  });

  it('a count hovering at a threshold warns once; falling well below it re-arms it', () => {
    let count = 0;
    const { lines, logger } = warnings();
    const users = new UniqueUsers(() => count, logger);
    // Members joining and leaving at the threshold, within 5 % of it.
    for (count of [10_000, 9_999, 10_000, 9_600, 10_001]) users.read();
    expect(lines.map((line) => line.fields.threshold)).toEqual([8_000, 10_000]);
    // Well below 10,000 (under 9,500), still above 8,000: only 10,000 warns again.
    for (count of [9_400, 10_000]) users.read();
    expect(lines.map((line) => line.fields.threshold)).toEqual([8_000, 10_000, 10_000]);
    // Down to 7,000 and up again: both.
    for (count of [7_000, 12_000]) users.read();
    expect(lines.map((line) => line.fields.threshold)).toEqual([8_000, 10_000, 10_000, 8_000, 10_000]);
  });
});

describe('following a source', () => {
  /** A presence source whose size the test sets and whose changes it emits. */
  function source() {
    const listeners: PresenceListener[] = [];
    let reads = 0;
    let size = 0;
    return {
      set size(value: number) {
        size = value;
      },
      get size(): number {
        reads++;
        return size;
      },
      get reads() {
        return reads;
      },
      onChange(listener: PresenceListener) {
        listeners.push(listener);
        return () => undefined;
      },
      emit(kind: PresenceChange['kind']) {
        for (const listener of listeners) listener({ kind } as PresenceChange);
      },
    };
  }

  it('warns as users come, without a scrape; a presence update costs no read', () => {
    const presences = source();
    const { lines, logger } = warnings();
    watchUniqueUsers(presences, logger);
    presences.size = 7_999;
    presences.emit('monitored');
    presences.emit('updated');
    expect(presences.reads).toBe(1);
    presences.size = 8_000;
    presences.emit('updated');
    expect(lines).toEqual([]);
    presences.emit('monitored');
    expect(lines.map((line) => line.fields)).toEqual([{ uniqueUsers: 8_000, threshold: 8_000 }]);
    presences.size = 10_000;
    presences.emit('unmonitored');
    expect(lines.map((line) => line.fields.threshold)).toEqual([8_000, 10_000]);
  });

  it('the gauge reads the same count, and a scrape does not warn again', async () => {
    const presences = source();
    const { lines, logger } = warnings();
    const users = watchUniqueUsers(presences, logger);
    const metrics = new Metrics();
    metrics.observe({ monitoredUsers: () => 3, uniqueUsers: () => users.read() });
    const gauge = async () =>
      sampleValue(parseExposition((await metrics.scrape()).text), 'presently_unique_users');
    presences.size = 42;
    expect(await gauge()).toBe(42);
    presences.size = 10_000;
    expect(await gauge()).toBe(10_000);
    expect(await gauge()).toBe(10_000);
    presences.emit('monitored');
    expect(lines.map((line) => line.fields.threshold)).toEqual([8_000, 10_000]);
  });

  it('a node that gives no count reads 0', async () => {
    const metrics = new Metrics();
    metrics.observe({ monitoredUsers: () => 5 });
    const families = parseExposition((await metrics.scrape()).text);
    expect(families.get('presently_unique_users')?.type).toBe('gauge');
    expect(sampleValue(families, 'presently_unique_users')).toBe(0);
  });
});
