import type { Command } from './command.js';

/** `?apikey`: a new key, by DM only; the previous key stops working at once. */
export const apikeyCommand: Command = {
  name: 'apikey',
  usage: 'apikey',
  description: 'get a new API key (your previous key stops working at once)',
  where: 'dm',
  async run({ message, keys, reply, prefix }) {
    const key = await keys.issue(message.author.id);
    await reply(
      [
        'Here is your Presently API key:',
        `\`${key}\``,
        'Send it in the `Authorization` header to write your KV, e.g.',
        `\`curl -X PUT -H "Authorization: ${key}" --data "hello" <host>/v1/users/@me/kv/greeting\``,
        `Keep it secret: anyone who has it can change your KV. Any earlier key no longer works; send \`${prefix}apikey\` again to replace this one.`,
      ].join('\n'),
    );
  },
};
