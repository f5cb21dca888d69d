import type { APIMessage } from 'discord-api-types/v10';
import { expect } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/keys/api-key.js';
import type { DiscordSimulator } from '../../src/simulator/index.js';
import type { Store } from '../../src/store/ports.js';
import { eventually } from './eventually.js';

/** The whole of an API key: `prs_` and 43 base64url characters. */
export const API_KEY_SHAPE = /^prs_[A-Za-z0-9_-]{43}$/;

/** Every distinct key-shaped string in a text (independent of src's own finder, on purpose). */
export function keysIn(text: string): string[] {
  return [...new Set(text.match(/prs_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g) ?? [])];
}

/** The one key a bot message carries; fails the test when it carries none or several. */
export function keyFrom(message: APIMessage): string {
  const keys = keysIn(message.content);
  expect(keys, `one API key in ${JSON.stringify(message.content)}`).toHaveLength(1);
  const key = keys[0] as string;
  expect(key).toMatch(API_KEY_SHAPE);
  return key;
}

/**
 * A key the way a user gets one: `?apikey` in a DM to the bot, through the simulated Discord and the
 * real gateway client; resolves with the key from the bot's reply in that DM once `base` (the service's
 * URL, where it answers the API) takes it.
 */
export async function obtainApiKey(
  harness: { simulator: DiscordSimulator; base: string },
  userId: string,
): Promise<string> {
  const dm = harness.simulator.dmChannelFor(userId);
  const sent = harness.simulator.sendMessage({ channelId: dm, author: userId, content: '?apikey' });
  const reply = await harness.simulator.waitForMessage(
    (message) => message.channel_id === dm && message.message_reference?.message_id === sent.id,
  );
  const key = keyFrom(reply);
  await untilLive(harness.base, key);
  return key;
}

/** Resolves once the service at `base` takes the key (a key handed over goes live after its message). */
export async function untilLive(base: string, key: string): Promise<void> {
  await eventually(async () => {
    const response = await fetch(`${base}/v1/users/@me`, { headers: { authorization: key } });
    await response.arrayBuffer();
    expect(response.status).not.toBe(401);
  });
}

/** A live key put straight into the store (what the key service does, minus Discord): fast. */
export async function insertApiKey(store: Store, userId: string): Promise<string> {
  const key = generateApiKey();
  await store.apiKeys.replaceKey(userId, hashApiKey(key), Date.now());
  return key;
}
