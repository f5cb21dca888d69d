import { GatewayDispatchEvents, type GatewayDispatchPayload } from 'discord-api-types/v10';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Bot, COMMANDS } from '../../../src/discord/commands/index.js';
import type { Messenger } from '../../../src/discord/messenger.js';
import type { ApiKeyService } from '../../../src/keys/service.js';
import type { KvService } from '../../../src/kv/service.js';
import {
  PAUSED_UNTIL_UNDONE,
  PRIVACY_FIELDS,
  type PrivacyPatch,
  type PrivacySettings,
  withDefaults,
} from '../../../src/presence/privacy.js';
import type { PrivacyService } from '../../../src/privacy/service.js';

/**
 * `?privacy` through the bot's dispatcher, as a message from Discord reaches it, with a messenger that
 * keeps the replies and a privacy service in memory that keeps settings as the store does (a patch
 * replaces the fields it names).
 */

const USER = '80351110224678912';
const GUILD = '400000000000000001';
const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);

class MemoryPrivacy implements Pick<PrivacyService, 'settings' | 'change'> {
  readonly stored = new Map<string, PrivacyPatch>();
  readonly changes: Array<{ userId: string; patch: PrivacyPatch }> = [];
  /** Set: every read fails, as a store that is down does. */
  failure: Error | undefined;

  async settings(userId: string): Promise<PrivacySettings> {
    if (this.failure) throw this.failure;
    return withDefaults(this.stored.get(userId));
  }

  async change(userId: string, patch: PrivacyPatch): Promise<PrivacySettings> {
    this.changes.push({ userId, patch });
    const kept = { ...this.stored.get(userId), ...patch };
    this.stored.set(userId, kept);
    return withDefaults(kept);
  }
}

function setup(options: { prefix?: string } = {}) {
  const privacy = new MemoryPrivacy();
  const replies: Array<{ channelId: string; content: string }> = [];
  const messenger = {
    reply: async (channelId: string, _messageId: string, content: string) => {
      replies.push({ channelId, content });
      return { accepted: true } as const;
    },
    dm: async () => ({ accepted: true }) as const,
  } as unknown as Messenger;
  const unused = new Proxy(
    {},
    {
      get: () => {
        throw new Error('not used by ?privacy');
      },
    },
  );
  const logged: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => logged.push(JSON.parse(line)) });
  const bot = new Bot({
    prefix: options.prefix ?? '?',
    // No message here holds an API key, so the leak check never asks about one.
    keys: unused as ApiKeyService,
    kv: unused as KvService,
    history: { forget: () => Promise.reject(new Error('not used by ?privacy')) },
    account: { erase: () => Promise.reject(new Error('not used by ?privacy')) },
    webhooks: { list: async () => [], remove: async () => 'not-found', maxPerUser: 0 } as never,
    privacy,
    accounts: { details: () => Promise.reject(new Error('not used by ?privacy')) },
    messenger,
    logger,
    now: () => NOW,
  });
  let messageId = 1000n;
  function send(content: string, where: { guildId?: string } = {}): Promise<void> | undefined {
    messageId += 1n;
    const payload = {
      t: GatewayDispatchEvents.MessageCreate,
      op: 0,
      s: 1,
      d: {
        id: String(messageId),
        channel_id: where.guildId === undefined ? '500000000000000001' : '500000000000000002',
        author: { id: USER, username: 'user', discriminator: '0', global_name: null, avatar: null },
        content,
        timestamp: new Date(NOW).toISOString(),
        edited_timestamp: null,
        tts: false,
        mention_everyone: false,
        mentions: [],
        mention_roles: [],
        attachments: [],
        embeds: [],
        pinned: false,
        type: 0,
        ...(where.guildId === undefined ? {} : { guild_id: where.guildId }),
      },
    } as unknown as GatewayDispatchPayload;
    return bot.handle(payload);
  }
  /** The user writes `content` (in GUILD when asked); resolves with the bot's one reply. */
  async function say(content: string, where: { guildId?: string } = {}): Promise<string> {
    const before = replies.length;
    await send(content, where);
    expect(replies.length).toBe(before + 1);
    return replies[replies.length - 1]?.content ?? '';
  }
  const settings = () => privacy.settings(USER);
  return { privacy, say, send, settings, replies, logged };
}

