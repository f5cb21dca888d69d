import { GatewayIntentBits } from 'discord-api-types/v10';
import type { Config, MonitorMode } from '../../config.js';

/**
 * What `/privacy` and `/terms` say, made from the instance's configuration: the same facts answer a
 * browser as a page and a program as JSON, so the two can never tell different stories.
 */

/** The configuration the pages speak of. */
export interface InstanceFacts {
  monitor: MonitorMode;
  monitorRoleId: string | null;
  guildIds: readonly string[] | null;
  allowedUserIds: readonly string[] | null;
  retentionDays: number;
  operatorContact: string | null;
  commandPrefix: string;
  rateLimitRead: number;
  rateLimitWrite: number;
  /** The gateway intents the bot identifies with (a bitfield). */
  intents: number;
  /** Live presences are kept in Redis, shared by several nodes (`REDIS_URL`). */
  sharedLive: boolean;
}

/** The facts of a configuration; `intents`: what the gateway identifies with. */
export function instanceFacts(config: Config, intents: number): InstanceFacts {
  return {
    monitor: config.monitor,
    monitorRoleId: config.monitorRoleId,
    guildIds: config.guildIds,
    allowedUserIds: config.allowedUserIds,
    retentionDays: config.retentionDays,
    operatorContact: config.operatorContact,
    commandPrefix: config.commandPrefix,
    rateLimitRead: config.rateLimitRead,
    rateLimitWrite: config.rateLimitWrite,
    intents,
    sharedLive: config.redisUrl !== null,
  };
}

/** package.json's `license`. */
export const LICENSE = 'MIT';

/** A piece of text set as code (a command, a route, a value): `<code>` on the page, as it is in JSON. */
export class Code {
  constructor(readonly text: string) {}
}

/** Text with code in it: plain strings, and code spans. Nothing in it is markup. */
export type RichText = readonly (string | Code)[];

const code = (text: string): Code => new Code(text);

/** A sentence whose holes are code spans when they are `Code`, text otherwise, and rich text as it is. */
function rich(strings: TemplateStringsArray, ...values: (string | number | Code | RichText)[]): RichText {
  const parts: (string | Code)[] = [];
  strings.forEach((text, i) => {
    if (text !== '') parts.push(text);
    const value = values[i];
    if (value === undefined) return;
    if (Array.isArray(value)) parts.push(...(value as RichText));
    else parts.push(value instanceof Code ? value : String(value));
  });
  return parts;
}

/** What a program reads: the code spans as their text. */
export function plainText(text: RichText): string {
  return text.map((part) => (part instanceof Code ? part.text : part)).join('');
}

export interface Intent {
  /** Discord's name for it, e.g. `GUILD_PRESENCES`. */
  name: string;
  /** Discord reviews the apps that use it. */
  privileged: boolean;
  why: RichText;
}

export interface Recorded {
  what: RichText;
  kept: RichText;
}

export interface Control {
  what: RichText;
  /** In a DM to the bot; null: the bot has no command for it. */
  bot: Code | null;
  /** With the user's API key; null: no route for it. */
  api: Code | null;
}

export interface PrivacyPolicy {
  facts: InstanceFacts;
  whoIsMonitored: RichText[];
  intents: Intent[];
  recorded: Recorded[];
  retention: RichText;
  controls: Control[];
  optingOut: RichText[];
}

/** The three intents Discord gates behind its review. */
const PRIVILEGED = new Set<number>([
  GatewayIntentBits.GuildMembers,
  GatewayIntentBits.GuildPresences,
  GatewayIntentBits.MessageContent,
]);

