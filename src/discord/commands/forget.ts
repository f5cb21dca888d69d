import type { Erasure } from '../../store/ports.js';
import type { Command, CommandContext } from './command.js';

/**
 * `?forget` warns; `?forget confirm` erases the sender's history and stats (KV and key stay).
 * `?forget all` warns; `?forget all confirm` erases everything kept about the sender.
 */
export const forgetCommand: Command = {
  name: 'forget',
  usage: 'forget [all] confirm',
  description:
    'erase your status and listening history, play counts and stats (your KV and key stay); with `all`, everything kept about you',
  where: 'anywhere',
  async run(context) {
    const words = context.args.trim().toLowerCase().split(/\s+/);
    if (words[0] === 'all') {
      await forgetAll(context, words.length === 2 && words[1] === 'confirm');
      return;
    }
    const { message, args, history, prefix, reply } = context;
    if (args.trim().toLowerCase() !== 'confirm') {
      await reply(
        `This erases your status history, listening history, play counts and stats for good. Your KV and API key stay. Send \`${prefix}forget confirm\` to go ahead, or \`${prefix}forget all\` to erase everything kept about you.`,
      );
      return;
    }
    const erased = await history.forget(message.author.id);
    await reply(
      `Done: erased ${erased.statusEntries} status entries, ${erased.trackEntries} tracks and ${erased.playCounts} play counts, and reset your stats. Your KV and API key are untouched.`,
    );
  },
};

async function forgetAll({ message, account, prefix, reply }: CommandContext, confirmed: boolean) {
  if (!confirmed) {
    await reply(
      `This erases everything Presently keeps about you, for good: your KV, your API key, your webhooks and their deliveries, your privacy settings, your profile, your status and listening history, play counts and stats. While you share a server with me your presence is still shown, with no KV and the default settings. Send \`${prefix}forget all confirm\` to go ahead.`,
    );
    return;
  }
  const erased = await account.erase(message.author.id);
  await reply(
    `Done: erased ${whatWent(erased)}. Your settings are the defaults again; \`${prefix}apikey\` gets you a new key.`,
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
