import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/http/errors.js';
import { Close } from '../../src/socket/protocol.js';
import { documentedErrors, tableAfter } from './tables.js';

/**
 * The reference facts have one home each in docs/, kept equal to the code: every error code with its
 * status in docs/api.md's table, every close code in docs/socket.md's, and no other page with a table of
 * its own to drift.
 */

/** A close code's table row: the code, then the first word of its reason. */
const CLOSE_ROW = /^\| *(1\d{3}|4\d{3}) *\|/;

describe('reference facts in docs/', () => {
  it("lists every error code with its status in docs/api.md's table, and only those", () => {
    const documented = documentedErrors();
    const expected = Object.entries(ERROR_STATUS);
    expect(documented.filter(([code, status]) => ERROR_STATUS[code as never] !== status)).toEqual([]);
    expect(
      expected.filter(([code]) => !documented.some(([documentedCode]) => documentedCode === code)),
    ).toEqual([]);
  });

  it("lists every close code with its reason in docs/socket.md's table, and only those", () => {
    const documented = tableAfter('socket.md', '## Close codes').map(
      ([code, reason]) => `${code} ${reason?.replaceAll('`', '')}`,
    );
    // 1009 is ws's own close, for a frame over MAX_CLIENT_FRAME_BYTES: it has no reason.
    const expected = new Set([
      '1009 –',
      ...Object.values(Close).map(({ code, reason }) => `${code} ${reason.split(':')[0]}`),
    ]);
    expect([...documented].sort()).toEqual([...expected].sort());
  });

  it('has no close code table outside docs/socket.md', () => {
    const elsewhere = readdirSync('docs')
      .filter((page) => page.endsWith('.md') && page !== 'socket.md')
      .flatMap((page) =>
        readFileSync(`docs/${page}`, 'utf8')
          .split('\n')
          .filter((line) => CLOSE_ROW.test(line))
          .map((line) => `${page}: ${line}`),
      );
    expect(elsewhere).toEqual([]);
  });
});
