import type { DiscordSimulator } from '../../src/simulator/index.js';

const API_KEY = /prs_[A-Za-z0-9_-]{43}/;

/** An API key the way a member gets one: `?apikey` in a DM to the bot, through the simulated Discord. */
export async function obtainKey(simulator: DiscordSimulator, userId: string): Promise<string> {
  const dm = simulator.dmChannelFor(userId);
  const sent = simulator.sendMessage({ channelId: dm, author: userId, content: '?apikey' });
  const reply = await simulator.waitForMessage(
    (message) => message.channel_id === dm && message.message_reference?.message_id === sent.id,
  );
  const key = reply.content.match(API_KEY)?.[0];
  if (!key) throw new Error('the bot answered ?apikey without a key');
  return key;
}
