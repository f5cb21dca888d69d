import type { Command } from './command.js';

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
