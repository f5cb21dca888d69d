import { ApplicationCommandOptionType } from 'discord-api-types/v10';
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
import { type Command, type CommandContext, type Invocation, text } from './command.js';

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

/** The prefix form's grammar, `?privacy help`. */
function usage(prefix: string): string {
  const p = `${prefix}privacy`;
  return [
    'Usage, in a DM:',
    `\`${p}\` — your settings`,
    `\`${p} hide <thing>\` / \`${p} show <thing>\` — ${THINGS}`,
    `\`${p} private\` / \`${p} public\` · \`${p} history on|off\` · \`${p} agents on|off\``,
    `\`${p} pause [30m|2h|1d|12h30m]\` (alone: until you resume) · \`${p} resume\``,
    `\`${p} <setting> <value>\` — any setting by its API name, e.g. \`${p} hide_platforms true\``,
  ].join('\n');
}

/** What `hide` and `unhide` take. */
const THINGS = `an activity type (${ACTIVITY_TYPE_NAMES.join(', ')}), a music service (${HIDEABLE_MUSIC_SOURCES.join(', ')}), an application id, custom_status, platforms, profile, kv or last_seen`;

function overview(context: CommandContext, settings: PrivacySettings): string {
  const { spell } = context;
  const now = context.now();
  return [
    'Your privacy settings:',
    ...PRIVACY_FIELDS.map((field) => {
      const count = settings.hide_application_ids.length;
      const value =
        field === 'hide_application_ids' && count > LISTED_APPLICATIONS
          ? `${count} applications (${spell('privacy show', { setting: 'hide_application_ids' })} lists them)`
          : shownValue(field, settings, now);
      return `\`${field}\`: ${value}`;
    }),
    `Change them: ${spell('privacy hide', { thing: 'spotify' })} · ${spell('privacy unhide', { thing: 'playing' })} · ${spell('privacy set', { setting: 'visibility', value: 'private' })} · ${spell('privacy pause', { for: '2h' })} · ${spell('privacy resume')}${context.form === 'prefix' ? ` (${spell('privacy help')} for all)` : ''}.`,
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
 * `unchanged` when they already were so, or undefined once a refusal has been answered.
 */
async function apply(
  context: CommandContext,
  settings: PrivacySettings,
  input: Record<string, unknown>,
): Promise<PrivacySettings | 'unchanged' | undefined> {
  const checked = parsePrivacyPatch(input);
  if (isPrivacyRefusal(checked)) {
    // Worded as REST's `invalid_privacy_setting` message.
    await context.answer(`Not changed: \`${echoed(checked.field)}\` ${echoed(checked.message, 400)}.`);
    return undefined;
  }
  const fields = Object.keys(checked) as Field[];
  if (fields.every((field) => same(checked[field], settings[field]))) return 'unchanged';
  return context.privacy.change(context.userId, checked);
}

async function hideOrShow(context: CommandContext, hide: boolean, words: string) {
  const thing = thingNamed(words);
  if (thing === undefined) {
    return context.answer(
      `I don't know "${echoed(words)}". Things to hide or show: ${THINGS}.${context.form === 'prefix' ? ` See ${context.spell('privacy help')}.` : ''}`,
    );
  }
  const settings = await context.privacy.settings(context.userId);
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
  if (after === 'unchanged') return context.answer(`Already ${hide ? 'hidden' : 'shown'}: ${thing.label}.`);
  return context.answer(
    `${hide ? 'Hidden' : 'Shown again'}: ${thing.label}. \`${thing.field}\` is now ${shownValue(thing.field, after, context.now())}.`,
  );
}

async function setField(context: CommandContext, field: Field, text: string) {
  const settings = await context.privacy.settings(context.userId);
  const now = context.now();
  const after = await apply(context, settings, { [field]: typedValue(field, text) });
  if (after === undefined) return;
  if (after === 'unchanged')
    return context.answer(`\`${field}\` is already ${shownValue(field, settings, now)}.`);
  return context.answer(`Changed: \`${field}\` is now ${shownValue(field, after, now)}.`);
}

async function pause(context: CommandContext, text: string) {
  const { spell } = context;
  const now = context.now();
  let until = PAUSED_UNTIL_UNDONE;
  if (text !== '') {
    const ms = durationMs(text);
    if (ms === undefined || ms === 0 || ms > MAX_PAUSE_MS) {
      return context.answer(
        `Pause for how long? A duration like \`30m\`, \`2h\`, \`1d\` or \`12h30m\`, at most 365d: ${spell('privacy pause', { for: '2h' })}. ${spell('privacy pause')} alone pauses until you resume.`,
      );
    }
    until = now + ms;
  }
  const settings = await context.privacy.settings(context.userId);
  const after = await apply(context, settings, { paused_until: until });
  if (after === undefined) return;
  const effect = 'the API shows you offline and records no history';
  if (until === PAUSED_UNTIL_UNDONE) {
    return context.answer(`Paused until you resume: ${effect}. ${spell('privacy resume')} ends it.`);
  }
  return context.answer(
    `Paused until ${at(until, 'f')} (${at(until, 'R')}): ${effect} until then. ${spell('privacy resume')} ends it sooner.`,
  );
}

async function resume(context: CommandContext) {
  const settings = await context.privacy.settings(context.userId);
  if (settings.paused_until === null) return context.answer('You are not paused.');
  const after = await apply(context, settings, { paused_until: null });
  if (after === undefined) return;
  return context.answer('Resumed: `paused_until` is now null, and the API shows your presence again.');
}

const settingOption = {
  type: ApplicationCommandOptionType.String,
  name: 'setting',
  description: 'a setting, by its API name',
  choices: PRIVACY_FIELDS.map((field) => ({ name: field, value: field })),
} as const;

const thingOption = {
  type: ApplicationCommandOptionType.String,
  name: 'thing',
  description: 'an activity type, a music service, an application id, custom_status, platforms, profile…',
  required: true,
  max_length: 40,
} as const;

// Settings are shown and changed where nobody else sees them: a server channel would show what one hides.
export const privacyShowCommand: Command = {
  name: 'privacy show',
  description: 'see what the API shows of you: your privacy settings',
  options: [settingOption],
  personal: true,
  async run(context, options) {
    const settings = await context.privacy.settings(context.userId);
    const setting = text(options, 'setting');
    if (setting === '') return context.answer(overview(context, settings));
    if (!(PRIVACY_FIELDS as readonly string[]).includes(setting)) {
      return context.answer(`Not a setting: \`${echoed(setting)}\`.`);
    }
    return context.answer(`\`${setting}\`: ${shownValue(setting as Field, settings, context.now())}`);
  },
};

export const privacySetCommand: Command = {
  name: 'privacy set',
  description: 'change one privacy setting, checked as the API checks it',
  options: [
    { ...settingOption, required: true },
    {
      type: ApplicationCommandOptionType.String,
      name: 'value',
      description: 'true or false, a list separated by commas, public or private, none…',
      required: true,
      max_length: 2000,
    },
  ],
  personal: true,
  run: (context, options) => setField(context, text(options, 'setting') as Field, text(options, 'value')),
};

export const privacyHideCommand: Command = {
  name: 'privacy hide',
  description: 'hide something from everyone who reads your presence',
  options: [thingOption],
  personal: true,
  run: (context, options) => hideOrShow(context, true, text(options, 'thing')),
};

export const privacyUnhideCommand: Command = {
  name: 'privacy unhide',
  description: 'show again something you hid',
  options: [thingOption],
  personal: true,
  run: (context, options) => hideOrShow(context, false, text(options, 'thing')),
};

export const privacyPauseCommand: Command = {
  name: 'privacy pause',
  description: 'show yourself offline and record nothing, for a while or until you resume',
  options: [
    {
      type: ApplicationCommandOptionType.String,
      name: 'for',
      description: 'how long: 30m, 2h, 1d, 12h30m (at most 365d); empty: until you resume',
      max_length: 20,
    },
  ],
  personal: true,
  run: (context, options) => pause(context, text(options, 'for').trim()),
};

export const privacyResumeCommand: Command = {
  name: 'privacy resume',
  description: 'end a pause',
  personal: true,
  run: resume,
};

/**
 * `?privacy …` as an invocation of the commands above, or the usage to answer. The words stay as they
 * were before slash commands: `show <thing>` unhides, `private`, `history off`, `pause 2h`.
 */
export function privacyWords(args: string, prefix: string): Invocation | { usage: string } {
  const match = /^(\S*)\s*([\s\S]*?)\s*$/.exec(args.trim());
  const verb = match?.[1]?.toLowerCase() ?? '';
  const rest = match?.[2] ?? '';
  const p = `${prefix}privacy`;
  const invoke = (name: string, options: Record<string, string> = {}): Invocation => ({
    name: `privacy ${name}`,
    options,
  });
  const toggle = (setting: Field, name: string) =>
    Object.hasOwn(BOOLEAN_WORDS, rest.toLowerCase())
      ? invoke('set', { setting, value: rest })
      : { usage: `Usage: \`${p} ${name} on\` or \`${p} ${name} off\`.` };
  if ((PRIVACY_FIELDS as readonly string[]).includes(verb)) {
    return rest === '' ? invoke('show', { setting: verb }) : invoke('set', { setting: verb, value: rest });
  }
  switch (verb) {
    case '':
      return invoke('show');
    case 'hide':
      return rest === '' ? { usage: usage(prefix) } : invoke('hide', { thing: rest });
    case 'show':
      return rest === '' ? { usage: usage(prefix) } : invoke('unhide', { thing: rest });
    case 'history':
      return toggle('record_history', 'history');
    case 'agents':
      return toggle('allow_agents', 'agents');
    case 'private':
    case 'public':
      return rest === '' ? invoke('set', { setting: 'visibility', value: verb }) : { usage: usage(prefix) };
    case 'pause':
      return invoke('pause', rest === '' ? {} : { for: rest });
    case 'resume':
      return rest === '' ? invoke('resume') : { usage: usage(prefix) };
    default:
      return { usage: usage(prefix) };
  }
}