/** What the bot does with each intent Presently asks for; another intent is named without a reason. */
function purposeOf(bit: number, prefix: string): RichText {
  switch (bit) {
    case GatewayIntentBits.Guilds:
      return rich`the servers the bot is in, with their channels and roles`;
    case GatewayIntentBits.GuildMembers:
      return rich`who is a member of each server (the member list, joins, leaves, name and avatar changes), so that every member is known, online or not`;
    case GatewayIntentBits.GuildPresences:
      return rich`each member's status, activities (games, music, custom status) and the platforms they are on: the presence this instance serves`;
    case GatewayIntentBits.GuildMessages:
      return rich`messages in the server channels the bot can read (only with ${code('MESSAGE_CONTENT=on')}), to answer its ${code(`${prefix}`)} commands there and revoke API keys posted there; none is kept`;
    case GatewayIntentBits.DirectMessages:
      return rich`messages sent to the bot in a direct message, to answer its ${code(`${prefix}`)} commands and revoke API keys pasted there; none is kept`;
    case GatewayIntentBits.MessageContent:
      return rich`the text of messages in servers (only with ${code('MESSAGE_CONTENT=on')}), to see the bot's ${code(`${prefix}`)} commands there (the bot sees the text of a direct message without it); none is kept`;
    default:
      return rich`events of this kind, as Discord describes it`;
  }
}

/** Each intent's first name in discord-api-types (later ones are deprecated aliases), by its bit. */
const INTENT_NAMES: ReadonlyMap<number, string> = (() => {
  const names = new Map<number, string>();
  for (const [name, bit] of Object.entries(GatewayIntentBits)) {
    if (typeof bit === 'number' && !names.has(bit)) {
      names.set(bit, name.replace(/(?<=[a-z])(?=[A-Z])/g, '_').toUpperCase());
    }
  }
  return names;
})();

/** The intents of a bitfield, lowest bit first. */
export function intentsOf(bits: number, prefix: string): Intent[] {
  const intents: Intent[] = [];
  for (let bit = 1; bit > 0 && bit <= bits; bit *= 2) {
    if ((bits & bit) === 0) continue;
    intents.push({
      name: INTENT_NAMES.get(bit) ?? `1 << ${Math.log2(bit)}`,
      privileged: PRIVILEGED.has(bit),
      why: purposeOf(bit, prefix),
    });
  }
  return intents;
}

const plural = (count: number, one: string, many: string): string =>
  `${count.toLocaleString('en')} ${count === 1 ? one : many}`;

function whoIsMonitored(facts: InstanceFacts): RichText[] {
  const p = facts.commandPrefix;
  const servers =
    facts.guildIds === null
      ? 'the servers it shares with them'
      : `the ${facts.guildIds.length === 1 ? 'server' : `${facts.guildIds.length} servers`} listed below`;
  const sentences: RichText[] = [];
  if (facts.monitor === 'all') {
    sentences.push(
      facts.guildIds === null
        ? rich`Everyone who shares a server with the bot is monitored, online or offline.`
        : rich`Everyone who is a member of ${servers} is monitored, online or offline; the bot ignores the other servers it is in.`,
    );
  } else {
    const role =
      facts.monitorRoleId === null
        ? rich``
        : rich`, or by holding the role ${code(facts.monitorRoleId)} in one of them`;
    sentences.push(
      rich`Only those who ask are monitored, in ${servers}: by running ${code('/presently start')} (or sending the bot ${code(`${p}start`)} in a DM), by getting an API key (${code('/presently key')}), or by setting ${code('opted_in')} to ${code('true')} in their privacy settings${role}. Everyone else is dropped as Discord's messages come in: never kept, served or recorded.`,
    );
  }
  if (facts.allowedUserIds !== null) {
    sentences.push(
      rich`Whatever else applies, only ${plural(facts.allowedUserIds.length, 'user', 'users')} chosen by the operator can be monitored here (which ones is not shown, so that nobody learns who they are).`,
    );
  }
  return sentences;
}