describe('?privacy in a DM', () => {
  it('lists every setting with its value, and usage examples', async () => {
    const { say, privacy } = setup();
    privacy.stored.set(USER, { hide_music_sources: ['spotify', 'tidal'], visibility: 'private' });
    const reply = await say('?privacy');
    for (const field of PRIVACY_FIELDS) expect(reply).toContain(`\`${field}\``);
    expect(reply).toContain('`hide_music_sources`: spotify, tidal');
    expect(reply).toContain('`visibility`: private');
    expect(reply).toContain('`hide_activity_types`: none');
    expect(reply).toContain('`record_history`: true');
    expect(reply).toContain('`paused_until`: not paused');
    expect(reply).toContain('`?privacy hide spotify`');
    expect(privacy.changes).toEqual([]);
  });

  it('counts many hidden applications in the list, and lists them all when asked for that setting', async () => {
    const { say, privacy } = setup();
    const ids = Array.from({ length: 30 }, (_, i) => String(100000000000000000n + BigInt(i)));
    privacy.stored.set(USER, { hide_application_ids: ids });
    expect(await say('?privacy')).toContain('`hide_application_ids`: 30 applications');
    const one = await say('?privacy hide_application_ids');
    for (const id of ids) expect(one).toContain(id);
  });

  it('uses the configured prefix', async () => {
    const { say } = setup({ prefix: '!' });
    const reply = await say('!privacy');
    expect(reply).toContain('`!privacy hide spotify`');
    expect(reply).not.toContain('`?privacy');
  });

  it.each([
    ['listening', 'hide_activity_types', 'listening'],
    ['Competing', 'hide_activity_types', 'competing'],
    ['spotify', 'hide_music_sources', 'spotify'],
    ['youtube-music', 'hide_music_sources', 'youtube_music'],
    ['YouTube Music', 'hide_music_sources', 'youtube_music'],
    ['apple_music', 'hide_music_sources', 'apple_music'],
    ['356875570916753438', 'hide_application_ids', '356875570916753438'],
  ] as const)('hide/show %s adds to and removes from %s', async (thing, field, item) => {
    const { say, settings, privacy } = setup();
    privacy.stored.set(USER, { [field]: field === 'hide_application_ids' ? ['111111111111111111'] : [] });
    const before = (await settings())[field] as string[];

    const hidden = await say(`?privacy hide ${thing}`);
    expect(hidden).toMatch(/^Hidden: /);
    expect(hidden).toContain(`\`${field}\` is now`);
    expect(hidden).toContain(item);
    expect((await settings())[field]).toEqual([...before, item]);

    expect(await say(`?privacy hide ${thing}`)).toMatch(/^Already hidden: /);
    expect(privacy.changes).toHaveLength(1);

    const shown = await say(`?privacy show ${thing}`);
    expect(shown).toMatch(/^Shown again: /);
    expect((await settings())[field]).toEqual(before);
    expect(privacy.changes.map((change) => change.patch)).toEqual([
      { [field]: [...before, item] },
      { [field]: before },
    ]);
  });

  it('keeps what else a list holds when hiding and showing one item of it', async () => {
    const { say, settings, privacy } = setup();
    privacy.stored.set(USER, { hide_activity_types: ['playing', 'watching'] });
    await say('?privacy hide streaming');
    expect((await settings()).hide_activity_types).toEqual(['playing', 'watching', 'streaming']);
    await say('?privacy show playing');
    expect((await settings()).hide_activity_types).toEqual(['watching', 'streaming']);
    expect(await say('?privacy show custom')).toMatch(/^Already shown: /);
  });

  it.each([
    ['custom_status', 'hide_custom_status', true],
    ['custom-status', 'hide_custom_status', true],
    ['platforms', 'hide_platforms', true],
    ['profile', 'hide_profile', true],
    ['kv', 'hide_kv', true],
    ['last_seen', 'show_last_seen', false],
  ] as const)('hide/show %s sets %s', async (thing, field, whenHidden) => {
    const { say, settings } = setup();
    const hidden = await say(`?privacy hide ${thing}`);
    expect(hidden).toContain(`\`${field}\` is now ${whenHidden}`);
    expect((await settings())[field]).toBe(whenHidden);
    const shown = await say(`?privacy show ${thing}`);
    expect(shown).toContain(`\`${field}\` is now ${!whenHidden}`);
    expect((await settings())[field]).toBe(!whenHidden);
  });

  it('answers what can be hidden when the thing is unknown, and changes nothing', async () => {
    const { say, privacy } = setup();
    const reply = await say('?privacy hide napster');
    expect(reply).toContain('"napster"');
    expect(reply).toContain('spotify');
    expect(reply).toContain('last_seen');
    expect(privacy.changes).toEqual([]);
  });

  it('refuses a 51st hidden application with the words of parsePrivacyPatch', async () => {
    const { say, privacy } = setup();
    const ids = Array.from({ length: 50 }, (_, i) => String(100000000000000000n + BigInt(i)));
    privacy.stored.set(USER, { hide_application_ids: ids });
    const reply = await say('?privacy hide 200000000000000000');
    expect(reply).toBe('Not changed: `hide_application_ids` may hold at most 50.');
    expect(privacy.changes).toEqual([]);
  });

  it.each([
    ['hide_platforms on', { hide_platforms: true }],
    ['hide_kv YES', { hide_kv: true }],
    ['record_history false', { record_history: false }],
    ['show_last_seen no', { show_last_seen: false }],
    ['allow_agents true', { allow_agents: true }],
    ['visibility Private', { visibility: 'private' }],
    ['hide_activity_types playing watching', { hide_activity_types: ['playing', 'watching'] }],
    [
      'hide_music_sources apple music, youtube-music',
      { hide_music_sources: ['apple_music', 'youtube_music'] },
    ],
    [
      'hide_application_ids 111111111111111111,222222222222222222',
      {
        hide_application_ids: ['111111111111111111', '222222222222222222'],
      },
    ],
    ['paused_until 1893456000000', { paused_until: 1_893_456_000_000 }],
  ] as const)('?privacy %s', async (args, patch) => {
    const { say, privacy, settings } = setup();
    const reply = await say(`?privacy ${args}`);
    const [field] = Object.keys(patch);
    expect(reply).toMatch(new RegExp(`^Changed: \`${field}\` is now `));
    expect(privacy.changes).toEqual([{ userId: USER, patch }]);
    expect(await settings()).toMatchObject(patch);
  });

  it('empties a list with none, and clears a pause with paused_until null', async () => {
    const { say, privacy, settings } = setup();
    privacy.stored.set(USER, { hide_music_sources: ['tidal'], paused_until: PAUSED_UNTIL_UNDONE });
    expect(await say('?privacy hide_music_sources none')).toBe('Changed: `hide_music_sources` is now none.');
    expect(await say('?privacy paused_until null')).toBe('Changed: `paused_until` is now not paused.');
    expect(await settings()).toMatchObject({ hide_music_sources: [], paused_until: null });
  });

  it.each([
    ['visibility secret', 'Not changed: `visibility` must be "public" or "private".'],
    ['hide_kv maybe', 'Not changed: `hide_kv` must be true or false.'],
    [
      'hide_activity_types playing dancing',
      'Not changed: `hide_activity_types` "dancing" is not one of playing, streaming, listening, watching, custom, competing.',
    ],
    [
      'hide_application_ids abc',
      'Not changed: `hide_application_ids` "abc" is not an application id (a snowflake, as a string).',
    ],
    ['paused_until tomorrow', 'Not changed: `paused_until` must be a time in epoch milliseconds, or null.'],
    [
      'paused_until 9999999999999999',
      'Not changed: `paused_until` must be a time in epoch milliseconds, or null.',
    ],
  ])('refuses ?privacy %s naming the field, and changes nothing', async (args, expected) => {
    const { say, privacy } = setup();
    expect(await say(`?privacy ${args}`)).toBe(expected);
    expect(privacy.changes).toEqual([]);
  });

  it('shows one setting when named without a value, and says when a value is already so', async () => {
    const { say, privacy } = setup();
    expect(await say('?privacy visibility')).toBe('`visibility`: public');
    expect(await say('?privacy visibility public')).toBe('`visibility` is already public.');
    expect(privacy.changes).toEqual([]);
  });

  it('history, private/public and agents', async () => {
    const { say, settings } = setup();
    expect(await say('?privacy history off')).toBe('Changed: `record_history` is now false.');
    expect(await say('?privacy private')).toBe('Changed: `visibility` is now private.');
    expect(await say('?privacy agents on')).toBe('Changed: `allow_agents` is now true.');
    expect(await settings()).toMatchObject({
      record_history: false,
      visibility: 'private',
      allow_agents: true,
    });
    await say('?privacy history ON');
    await say('?privacy public');
    await say('?privacy agents off');
    expect(await settings()).toMatchObject({
      record_history: true,
      visibility: 'public',
      allow_agents: false,
    });
  });

  it('answers the usage of history and agents without on or off', async () => {
    const { say, privacy } = setup();
    expect(await say('?privacy history')).toBe('Usage: `?privacy history on` or `?privacy history off`.');
    expect(await say('?privacy agents maybe')).toBe('Usage: `?privacy agents on` or `?privacy agents off`.');
    expect(privacy.changes).toEqual([]);
  });

  it.each([
    ['30m', 30 * 60_000],
    ['2h', 2 * 3_600_000],
    ['1d', 86_400_000],
    ['12h30m', 12 * 3_600_000 + 30 * 60_000],
    ['1d 6h', 30 * 3_600_000],
    ['365d', 365 * 86_400_000],
  ])('pause %s pauses until now plus that, and says until when', async (duration, ms) => {
    const { say, settings } = setup();
    const reply = await say(`?privacy pause ${duration}`);
    const until = NOW + ms;
    expect((await settings()).paused_until).toBe(until);
    expect(reply).toMatch(new RegExp(`^Paused until <t:${Math.floor(until / 1000)}:f>`));
    expect(await say('?privacy')).toContain(
      `\`paused_until\`: paused until <t:${Math.floor(until / 1000)}:f>`,
    );
  });

  it.each(['0m', '366d', '2 hours', 'soon', '5'])(
    'refuses pause %s, and changes nothing',
    async (duration) => {
      const { say, privacy } = setup();
      expect(await say(`?privacy pause ${duration}`)).toMatch(/^Pause for how long\?/);
      expect(privacy.changes).toEqual([]);
    },
  );

  it('pause alone pauses until undone; resume ends it', async () => {
    const { say, settings, privacy } = setup();
    expect(await say('?privacy pause')).toMatch(/^Paused until you resume/);
    expect((await settings()).paused_until).toBe(PAUSED_UNTIL_UNDONE);
    expect(await say('?privacy')).toContain('`paused_until`: paused until you resume');

    expect(await say('?privacy resume')).toMatch(/^Resumed/);
    expect((await settings()).paused_until).toBeNull();
    expect(await say('?privacy resume')).toBe('You are not paused.');
    expect(privacy.changes.map((change) => change.patch)).toEqual([
      { paused_until: PAUSED_UNTIL_UNDONE },
      { paused_until: null },
    ]);
  });

  it.each(['dance', 'hide', 'private please', 'resume now'])(
    'answers anything else (%s) with the usage, and changes nothing',
    async (args) => {
      const { say, privacy } = setup();
      const reply = await say(`?privacy ${args}`);
      expect(reply).toMatch(/^Usage, in a DM:/);
      expect(reply).toContain('`?privacy hide <thing>`');
      expect(privacy.changes).toEqual([]);
    },
  );
});

