import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXPORT_FILE_MAX_BYTES } from '../../../src/discord/commands/export.js';
import { COMMANDS } from '../../../src/discord/commands/index.js';
import { DEFER_AFTER_MS } from '../../../src/discord/commands/interactions.js';
import { PREFIX_WORDS } from '../../../src/discord/commands/prefix-words.js';
import { slashCommand } from '../../../src/discord/commands/registration.js';
import { MAX_MESSAGE_LENGTH } from '../../../src/discord/messenger.js';
import { INTERACTION_BODY_LIMIT, REPLAY_WINDOW_MS } from '../../../src/http/routes/interactions.js';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

/** The row of docs/limits.md's bot table that starts with `label`. */
function limitRow(label: string): string {
  const row = read('docs/limits.md')
    .split('\n')
    .find((line) => line.startsWith(`| ${label}`));
  if (row === undefined) throw new Error(`docs/limits.md has no row "${label}"`);
  return row;
}

describe('the bot docs say what the code does', () => {
  it('docs/bot.md names every command in its slash form and every ? word', () => {
    const bot = read('docs/bot.md');
    for (const command of COMMANDS) {
      const [head = '', sub] = command.name.split(' ');
      expect(bot, command.name).toMatch(
        new RegExp(`\\\\| \`${head}${sub === undefined ? '' : ` ${sub}`}[ \`]`),
      );
    }
    for (const word of PREFIX_WORDS) expect(bot, word.word).toContain(`\`?${word.word}`);
  });

  it('docs/limits.md has the bot limits the code has', () => {
    expect(limitRow('time before a slash command')).toContain(`${DEFER_AFTER_MS / 1000} s`);
    expect(limitRow("an answer's length")).toContain(MAX_MESSAGE_LENGTH.toLocaleString('en'));
    expect(limitRow('`/presently export` file')).toContain(`${EXPORT_FILE_MAX_BYTES / 1024 / 1024} MiB`);
    expect(limitRow('`POST /interactions` body')).toContain(`${INTERACTION_BODY_LIMIT / 1024} KiB`);
    expect(limitRow('`POST /interactions` signature')).toContain(`${REPLAY_WINDOW_MS / 60_000} minutes`);
  });

  it('the registered command fits Discord’s rules on names and descriptions', () => {
    const command = slashCommand(COMMANDS);
    const names: string[] = [];
    const walk = (options: readonly { name: string; description: string; options?: unknown }[]) => {
      expect(options.length).toBeLessThanOrEqual(25);
      for (const option of options) {
        names.push(option.name);
        expect(option.name).toMatch(/^[-_a-z0-9]{1,32}$/);
        expect(option.description.length, option.name).toBeLessThanOrEqual(100);
        if (Array.isArray(option.options)) walk(option.options);
      }
    };
    walk([command]);
    expect(names.length).toBeGreaterThan(COMMANDS.length);
  });
});
