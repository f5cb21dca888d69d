import { PENDING_KEY_MS } from '../../keys/service.js';
import type { Command, CommandContext } from './command.js';

/**
 * A new key, answered to the user alone (an ephemeral answer, or a DM). The key works, beside the previous
 * one, from before it is sent, and replaces the previous one only once Discord took the answer: a key that
 * never arrived must not leave the user without the one they have.
 */
async function handOverKey(context: CommandContext): Promise<void> {
  const { userId, keys, answer, monitor, privacy, spell } = context;
  // Holding a key is asking to be monitored: the key is for one's own presence.
  if (monitor === 'opt-in' && !(await privacy.settings(userId)).opted_in) {
    await privacy.change(userId, { opted_in: true });
  }
  const handover = await keys.handOver(userId, (key) =>
    answer(
      [
        'Here is your Presently API key:',
        `\`${key}\``,
        'Send it in the `Authorization` header to write your KV, e.g.',
        `\`curl -X PUT -H "Authorization: ${key}" --data "hello" ${context.publicUrl ?? '<host>'}/v1/users/@me/kv/greeting\``,
        `Keep it secret: anyone who has it can change your KV. Any earlier key no longer works; ${spell('rotate')} replaces this one.`,
      ].join('\n'),
    ),
  );
  if (handover.outcome === 'not-stored') {
    await answer(
      `I could not make you a new API key: I could not save it. Your previous key still works. Try ${spell('rotate')} again in a moment.`,
    );
    // Logged where every failed command is.
    throw handover.error;
  }
  const { sent } = handover;
  if (!sent.accepted) {
    await answer(
      `I could not send you a new API key: ${sent.reason}. Your previous key still works. Try ${spell('rotate')} again.`,
    );
  }
  if (handover.outcome === 'not-activated') {
    await answer(
      `The key above is not active: I could not save it, and it stops working within ${PENDING_KEY_MS / 60_000} minutes if it works at all. Your previous key still works. Try ${spell('rotate')} again in a moment.`,
    );
    throw handover.error;
  }
}

/** `/presently key`: a key for one who has none; one who has a key is told how to replace or end it. */
export const keyCommand: Command = {
  name: 'key',
  description: 'get an API key to write your KV (shown to you alone)',
  personal: true,
  async run(context) {
    const { key } = await context.accounts.details(context.userId);
    if (key === null) return handOverKey(context);
    const since = key.createdAt === null ? '' : ` since <t:${Math.floor(key.createdAt / 1000)}:f>`;
    return context.answer(
      `You have an API key${since}. I keep only a fingerprint of it, so I cannot show it again: ${context.spell('rotate')} gives you a new one (the old one stops working), ${context.spell('revoke')} ends it.`,
    );
  },
};

/** `/presently rotate`, `?apikey`: a new key; the previous one stops working. */
export const rotateCommand: Command = {
  name: 'rotate',
  description: 'get a new API key; your previous key stops working at once',
  personal: true,
  run: handOverKey,
};

/** `/presently revoke`: no key any more, and none in its place. */
export const revokeCommand: Command = {
  name: 'revoke',
  description: 'end your API key, with no new one',
  personal: true,
  async run({ userId, keys, answer, spell }) {
    const revoked = await keys.revokeAll(userId);
    return answer(
      revoked === 0
        ? `You have no API key. ${spell('key')} gets you one.`
        : `Done: your API key no longer works. ${spell('key')} gets you a new one.`,
    );
  },
};
