import type { GatewayMessageCreateDispatchData } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { apiKeysIn } from '../keys/api-key.js';
import { type ApiKeyService, PENDING_KEY_MS } from '../keys/service.js';
import type { Messenger } from './messenger.js';

/**
 * A live key seen in any message the bot can read is as good as public: it stops working at once, and the
 * owner is DMed a new one, which works from before the DM is sent and is kept only once Discord took it. When the DM fails, the owner is
 * told in the channel where the key appeared, without any key, and is left with none until they ask.
 * Returns whether the message held a live key.
 */
export async function rotateLeakedKeys(
  message: GatewayMessageCreateDispatchData,
  deps: { keys: ApiKeyService; messenger: Messenger; logger: Logger; prefix: string },
): Promise<boolean> {
  const { keys, messenger, logger, prefix } = deps;
  let leaked = false;
  for (const key of apiKeysIn(message.content)) {
    const owner = await keys.ownerOf(key);
    if (owner === undefined) continue;
    leaked = true;
    await keys.revoke(key);
    const where = message.guild_id ? 'in a server channel' : 'in a message';
    const handover = await keys.handOver(owner, (fresh) =>
      messenger.dm(
        owner,
        [
          `Your Presently API key appeared ${where}, so I replaced it: the old key no longer works.`,
          'Your new key:',
          `\`${fresh}\``,
          `Keep it out of chats and public code. Send \`${prefix}apikey\` any time to replace it again.`,
        ].join('\n'),
      ),
    );
    logger.info(
      { owner, channelId: message.channel_id, guildId: message.guild_id ?? null, newKey: handover.outcome },
      'a live API key appeared in a message; revoked it',
    );
    if (handover.outcome === 'not-stored') {
      logger.error({ err: handover.error, owner }, 'could not store the key replacing a leaked one');
      await messenger.dm(
        owner,
        `Your Presently API key appeared ${where}, so I revoked it: it no longer works. I could not save a new one; send \`${prefix}apikey\` in a moment for a new key.`,
      );
      continue;
    }
    const { sent } = handover;
    if (!sent.accepted) {
      await messenger.reply(
        message.channel_id,
        message.id,
        [
          `<@${owner}>, your Presently API key appeared here, so I revoked it: it no longer works.`,
          `I could not DM you a new one: ${sent.reason}.`,
          `Allow direct messages from me, then send me \`${prefix}apikey\` in a DM to get a new key.`,
        ].join('\n'),
      );
    } else if (handover.outcome === 'not-activated') {
      logger.error({ err: handover.error, owner }, 'could not activate the key replacing a leaked one');
      await messenger.dm(
        owner,
        `The key above is not active: I could not save it, and it stops working within ${PENDING_KEY_MS / 60_000} minutes if it works at all. Your old key is revoked all the same; send \`${prefix}apikey\` in a moment for a new one.`,
      );
    }
  }
  return leaked;
}