function recorded(facts: InstanceFacts): Recorded[] {
  const p = facts.commandPrefix;
  const live = facts.sharedLive ? "in memory and in the instance's Redis" : 'in memory';
  return [
    {
      what: rich`Your presence: status, the platforms you are on, your activities (games, music, custom status), your Discord name, avatar and server tag, and your KV`,
      kept: rich`${live} while you are monitored; dropped as soon as you are not`,
    },
    {
      what: rich`Your profile: banner and accent colour, asked of Discord`,
      kept: rich`until what is kept of you is erased (below)`,
    },
    {
      what: rich`History: when your status changed and to what, the tracks you listened to, their play counts, and when you were last seen; unless you turn recording off (${code(`${p}privacy history off`)}) or pause`,
      kept: rich`until you erase it (${code('/presently forget')})`,
    },
    {
      what: rich`KV: the keys and values you write yourself`,
      kept: rich`until you delete them`,
    },
    {
      what: rich`Your API key: only a hash of it; the key is sent to you once, by DM`,
      kept: rich`until you get a new key or erase everything`,
    },
    {
      what: rich`Webhooks: the addresses you register, their events, the secret they are signed with, and their recent deliveries`,
      kept: rich`until you delete them`,
    },
    {
      what: rich`Your privacy settings`,
      kept: rich`until you erase everything`,
    },
    {
      what: rich`Messages to the bot: read to answer its commands`,
      kept: rich`not kept`,
    },
    {
      what: rich`Your IP address: counted against the rate limits and the caps on connections`,
      kept: rich`${live}, for the minute it is counted in or while you are connected; written to the service's log only beside a request that failed`,
    },
  ];
}

function retention(facts: InstanceFacts): RichText {
  const days = facts.retentionDays;
  const when =
    days === 0 ? 'at once' : `${plural(days, 'day', 'days')} later, unless you are monitored again before`;
  const why =
    facts.monitor === 'opt-in' ? 'you left, the bot did, or you opted out' : 'you left, or the bot did';
  return rich`When you share no monitored server with the bot any more (${why}), your presence is dropped at once, and what is kept of you (history, KV, profile, API key, webhooks, settings) is erased ${when} (${code(`RETENTION_DAYS=${days}`)}).`;
}

function controls(): Control[] {
  const privacy = 'PATCH /v1/users/@me/privacy';
  const bot = (text: string) => code(`/presently ${text}`);
  return [
    { what: rich`See your settings`, bot: bot('privacy show'), api: code('GET /v1/users/@me/privacy') },
    {
      what: rich`Hide activities (by type, application or music service), your custom status, platforms, profile, KV or last seen`,
      bot: bot('privacy hide'),
      api: code(privacy),
    },
    {
      what: rich`Go private: only you see your presence, everyone else is answered as if you were not monitored`,
      bot: bot('privacy set setting:visibility value:private'),
      api: code(`${privacy} {"visibility": "private"}`),
    },
    {
      what: rich`Pause: read as offline, with nothing recorded, for a while or until you resume`,
      bot: bot('privacy pause for:2h'),
      api: code(`${privacy} {"paused_until": …}`),
    },
    {
      what: rich`Stop recording history`,
      bot: bot('privacy set setting:record_history value:false'),
      api: code(`${privacy} {"record_history": false}`),
    },
    { what: rich`Erase your history, play counts and stats`, bot: bot('forget'), api: null },
    {
      what: rich`Erase everything kept of you`,
      bot: bot('forget all:True'),
      api: code('DELETE /v1/users/@me'),
    },
    {
      what: rich`Get a copy of everything kept of you`,
      bot: bot('export'),
      api: code('GET /v1/users/@me/export'),
    },
    { what: rich`Get an API key, for the API's side of this table`, bot: bot('key'), api: null },
  ];
}

function optingOut(facts: InstanceFacts): RichText[] {
  const p = facts.commandPrefix;
  if (facts.monitor === 'opt-in') {
    return [
      rich`To stop being monitored, run ${code('/presently stop')} (or send the bot ${code(`${p}stop`)} in a DM, or set ${code('opted_in')} to ${code('false')}), or leave the servers you share with it.`,
    ];
  }
  return [
    rich`To stop being monitored, leave the servers you share with the bot${facts.guildIds === null ? '' : ' that are listed above'}. Until then, going private or pausing keeps your presence from everyone else.`,
  ];
}

