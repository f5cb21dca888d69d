import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PRIVACY_BODY_LIMIT } from '../../src/http/routes/privacy.js';
import { READ_TOKEN_BODY_LIMIT } from '../../src/http/routes/read-tokens.js';
import { READ_TOKEN_LABEL_MAX_CHARS, READ_TOKENS_PER_USER } from '../../src/keys/read-token.js';
import {
  ACTIVITY_TYPE_NAMES,
  DEFAULT_PRIVACY,
  HIDEABLE_MUSIC_SOURCES,
  MAX_HIDDEN_APPLICATIONS,
  PAUSED_UNTIL_UNDONE,
  PRIVACY_FIELDS,
} from '../../src/presence/privacy.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** docs/privacy.md's table of settings: name → default, as written. */
function documentedDefaults(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of read('docs/privacy.md').split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const name = /^`([a-z_]+)`$/.exec(cells[1] ?? '')?.[1];
    const value = /^`(.+)`$/.exec(cells[2] ?? '')?.[1];
    if (name && value) rows.set(name, value);
  }
  return rows;
}

describe('the privacy docs say what the code does', () => {
  it('lists every setting with its default, and nothing else', () => {
    const documented = documentedDefaults();
    expect([...documented.keys()].sort()).toEqual([...PRIVACY_FIELDS].sort());
    for (const field of PRIVACY_FIELDS) {
      expect(JSON.parse(documented.get(field) as string), field).toEqual(DEFAULT_PRIVACY[field]);
    }
  });

  it('names every value the lists take, the pause until undone and the limits', () => {
    const privacy = read('docs/privacy.md');
    for (const name of [...ACTIVITY_TYPE_NAMES, ...HIDEABLE_MUSIC_SOURCES])
      expect(privacy).toContain(`\`${name}\``);
    expect(privacy).toContain(`\`${PAUSED_UNTIL_UNDONE}\``);
    expect(privacy).toContain(`up to ${MAX_HIDDEN_APPLICATIONS} ids`);
    expect(privacy).toContain(`at most ${PRIVACY_BODY_LIMIT / 1024} KiB`);
    const limits = read('docs/limits.md');
    expect(limits).toContain(`body ${PRIVACY_BODY_LIMIT / 1024} KiB of JSON`);
    expect(limits).toMatch(new RegExp(`\\(\`hide_application_ids\`\\) \\| ${MAX_HIDDEN_APPLICATIONS} \\|`));
  });

  it('gives the limits of read tokens the code keeps', () => {
    const limits = read('docs/limits.md');
    expect(limits).toMatch(new RegExp(`^\\| read tokens per user \\| ${READ_TOKENS_PER_USER} \\|`, 'm'));
    expect(limits).toContain(
      `body ${READ_TOKEN_BODY_LIMIT / 1024} KiB of JSON, a label of at most ${READ_TOKEN_LABEL_MAX_CHARS} characters`,
    );
    const privacy = read('docs/privacy.md');
    expect(privacy).toContain(`At most ${READ_TOKENS_PER_USER} tokens a user`);
    expect(privacy).toMatch(new RegExp(`plain text of\\s+at most ${READ_TOKEN_LABEL_MAX_CHARS} characters`));
    const api = read('docs/api.md');
    expect(api).toContain(`${READ_TOKENS_PER_USER} tokens a user`);
    expect(api).toContain(`1–${READ_TOKEN_LABEL_MAX_CHARS} characters`);
  });
});

describe('the opt-in limit', () => {
  it('is the one docs/limits.md gives', async () => {
    const { OPT_IN_REQUESTS_PER_MINUTE } = await import('../../src/discord/side.js');
    expect(read('docs/limits.md')).toContain(
      `as they become monitored (\`MONITOR=opt-in\`) | ${OPT_IN_REQUESTS_PER_MINUTE} a minute |`,
    );
  });
});
