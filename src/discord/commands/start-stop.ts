import type { Command } from './command.js';
import { whatWent } from './forget.js';

/** `?start`: on an instance that monitors only those who ask, asks to be monitored. */
export const startCommand: Command = {
  name: 'start',
  usage: 'start',
  description: 'be monitored, on an instance that monitors only those who ask',
  where: 'anywhere',
  async run({ message, privacy, monitor, prefix, reply }) {
    if (monitor === 'all') {
      await reply(
        `This instance shows everyone in the servers it is in: there is nothing to start. Send \`${prefix}privacy\` in a DM to choose what the world sees of you.`,
      );
      return;
    }
    const settings = await privacy.settings(message.author.id);
    if (!settings.opted_in) await privacy.change(message.author.id, { opted_in: true });
    await reply(
      `${settings.opted_in ? 'You were monitored already.' : 'Done: you are monitored from now on'} in the servers I share with you. Send \`${prefix}privacy\` in a DM to choose what the world sees of you, and \`${prefix}stop\` to stop.`,
    );
  },
};

/**
 * `?stop` explains; `?stop confirm`, on an instance that monitors only those who ask, stops monitoring the
 * sender and erases everything kept about them (their settings, which said they asked, included).
 */
export const stopCommand: Command = {
  name: 'stop',
  usage: 'stop confirm',
  description:
    'stop being monitored, on an instance that monitors only those who ask, and erase what is kept',
  // What it erased is said in the answer: in a DM, to nobody else.
  where: 'dm',
  async run({ message, args, account, monitor, prefix, reply }) {
    if (monitor === 'all') {
      await reply(
        `This instance shows everyone in the servers it is in: leave them to stop. Meanwhile \`${prefix}privacy private\` shows you to nobody but yourself, \`${prefix}privacy pause\` shows you offline, and \`${prefix}forget all confirm\` erases everything kept about you.`,
      );
      return;
    }
    if (args.trim().toLowerCase() !== 'confirm') {
      await reply(
        `This stops showing your presence and erases everything Presently keeps about you, for good: KV, API key, webhooks, privacy settings and history. Send \`${prefix}stop confirm\` to go ahead; \`${prefix}start\` brings you back, with nothing kept from before.`,
      );
      return;
    }
    const erased = await account.erase(message.author.id);
    await reply(
      `Done: you are no longer monitored (unless a server gives you the role that opts members in), and I erased ${whatWent(erased)}.`,
    );
  },
};
