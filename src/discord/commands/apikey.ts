import { PENDING_KEY_MS } from '../../keys/service.js';
import type { Command } from './command.js';

/**
 * `?apikey`: a new key, by DM only. The key works, beside the previous one, from before it is sent, and
 * replaces the previous one only once Discord took the message: a key that never arrived must not leave
 * the user without the one they have.
 */
export const apikeyCommand: Command = {
  name: 'apikey',
  usage: 'apikey',
  description: 'get a new API key (your previous key stops working at once)',
  where: 'dm',
  async run({ message, keys, reply, prefix, monitor, privacy }) {
    // Holding a key is asking to be monitored: the key is for one's own presence.
    if (monitor === 'opt-in' && !(await privacy.settings(message.author.id)).opted_in) {
      await privacy.change(message.author.id, { opted_in: true });
    }
    const handover = await keys.handOver(message.author.id, (key) =>
      reply(
        [
          'Here is your Presently API key:',
          `\`${key}\``,
          'Send it in the `Authorization` header to write your KV, e.g.',
          `\`curl -X PUT -H "Authorization: ${key}" --data "hello" <host>/v1/users/@me/kv/greeting\``,
          `Keep it secret: anyone who has it can change your KV. Any earlier key no longer works; send \`${prefix}apikey\` again to replace this one.`,
        ].join('\n'),
      ),
    );
    if (handover.outcome === 'not-stored') {
      await reply(
        `I could not make you a new API key: I could not save it. Your previous key still works. Send \`${prefix}apikey\` again in a moment.`,
      );
      // Logged where every failed command is.
      throw handover.error;
    }
    const { sent } = handover;
    if (!sent.accepted) {
      await reply(
        `I could not send you a new API key: ${sent.reason}. Your previous key still works. Send \`${prefix}apikey\` to try again.`,
      );
    }
    if (handover.outcome === 'not-activated') {
      await reply(
        `The key above is not active: I could not save it, and it stops working within ${PENDING_KEY_MS / 60_000} minutes if it works at all. Your previous key still works. Send \`${prefix}apikey\` again in a moment.`,
      );
      throw handover.error;
    }
  },
};
