import {
  ACTIVITY_TYPE_NAMES,
  HIDEABLE_MUSIC_SOURCES,
  isPaused,
  isPrivacyRefusal,
  PAUSED_UNTIL_UNDONE,
  PRIVACY_FIELDS,
  type PrivacySettings,
  parsePrivacyPatch,
} from '../../presence/privacy.js';
import { isSnowflake } from '../../presence/snowflake.js';
import type { Command, CommandContext } from './command.js';

type Field = keyof PrivacySettings;
type ListField = 'hide_activity_types' | 'hide_music_sources' | 'hide_application_ids';
type FlagField = 'hide_custom_status' | 'hide_platforms' | 'hide_profile' | 'hide_kv' | 'show_last_seen';

/** What `hide` and `show` act on: an item of a list, or a flag. */
type Thing =
  | { kind: 'list'; field: ListField; item: string; label: string }
  | { kind: 'flag'; field: FlagField; hiddenValue: boolean; label: string };

/** The flags `hide`/`show` name; `show_last_seen` hides by being false. */
const FLAGS: Readonly<Record<string, Extract<Thing, { kind: 'flag' }>>> = {
  custom_status: {
    kind: 'flag',
    field: 'hide_custom_status',
    hiddenValue: true,
    label: 'your custom status',
  },
  platforms: { kind: 'flag', field: 'hide_platforms', hiddenValue: true, label: 'the platforms you are on' },
  profile: { kind: 'flag', field: 'hide_profile', hiddenValue: true, label: 'your profile' },
  kv: { kind: 'flag', field: 'hide_kv', hiddenValue: true, label: 'your KV' },
  last_seen: { kind: 'flag', field: 'show_last_seen', hiddenValue: false, label: 'when you were last seen' },
};

const BOOLEAN_WORDS: Readonly<Record<string, boolean>> = {
  true: true,
  on: true,
  yes: true,
  false: false,
  off: false,
  no: false,
};

const LIST_FIELDS: readonly Field[] = ['hide_activity_types', 'hide_music_sources', 'hide_application_ids'];

/** Past this many hidden applications the overview counts them instead of listing them, to fit a message. */
const LISTED_APPLICATIONS = 10;

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
const MAX_PAUSE_MS = 365 * DAY_MS;

/** Names as users write them: "YouTube Music", "youtube-music" and "youtube_music" alike. */
const normalized = (word: string) =>
  word
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');

