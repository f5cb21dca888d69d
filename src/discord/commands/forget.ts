import { ApplicationCommandOptionType } from 'discord-api-types/v10';
import type { Erasure } from '../../store/ports.js';
import { type Command, type CommandContext, flag } from './command.js';

/**
 * `forget` asks first; confirmed, it erases the user's history and stats (KV and key stay), or with `all`,
 * everything kept about them.
 */
export const forgetCommand: Command = {
  name: 'forget',
  description: 'erase your history and stats; with all: everything kept about you (asks first)',
  options: [
    {
      type: ApplicationCommandOptionType.Boolean,
      name: 'all',
      description: 'erase everything kept about you: KV, key, webhooks, settings and history',
    },
  ],
  // What it erased is said in the answer.
  personal: true,
  async run(context, options) {
    const all = flag(options, 'all');
    if (all) return forgetAll(context, flag(options, 'confirm'));
    const { userId, history, answer } = context;
    if (!flag(options, 'confirm')) {
      return answer({
        content:
          'This erases your status history, listening history, play counts and stats for good. Your KV and API key stay.',
        confirm: { label: 'Erase my history', invocation: { name: 'forget', options: { confirm: true } } },
      });
    }
    const erased = await history.forget(userId);
    return answer(
      `Done: erased ${erased.statusEntries} status entries, ${erased.trackEntries} tracks and ${erased.playCounts} play counts, and reset your stats. Your KV and API key are untouched.`,
    );
  },
};

async function forgetAll({ userId, account, answer, spell }: CommandContext, confirmed: boolean) {
  if (!confirmed) {
    return answer({
      content:
        'This erases everything Presently keeps about you, for good: your KV, your API key, your webhooks and their deliveries, your privacy settings, your profile, your status and listening history, play counts and stats. While you share a server with me your presence is still shown, with no KV and the default settings.',
      confirm: {
        label: 'Erase everything',
        invocation: { name: 'forget', options: { all: true, confirm: true } },
      },
    });
  }
  const erased = await account.erase(userId);
  return answer(
    `Done: erased ${whatWent(erased)}. Your settings are the defaults again; ${spell('key')} gets you a new key.`,
  );
}

/** "3 KV keys, 1 API key, …, and your stats": what an erasure of everything took, as counted. */
export function whatWent(erased: Erasure): string {
  const parts = [
    counted(erased.kvKeys.length, 'KV key'),
    counted(erased.apiKeys, 'API key'),
    ...(erased.readTokens > 0 ? [counted(erased.readTokens, 'read token')] : []),
    counted(erased.webhookIds.length, 'webhook'),
    ...(erased.privacySettings ? ['your privacy settings'] : []),
    ...(erased.profile ? ['your stored profile'] : []),
    counted(erased.statusEntries, 'status entry', 'status entries'),
    counted(erased.trackEntries, 'track'),
    counted(erased.playCounts, 'play count'),
  ];
  return `${parts.join(', ')} and your stats`;
}

function counted(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
