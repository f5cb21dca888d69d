import { ApplicationCommandOptionType } from 'discord-api-types/v10';
import { KV_KEY_MAX_LENGTH, KV_MAX_KEYS, KV_VALUE_MAX_CHARS } from '../../kv/rules.js';
import type { KvWriteOutcome } from '../../kv/service.js';
import { MAX_MESSAGE_LENGTH } from '../messenger.js';
import { type Command, text } from './command.js';

/** Values longer than this are cut in listings; `kv get` shows as much as a message holds. */
const LISTED_VALUE_CHARS = 80;
const SHOWN_VALUE_CHARS = 1800;

/** Discord's client bounds a string option at this many characters; a longer value goes through the API. */
const SLASH_VALUE_MAX_CHARS = Math.min(KV_VALUE_MAX_CHARS, 6000);

function shown(value: string, max: number): string {
  const flat = value.replaceAll('```', '`\u200b``');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function refused(outcome: KvWriteOutcome): string | undefined {
  return outcome.ok ? undefined : `Not saved: ${outcome.rejection.message}.`;
}

const keyOption = (description: string) =>
  ({
    type: ApplicationCommandOptionType.String,
    name: 'key',
    description,
    required: true,
    max_length: KV_KEY_MAX_LENGTH,
  }) as const;

export const kvListCommand: Command = {
  name: 'kv list',
  description: 'list your KV',
  personal: true,
  async run({ userId, kv, answer }) {
    const { kv: values } = await kv.read(userId);
    const entries = Object.entries(values);
    if (entries.length === 0) return answer('Your KV is empty.');
    const head = `Your KV (${entries.length} of ${KV_MAX_KEYS} keys):`;
    const lines: string[] = [];
    let length = head.length + 8;
    for (const [key, value] of entries) {
      const line = `${key} = ${shown(value, LISTED_VALUE_CHARS).replaceAll('\n', '⏎')}`;
      // A long KV is cut where a message ends, saying how much is left out.
      if (length + line.length + 40 > MAX_MESSAGE_LENGTH) {
        lines.push(`… and ${entries.length - lines.length} more`);
        break;
      }
      lines.push(line);
      length += line.length + 1;
    }
    return answer(`${head}\n\`\`\`\n${lines.join('\n')}\n\`\`\``);
  },
};

export const kvGetCommand: Command = {
  name: 'kv get',
  description: 'show one value of your KV',
  options: [keyOption('the key to show')],
  personal: true,
  async run({ userId, kv, answer }, options) {
    const key = text(options, 'key');
    const { kv: values } = await kv.read(userId);
    const value = Object.hasOwn(values, key) ? values[key] : undefined;
    return answer(
      value === undefined
        ? `\`${key}\` is not set.`
        : `\`${key}\` =\n\`\`\`\n${shown(value, SHOWN_VALUE_CHARS)}\n\`\`\``,
    );
  },
};

export const kvSetCommand: Command = {
  name: 'kv set',
  description: 'set a value of your KV',
  options: [
    keyOption('letters, digits and _'),
    {
      type: ApplicationCommandOptionType.String,
      name: 'value',
      description: 'the value, as text',
      required: true,
      max_length: SLASH_VALUE_MAX_CHARS,
    },
  ],
  personal: true,
  async run({ userId, kv, answer }, options) {
    const key = text(options, 'key');
    const outcome = await kv.set(userId, key, text(options, 'value'));
    return answer(refused(outcome) ?? `Saved \`${key}\`.`);
  },
};

export const kvDeleteCommand: Command = {
  name: 'kv delete',
  description: 'delete a key from your KV',
  options: [keyOption('the key to delete')],
  personal: true,
  async run({ userId, kv, answer }, options) {
    const key = text(options, 'key');
    const outcome = await kv.delete(userId, key);
    return answer(refused(outcome) ?? `Deleted \`${key}\`.`);
  },
};
