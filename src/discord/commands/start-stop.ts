import { type Command, flag } from './command.js';
import { whatWent } from './forget.js';

/** `start`: on an instance that monitors only those who ask, asks to be monitored. */
export const startCommand: Command = {
  name: 'start',
  description: 'be monitored, on an instance that monitors only those who ask',
  personal: false,
  async run({ userId, privacy, monitor, answer, spell }) {
    if (monitor === 'all') {
      return answer(
        `This instance shows everyone in the servers it is in: there is nothing to start. ${spell('privacy show')} lets you choose what the world sees of you.`,
      );
    }
    const settings = await privacy.settings(userId);
    if (!settings.opted_in) await privacy.change(userId, { opted_in: true });
    return answer(
      `${settings.opted_in ? 'You were monitored already.' : 'Done: you are monitored from now on'} in the servers I share with you. ${spell('privacy show')} lets you choose what the world sees of you, and ${spell('stop')} stops it.`,
    );
  },
};

/**
 * `stop` asks first; confirmed, on an instance that monitors only those who ask, it stops monitoring the
 * user and erases everything kept about them (their settings, which said they asked, included).
 */
export const stopCommand: Command = {
  name: 'stop',
  description: 'stop being monitored, on an instance that monitors only those who ask (asks first)',
  // What it erased is said in the answer.
  personal: true,
  async run({ userId, account, monitor, answer, spell }, options) {
    if (monitor === 'all') {
      return answer(
        `This instance shows everyone in the servers it is in: leave them to stop. Meanwhile ${spell('privacy set', { setting: 'visibility', value: 'private' })} shows you to nobody but yourself, ${spell('privacy pause')} shows you offline, and ${spell('forget', { all: true })} erases everything kept about you.`,
      );
    }
    if (!flag(options, 'confirm')) {
      return answer({
        content: `This stops showing your presence and erases everything Presently keeps about you, for good: KV, API key, webhooks, privacy settings and history. ${spell('start')} brings you back, with nothing kept from before.`,
        confirm: { label: 'Stop and erase', invocation: { name: 'stop', options: { confirm: true } } },
      });
    }
    const erased = await account.erase(userId);
    return answer(
      `Done: you are no longer monitored (unless a server gives you the role that opts members in), and I erased ${whatWent(erased)}.`,
    );
  },
};