export function privacyPolicy(facts: InstanceFacts): PrivacyPolicy {
  return {
    facts,
    whoIsMonitored: whoIsMonitored(facts),
    intents: intentsOf(facts.intents, facts.commandPrefix),
    recorded: recorded(facts),
    retention: retention(facts),
    controls: controls(),
    optingOut: optingOut(facts),
  };
}

/** What `GET /privacy` answers a program, in the envelope's `data`. */
export function privacyJson(policy: PrivacyPolicy) {
  const { facts } = policy;
  return {
    operator_contact: facts.operatorContact,
    command_prefix: facts.commandPrefix,
    monitor: facts.monitor,
    monitor_role_id: facts.monitor === 'opt-in' ? facts.monitorRoleId : null,
    guild_ids: facts.guildIds,
    allowed_user_count: facts.allowedUserIds?.length ?? null,
    who_is_monitored: policy.whoIsMonitored.map(plainText),
    intents: policy.intents.map((intent) => ({
      name: intent.name,
      privileged: intent.privileged,
      why: plainText(intent.why),
    })),
    recorded: policy.recorded.map((item) => ({ what: plainText(item.what), kept: plainText(item.kept) })),
    retention_days: facts.retentionDays,
    retention: plainText(policy.retention),
    controls: policy.controls.map((control) => ({
      what: plainText(control.what),
      bot: control.bot?.text ?? null,
      api: control.api?.text ?? null,
    })),
    opting_out: policy.optingOut.map(plainText),
  };
}

export interface Term {
  title: string;
  text: RichText;
}

export interface TermsOfUse {
  facts: InstanceFacts;
  terms: Term[];
}

/** "1,200 a minute per …", or that the instance sets no such limit. */
function perMinute(limit: number, per: string): string {
  return limit === 0 ? 'no limit set by this instance' : `${limit.toLocaleString('en')} a minute per ${per}`;
}

export function termsOfUse(facts: InstanceFacts): TermsOfUse {
  return {
    facts,
    terms: [
      {
        title: 'Using the API',
        text: rich`You may read the presences, cards, history and events this instance serves, and write your own KV, webhooks and settings with your own API key. The people whose presence you read decide what is shown (see ${code('/privacy')}): do not use what you read to harass, track or profile anyone.`,
      },
      {
        title: 'Rate limits',
        text:
          facts.rateLimitRead === 0 && facts.rateLimitWrite === 0
            ? rich`This instance sets no rate limits; it still refuses abuse (below).`
            : rich`Reads: ${perMinute(facts.rateLimitRead, 'client address (an IPv6 address counts by its /64)')}. Writes: ${perMinute(facts.rateLimitWrite, 'API key')}. Past a limit the answer is ${code('429 rate_limited')}, with ${code('Retry-After')}.`,
      },
      {
        title: 'Abuse',
        text: rich`Requests meant to harm the service or its users are refused: floods, getting around the limits, guessing keys, reading what someone hid. The operator may block whoever sends them, without notice.`,
      },
      {
        title: 'No warranty',
        text: rich`The service is provided as it is, without warranty of any kind: what it answers may be late, wrong or missing, and it may change or stop at any time. Neither the operator nor Presently's authors are liable for any damage arising from its use.`,
      },
      {
        title: 'Discord',
        text: rich`This instance is not Discord and is not affiliated with it; what it knows of you, it learns from Discord, whose own terms still apply to you there.`,
      },
      {
        title: 'Open source',
        text: rich`Presently is open source under the ${LICENSE} license. The license covers the software; these terms cover this running instance, and follow its configuration.`,
      },
    ],
  };
}

/** What `GET /terms` answers a program, in the envelope's `data`. */
export function termsJson(terms: TermsOfUse) {
  const { facts } = terms;
  return {
    operator_contact: facts.operatorContact,
    rate_limits: { read_per_minute: facts.rateLimitRead, write_per_minute: facts.rateLimitWrite },
    license: LICENSE,
    terms: terms.terms.map((term) => ({ title: term.title, text: plainText(term.text) })),
  };
}
