import type { Invocation, OptionValues } from './command.js';
import { privacyWords } from './privacy.js';

/** A `?word …` message: how its words name a command and its options. Pure. */
export interface PrefixWord {
  word: string;
  /** Shown by help after the prefix: "set <key> <value…>". */
  usage: string;
  /** The command whose description help shows beside it. */
  describes: string;
  /** The invocation, or the usage to answer when the words do not fit. */
  parse(args: string, prefix: string): Invocation | { usage: string };
}

const invoke = (name: string, options: OptionValues = {}): Invocation => ({ name, options });

/** The first word of the arguments, and the rest after one separating white-space character. */
function splitKey(args: string): { key: string; rest: string | undefined } {
  const match = /^(\S+)(?:\s([\s\S]*))?$/.exec(args);
  return { key: match?.[1] ?? '', rest: match?.[2] };
}

function keyed(word: string, usage: string, name: string): PrefixWord {
  return {
    word,
    usage,
    describes: name,
    parse: (args, prefix) => {
      const { key } = splitKey(args);
      return key === '' ? { usage: `Usage: \`${prefix}${usage}\`` } : invoke(name, { key });
    },
  };
}

const bare = (word: string, name: string): PrefixWord => ({
  word,
  usage: word,
  describes: name,
  parse: () => invoke(name),
});

/** Every `?word` the bot answers, as before slash commands; a new one is an entry here. */
export const PREFIX_WORDS: readonly PrefixWord[] = [
  bare('apikey', 'rotate'),
  bare('revoke', 'revoke'),
  bare('kv', 'kv list'),
  keyed('get', 'get <key>', 'kv get'),
  {
    word: 'set',
    usage: 'set <key> <value…>',
    describes: 'kv set',
    parse: (args, prefix) => {
      // The value is the rest of the message, line breaks included.
      const { key, rest } = splitKey(args);
      if (key === '' || rest === undefined) return { usage: `Usage: \`${prefix}set <key> <value…>\`` };
      return invoke('kv set', { key, value: rest });
    },
  },
  keyed('del', 'del <key>', 'kv delete'),
  {
    word: 'forget',
    usage: 'forget [all] confirm',
    describes: 'forget',
    parse: (args) => {
      const words = args.trim().toLowerCase().split(/\s+/);
      if (words[0] === 'all') {
        return invoke(
          'forget',
          words.length === 2 && words[1] === 'confirm' ? { all: true, confirm: true } : { all: true },
        );
      }
      return invoke('forget', args.trim().toLowerCase() === 'confirm' ? { confirm: true } : {});
    },
  },
  {
    word: 'webhooks',
    usage: 'webhooks [remove <id>]',
    describes: 'webhooks list',
    parse: (args, prefix) => {
      const [verb, id, ...rest] = args.split(/\s+/).filter((word) => word !== '');
      if (verb === undefined) return invoke('webhooks list');
      if (verb === 'remove' && id !== undefined && rest.length === 0)
        return invoke('webhooks remove', { id });
      return {
        usage: `Usage: \`${prefix}webhooks\` to list them, \`${prefix}webhooks remove <id>\` to remove one.`,
      };
    },
  },
  {
    word: 'privacy',
    usage: 'privacy [hide|show <thing> | <setting> <value> | pause [<duration>] | resume]',
    describes: 'privacy show',
    parse: privacyWords,
  },
  bare('start', 'start'),
  {
    word: 'stop',
    usage: 'stop confirm',
    describes: 'stop',
    parse: (args) => invoke('stop', args.trim().toLowerCase() === 'confirm' ? { confirm: true } : {}),
  },
  bare('card', 'card'),
  // Answers where the file is: a DM has no ephemeral answer to carry it.
  bare('export', 'export'),
  bare('help', 'help'),
];

type Spelling = (options: OptionValues) => string;
const given = (options: OptionValues, name: string, placeholder = `<${name}>`) =>
  options[name] === undefined ? placeholder : String(options[name]);

/** Commands as a prefix message writes them; those missing here are slash-only. */
const SPELLINGS: Readonly<Record<string, Spelling>> = {
  key: () => 'apikey',
  rotate: () => 'apikey',
  revoke: () => 'revoke',
  'kv list': () => 'kv',
  'kv get': (o) => `get ${given(o, 'key')}`,
  'kv set': (o) => `set ${given(o, 'key')} ${given(o, 'value')}`,
  'kv delete': (o) => `del ${given(o, 'key')}`,
  forget: (o) =>
    ['forget', o.all === true ? 'all' : '', o.confirm === true ? 'confirm' : ''].filter(Boolean).join(' '),
  'privacy show': (o) => (o.setting === undefined ? 'privacy' : `privacy ${o.setting}`),
  'privacy set': (o) => `privacy ${given(o, 'setting')} ${given(o, 'value')}`,
  'privacy hide': (o) => `privacy hide ${given(o, 'thing')}`,
  'privacy unhide': (o) => `privacy show ${given(o, 'thing')}`,
  'privacy pause': (o) => (o.for === undefined ? 'privacy pause' : `privacy pause ${o.for}`),
  'privacy resume': () => 'privacy resume',
  'privacy help': () => 'privacy help',
  start: () => 'start',
  stop: (o) => (o.confirm === true ? 'stop confirm' : 'stop'),
  'webhooks list': () => 'webhooks',
  'webhooks remove': (o) => `webhooks remove ${given(o, 'id')}`,
  card: () => 'card',
  help: () => 'help',
};

/** The slash command every command lives under. */
export const SLASH_COMMAND_NAME = 'presently';

/** "`/presently kv get key:theme`": as Discord's client shows a filled-in command. */
export function slashSpelling(name: string, options: OptionValues = {}): string {
  const values = Object.entries(options).map(([option, value]) => {
    const shown = value === true ? 'True' : value === false ? 'False' : String(value);
    return ` ${option}:${shown}`;
  });
  return `\`/${SLASH_COMMAND_NAME} ${name}${values.join('')}\``;
}

/** "`?get theme`"; a slash-only command as the slash form spells it. */
export function prefixSpelling(prefix: string, name: string, options: OptionValues = {}): string {
  const spelling = SPELLINGS[name];
  return spelling === undefined ? slashSpelling(name, options) : `\`${prefix}${spelling(options)}\``;
}