describe('?privacy when the service fails', () => {
  it('the dispatcher logs the failure and tells the user; nothing is thrown', async () => {
    const { send, privacy, replies, logged } = setup();
    privacy.failure = new Error('store down');
    await expect(send('?privacy hide spotify')).resolves.toBeUndefined();
    expect(replies.map((reply) => reply.content)).toEqual([
      'Sorry: that failed on my side. Try again in a moment.',
    ]);
    expect(logged).toEqual([
      expect.objectContaining({
        msg: 'a command failed',
        command: 'privacy hide',
        err: expect.objectContaining({ message: 'store down' }),
      }),
    ]);
  });
});

describe('?privacy in a server channel', () => {
  it.each([
    '?privacy',
    '?privacy hide spotify',
    '?privacy visibility private',
    '?privacy pause 2h',
    '?privacy resume',
    '?privacy nonsense',
  ])('%s: points to DMs, shows no setting and changes nothing', async (content) => {
    const { say, privacy } = setup();
    privacy.stored.set(USER, {
      hide_music_sources: ['spotify'],
      hide_application_ids: ['356875570916753438'],
      paused_until: PAUSED_UNTIL_UNDONE,
    });
    const reply = await say(content, { guildId: GUILD });
    expect(reply).toContain('DM');
    expect(reply).toContain('`?privacy`');
    for (const leaked of ['spotify', '356875570916753438', 'paused', 'hide_', 'true', 'false']) {
      expect(reply).not.toContain(leaked);
    }
    expect(privacy.changes).toEqual([]);
    expect(privacy.stored.get(USER)).toEqual({
      hide_music_sources: ['spotify'],
      hide_application_ids: ['356875570916753438'],
      paused_until: PAUSED_UNTIL_UNDONE,
    });
  });
});

describe('?help', () => {
  it('lists ?privacy', async () => {
    expect(COMMANDS.map((command) => command.name)).toContain('privacy show');
    const { say } = setup();
    expect(await say('?help')).toContain('`?privacy ');
  });
});
