import type { Command, CommandContext } from './command.js';
import { PREFIX_WORDS, SLASH_COMMAND_NAME } from './prefix-words.js';

/** The subcommands of a group as one line: "`/presently kv list|get|set|delete` — …". */
function slashLines(commands: readonly Command[]): string[] {
  const groups = new Map<string, Command[]>();
  for (const command of commands) {
    const [head = ''] = command.name.split(' ');
    groups.set(head, [...(groups.get(head) ?? []), command]);
  }
  return [...groups].map(([head, members]) => {
    const only = members.length === 1 ? members[0] : undefined;
    if (only !== undefined && only.name === head) {
      return `\`/${SLASH_COMMAND_NAME} ${head}\` — ${only.description}`;
    }
    const subcommands = members.map((member) => member.name.slice(head.length + 1)).join('|');
    return `\`/${SLASH_COMMAND_NAME} ${head} ${subcommands}\``;
  });
}

function prefixLines({ commands, prefix }: CommandContext): string[] {
  return PREFIX_WORDS.map((word) => {
    const command = commands.find((candidate) => candidate.name === word.describes);
    const where = command?.personal ? ' (in DMs)' : '';
    return `\`${prefix}${word.usage}\` — ${command?.description ?? ''}${where}`;
  });
}

/** `help`: every command, in the form the user wrote this one. */
export const helpCommand: Command = {
  name: 'help',
  description: 'what Presently is and every command',
  personal: false,
  async run(context) {
    const { form, spell } = context;
    return context.answer(
      [
        '**Presently** shows your Discord presence, music and KV through an API.',
        ...(form === 'slash' ? slashLines(context.commands) : prefixLines(context)),
        `A message containing one of your API keys, anywhere I can read, revokes that key at once and I DM you a new one; ${spell('rotate')} replaces yours any time.`,
      ].join('\n'),
    );
  },
};
