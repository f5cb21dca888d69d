import { setTimeout as sleep } from 'node:timers/promises';
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

/**
 * Until `url` serves every user's presence: the node that connects to Discord has its session, so its bot
 * hears a DM sent now (one sent before the session is lost, as on Discord).
 */
export async function untilServed(url: string, userIds: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let n = 0; n < userIds.length; ) {
    const answer = await fetch(`${url}/v1/users/${userIds[n]}`);
    await answer.arrayBuffer();
    if (answer.status === 200) n++;
    else if (Date.now() > deadline) throw new Error(`user ${userIds[n]} is not served (${answer.status})`);
    else await sleep(100);
  }
}
