import type { GatewayMessageCreateDispatchData } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { apiKeysIn } from '../keys/api-key.js';
import type { ApiKeyService } from '../keys/service.js';
import type { Messenger } from './messenger.js';

/**
 * A live key seen in any message the bot can read is as good as public: replace it and DM the owner the
 * new one. Returns whether the message held a live key.
 */
export async function rotateLeakedKeys(
  message: GatewayMessageCreateDispatchData,
  deps: { keys: ApiKeyService; messenger: Messenger; logger: Logger; prefix: string },
): Promise<boolean> {
  let leaked = false;
  for (const key of apiKeysIn(message.content)) {
    const owner = await deps.keys.ownerOf(key);
    if (owner === undefined) continue;
    leaked = true;
    const fresh = await deps.keys.issue(owner);
    deps.logger.info(
      { owner, channelId: message.channel_id, guildId: message.guild_id ?? null },
      'a live API key appeared in a message; replaced it',
    );
    const where = message.guild_id ? 'in a server channel' : 'in a message';
    await deps.messenger.dm(
      owner,
      [
        `Your Presently API key appeared ${where}, so I replaced it: the old key no longer works.`,
        'Your new key:',
        `\`${fresh}\``,
        `Keep it out of chats and public code. Send \`${deps.prefix}apikey\` any time to replace it again.`,
      ].join('\n'),
    );
  }
  return leaked;
}
