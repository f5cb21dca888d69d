import type { Command } from './command.js';

/** `?forget` warns; `?forget confirm` erases the sender's history and stats (KV and key stay). */
export const forgetCommand: Command = {
  name: 'forget',
  usage: 'forget confirm',
  description: 'erase your status and listening history, play counts and stats (your KV and key stay)',
  where: 'anywhere',
  async run({ message, args, history, prefix, reply }) {
    if (args.trim().toLowerCase() !== 'confirm') {
      await reply(
        `This erases your status history, listening history, play counts and stats for good. Your KV and API key stay. Send \`${prefix}forget confirm\` to go ahead.`,
      );
      return;
    }
    const erased = await history.forget(message.author.id);
    await reply(
      `Done: erased ${erased.statusEntries} status entries, ${erased.trackEntries} tracks and ${erased.playCounts} play counts, and reset your stats. Your KV and API key are untouched.`,
    );
  },
};