/** User text echoed in a reply: no code spans broken, nothing long. */
const echoed = (text: string, max = 60) => {
  const flat = text.replaceAll('`', "'");
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

/** Discord shows `<t:seconds:f>` as a date and time in the reader's own zone. */
const at = (ms: number, style: 'f' | 'R') => `<t:${Math.floor(ms / 1000)}:${style}>`;

function thingNamed(words: string): Thing | undefined {
  const name = normalized(words);
  if ((ACTIVITY_TYPE_NAMES as readonly string[]).includes(name)) {
    return { kind: 'list', field: 'hide_activity_types', item: name, label: `${name} activities` };
  }
  if ((HIDEABLE_MUSIC_SOURCES as readonly string[]).includes(name)) {
    return { kind: 'list', field: 'hide_music_sources', item: name, label: name };
  }
  if (isSnowflake(words.trim())) {
    const id = words.trim();
    return { kind: 'list', field: 'hide_application_ids', item: id, label: `application ${id}` };
  }
  return Object.hasOwn(FLAGS, name) ? FLAGS[name] : undefined;
}

function shownValue(field: Field, settings: PrivacySettings, now: number): string {
  const value = settings[field];
  if (field === 'paused_until') return pauseShown(settings, now);
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(', ');
  return String(value);
}

function pauseShown(settings: PrivacySettings, now: number): string {
  const until = settings.paused_until;
  if (until === null || !isPaused(settings, now)) return 'not paused';
  if (until === PAUSED_UNTIL_UNDONE) return 'paused until you resume';
  return `paused until ${at(until, 'f')}`;
}

/** `30m`, `2h`, `1d`, `12h30m`, `1d 6h`: milliseconds, or undefined for anything else. */
function durationMs(text: string): number | undefined {
  const match = /^(?:(\d{1,4})d)?(?:(\d{1,5})h)?(?:(\d{1,6})m)?$/.exec(
    text.replace(/\s+/g, '').toLowerCase(),
  );
  if (!match || match.slice(1).every((part) => part === undefined)) return undefined;
  const [days = 0, hours = 0, minutes = 0] = match.slice(1).map((part) => Number(part ?? 0));
  return days * DAY_MS + hours * HOUR_MS + minutes * MINUTE_MS;
}

function usage(prefix: string): string {
  const p = `${prefix}privacy`;
  return [
    'Usage, in a DM:',
    `\`${p}\` — your settings`,
    `\`${p} hide <thing>\` / \`${p} show <thing>\` — an activity type (${ACTIVITY_TYPE_NAMES.join(', ')}), a music service (${HIDEABLE_MUSIC_SOURCES.join(', ')}), an application id, custom_status, platforms, profile, kv or last_seen`,
    `\`${p} private\` / \`${p} public\` · \`${p} history on|off\` · \`${p} agents on|off\``,
    `\`${p} pause [30m|2h|1d|12h30m]\` (alone: until you resume) · \`${p} resume\``,
    `\`${p} <setting> <value>\` — any setting by its API name, e.g. \`${p} hide_platforms true\``,
  ].join('\n');
}

function overview(settings: PrivacySettings, now: number, prefix: string): string {
  const p = `${prefix}privacy`;
  return [
    'Your privacy settings:',
    ...PRIVACY_FIELDS.map((field) => {
      const count = settings.hide_application_ids.length;
      const value =
        field === 'hide_application_ids' && count > LISTED_APPLICATIONS
          ? `${count} applications (\`${p} hide_application_ids\` lists them)`
          : shownValue(field, settings, now);
      return `\`${field}\`: ${value}`;
    }),
    `Change them: \`${p} hide spotify\` · \`${p} show playing\` · \`${p} private\` · \`${p} history off\` · \`${p} pause 2h\` · \`${p} resume\` · \`${p} <setting> <value>\` (\`${p} help\` for all).`,
  ].join('\n');
}

/** The value a user typed for a field, as the REST body would carry it; parsePrivacyPatch judges it. */
function typedValue(field: Field, text: string): unknown {
  const word = text.trim().toLowerCase();
  if (LIST_FIELDS.includes(field)) {
    if (word === 'none' || word === '[]') return [];
    // Commas, when there are any, separate names that may hold spaces ("apple music, tidal").
    const items = text.includes(',') ? text.split(',') : text.split(/\s+/);
    const kept = items.map((item) => item.trim()).filter((item) => item !== '');
    return field === 'hide_application_ids' ? kept : kept.map(normalized);
  }
  if (field === 'paused_until') {
    if (word === 'null' || word === 'none') return null;
    return /^\d+$/.test(word) ? Number(word) : text.trim();
  }
  if (field === 'visibility') return word;
  return Object.hasOwn(BOOLEAN_WORDS, word) ? BOOLEAN_WORDS[word] : text.trim();
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Checks a patch as REST does, and applies it if it changes anything. Answers the settings after it,
 * `unchanged` when they already were so, or undefined once a refusal has been replied.
 */
async function apply(
  context: CommandContext,
  settings: PrivacySettings,
  input: Record<string, unknown>,
): Promise<PrivacySettings | 'unchanged' | undefined> {
  const checked = parsePrivacyPatch(input);
  if (isPrivacyRefusal(checked)) {
    // Worded as REST's `invalid_privacy_setting` message.
    await context.reply(`Not changed: \`${echoed(checked.field)}\` ${echoed(checked.message, 400)}.`);
    return undefined;
  }
  const fields = Object.keys(checked) as Field[];
  if (fields.every((field) => same(checked[field], settings[field]))) return 'unchanged';
  return context.privacy.change(context.message.author.id, checked);
}

async function hideOrShow(context: CommandContext, settings: PrivacySettings, hide: boolean, words: string) {
  const { prefix, now } = context;
  const thing = thingNamed(words);
  if (thing === undefined) {
    return context.reply(
      `I don't know "${echoed(words)}". Things to hide or show: an activity type (${ACTIVITY_TYPE_NAMES.join(', ')}), a music service (${HIDEABLE_MUSIC_SOURCES.join(', ')}), an application id, custom_status, platforms, profile, kv or last_seen. See \`${prefix}privacy help\`.`,
    );
  }
  let value: unknown;
  if (thing.kind === 'flag') {
    value = hide ? thing.hiddenValue : !thing.hiddenValue;
  } else {
    // The whole list is written back: a patch replaces what it names.
    const list: readonly string[] = settings[thing.field];
    if (!hide) value = list.filter((item) => item !== thing.item);
    else value = list.includes(thing.item) ? list : [...list, thing.item];
  }
  const after = await apply(context, settings, { [thing.field]: value });
  if (after === undefined) return;
  if (after === 'unchanged') return context.reply(`Already ${hide ? 'hidden' : 'shown'}: ${thing.label}.`);
  return context.reply(
    `${hide ? 'Hidden' : 'Shown again'}: ${thing.label}. \`${thing.field}\` is now ${shownValue(thing.field, after, now())}.`,
  );
}

async function setField(context: CommandContext, settings: PrivacySettings, field: Field, text: string) {
  const now = context.now();
  const after = await apply(context, settings, { [field]: typedValue(field, text) });
  if (after === undefined) return;
  if (after === 'unchanged')
    return context.reply(`\`${field}\` is already ${shownValue(field, settings, now)}.`);
  return context.reply(`Changed: \`${field}\` is now ${shownValue(field, after, now)}.`);
}

async function pause(context: CommandContext, settings: PrivacySettings, text: string) {
  const p = `${context.prefix}privacy`;
  const now = context.now();
  let until = PAUSED_UNTIL_UNDONE;
  if (text !== '') {
    const ms = durationMs(text);
    if (ms === undefined || ms === 0 || ms > MAX_PAUSE_MS) {
      return context.reply(
        `Pause for how long? A duration like \`30m\`, \`2h\`, \`1d\` or \`12h30m\`, at most 365d: \`${p} pause 2h\`. \`${p} pause\` alone pauses until you resume.`,
      );
    }
    until = now + ms;
  }
  const after = await apply(context, settings, { paused_until: until });
  if (after === undefined) return;
  const effect = 'the API shows you offline and records no history';
  if (until === PAUSED_UNTIL_UNDONE) {
    return context.reply(`Paused until you resume: ${effect}. Send \`${p} resume\` to end it.`);
  }
  return context.reply(
    `Paused until ${at(until, 'f')} (${at(until, 'R')}): ${effect} until then. \`${p} resume\` ends it sooner.`,
  );
}

async function resume(context: CommandContext, settings: PrivacySettings) {
  if (settings.paused_until === null) return context.reply('You are not paused.');
  const after = await apply(context, settings, { paused_until: null });
  if (after === undefined) return;
  return context.reply('Resumed: `paused_until` is now null, and the API shows your presence again.');
}

/** `history on`, `agents off`: a flag by its plain name. */
async function toggle(
  context: CommandContext,
  settings: PrivacySettings,
  field: Field,
  word: string,
  name: string,
) {
  const p = `${context.prefix}privacy`;
  if (!Object.hasOwn(BOOLEAN_WORDS, word.toLowerCase())) {
    return context.reply(`Usage: \`${p} ${name} on\` or \`${p} ${name} off\`.`);
  }
  return setField(context, settings, field, word);
}

/**
 * `?privacy` shows the sender's privacy settings and changes them, in DMs only: a server channel would show
 * everyone what they hide. Every change is checked by `parsePrivacyPatch`, as REST checks it.
 */
export const privacyCommand: Command = {
  name: 'privacy',
  usage: 'privacy [hide|show <thing> | <setting> <value> | pause [<duration>] | resume]',
  description: 'see and change what the API shows of you (in DMs)',
  where: 'anywhere',
  async run(context) {
    const { args, isDm, prefix, reply } = context;
    if (!isDm) {
      return reply(
        `Your privacy settings are shown and changed in DMs only, so nobody else sees them: send me \`${prefix}privacy\` in a direct message.`,
      );
    }
    const match = /^(\S*)\s*([\s\S]*?)\s*$/.exec(args.trim());
    const verb = match?.[1]?.toLowerCase() ?? '';
    const rest = match?.[2] ?? '';
    if (verb === 'help') return reply(usage(prefix));
    const isField = (PRIVACY_FIELDS as readonly string[]).includes(verb);
    const known = ['', 'hide', 'show', 'history', 'agents', 'private', 'public', 'pause', 'resume'];
    if (!isField && !known.includes(verb)) return reply(usage(prefix));
    const userId = context.message.author.id;
    const settings = await context.privacy.settings(userId);
    const now = context.now();
    if (isField && rest === '') {
      return reply(`\`${verb}\`: ${shownValue(verb as Field, settings, now)}`);
    }
    if (isField) return setField(context, settings, verb as Field, rest);
    switch (verb) {
      case '':
        return reply(overview(settings, now, prefix));
      case 'hide':
      case 'show':
        return rest === '' ? reply(usage(prefix)) : hideOrShow(context, settings, verb === 'hide', rest);
      case 'history':
        return toggle(context, settings, 'record_history', rest, 'history');
      case 'agents':
        return toggle(context, settings, 'allow_agents', rest, 'agents');
      case 'private':
      case 'public':
        return rest === '' ? setField(context, settings, 'visibility', verb) : reply(usage(prefix));
      case 'pause':
        return pause(context, settings, rest);
      case 'resume':
        return rest === '' ? resume(context, settings) : reply(usage(prefix));
    }
  },
};
