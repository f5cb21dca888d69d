import type { Command } from './command.js';

/** `?help`: every command, anywhere. */
export const helpCommand: Command = {
  name: 'help',
  usage: 'help',
  description: 'this list',
  where: 'anywhere',
  async run({ commands, prefix, reply }) {
    const lines = commands.map(
      (command) =>
        `\`${prefix}${command.usage}\` — ${command.description}${command.where === 'dm' ? ' (in DMs)' : ''}`,
    );
    await reply(
      [
        '**Presently** shows your Discord presence, music and KV through an API.',
        ...lines,
        'A message containing one of your API keys, anywhere I can read, revokes that key at once and I DM you a new one (if I cannot, I tell you in that channel).',
      ].join('\n'),
    );
  },
};
