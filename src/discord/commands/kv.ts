import { KV_MAX_KEYS } from '../../kv/rules.js';
import type { KvWriteOutcome } from '../../kv/service.js';
import type { Command, CommandContext } from './command.js';

/** Values longer than this are cut in listings; ?get shows as much as a message holds. */
const LISTED_VALUE_CHARS = 80;
const SHOWN_VALUE_CHARS = 1800;

function shown(value: string, max: number): string {
  const flat = value.replaceAll('```', '`\u200b``');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function refused(outcome: KvWriteOutcome): string | undefined {
  return outcome.ok ? undefined : `Not saved: ${outcome.rejection.message}.`;
}

/** The first word of the arguments, and the rest after one separating white-space character. */
function splitKey(args: string): { key: string; rest: string | undefined } {
  const match = /^(\S+)(?:\s([\s\S]*))?$/.exec(args);
  return { key: match?.[1] ?? '', rest: match?.[2] };
}

const usage = (context: CommandContext, command: string) => `Usage: \`${context.prefix}${command}\``;

export const kvCommand: Command = {
  name: 'kv',
  usage: 'kv',
  description: 'list your KV',
  where: 'dm',
  async run({ message, kv, reply }) {
    const { kv: values } = await kv.read(message.author.id);
    const entries = Object.entries(values);
    if (entries.length === 0) {
      await reply('Your KV is empty.');
      return;
    }
    const lines = entries.map(
      ([key, value]) => `${key} = ${shown(value, LISTED_VALUE_CHARS).replaceAll('\n', '⏎')}`,
    );
    await reply(`Your KV (${entries.length} of ${KV_MAX_KEYS} keys):\n\`\`\`\n${lines.join('\n')}\n\`\`\``);
  },
};

export const getCommand: Command = {
  name: 'get',
  usage: 'get <key>',
  description: 'show one value of your KV',
  where: 'dm',
  async run(context) {
    const { key } = splitKey(context.args);
    if (key === '') return context.reply(usage(context, this.usage));
    const { kv: values } = await context.kv.read(context.message.author.id);
    const value = Object.hasOwn(values, key) ? values[key] : undefined;
    await context.reply(
      value === undefined
        ? `\`${key}\` is not set.`
        : `\`${key}\` =\n\`\`\`\n${shown(value, SHOWN_VALUE_CHARS)}\n\`\`\``,
    );
  },
};

export const setCommand: Command = {
  name: 'set',
  usage: 'set <key> <value…>',
  description: 'set a value (the rest of the message, line breaks included)',
  where: 'dm',
  async run(context) {
    const { key, rest } = splitKey(context.args);
    if (key === '' || rest === undefined) return context.reply(usage(context, this.usage));
    const outcome = await context.kv.set(context.message.author.id, key, rest);
    await context.reply(refused(outcome) ?? `Saved \`${key}\`.`);
  },
};

export const delCommand: Command = {
  name: 'del',
  usage: 'del <key>',
  description: 'delete a key from your KV',
  where: 'dm',
  async run(context) {
    const { key } = splitKey(context.args);
    if (key === '') return context.reply(usage(context, this.usage));
    const outcome = await context.kv.delete(context.message.author.id, key);
    await context.reply(refused(outcome) ?? `Deleted \`${key}\`.`);
  },
};
