import { expect } from 'vitest';
import { customStatusActivity, gameActivity, spotifyActivity } from '../../src/simulator/activities.js';
import { insertApiKey } from '../support/api-key.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * The users the agent endpoint's tests ask about, each set up through REST as its user would: one who
 * allowed agents and hides a game and their KV, one who did not allow them, one who allowed them but is
 * private, and an id nobody monitors.
 */

const GUILD = '520000000000000001';
/** Allowed agents; hides games (one is playing) and their KV; has played a track twice. */
export const NOVA = '520000000000000101';
/** Public, agents not allowed (the default). */
export const KAI = '520000000000000102';
/** Allowed agents, but private. */
export const MIRA = '520000000000000103';
export const UNKNOWN = '520000000000000199';
export const SECRET_GAME = 'Hidden-Game-Zebra';
export const SECRET_KV = 'kv-value-nobody-should-read';
export const TRACK_SONG = 'Midnight City';
const GAME_APP = '512035578624524288';
const TRACK = {
  song: TRACK_SONG,
  artists: ['M83'],
  album: "Hurry Up, We're Dreaming",
  imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
  trackId: '1eyzqe2QqGZUmfcPZtrIyt',
  userId: NOVA,
};

/**
 * `data` of a REST read, to compare with what agents are answered: `last_seen` of a user online is the
 * moment of the read, so only its type is compared.
 */
export async function restData(base: string, path: string): Promise<unknown> {
  const response = await fetch(`${base}${path}`);
  expect(response.status, path).toBe(200);
  const { data } = (await response.json()) as { data: unknown };
  return path.endsWith('/stats') ? { ...(data as object), last_seen: expect.any(Number) } : data;
}

async function setPrivacy(base: string, key: string, settings: object): Promise<void> {
  const response = await fetch(`${base}/v1/users/@me/privacy`, {
    method: 'PATCH',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  });
  expect(response.status).toBe(200);
}

/** A harness (with `env`) whose users are set up as above, once NOVA's two plays count. */
export async function startAgentHarness(env: Record<string, string> = {}): Promise<Harness> {
  const now = Date.now();
  const harness = await startHarness({
    env,
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Agents',
        members: [
          {
            user: { id: NOVA, username: 'nova', global_name: 'Nova', avatar: null },
            presence: {
              status: 'online',
              activities: [
                customStatusActivity({ text: 'on repeat', createdAt: now }),
                gameActivity({ name: SECRET_GAME, applicationId: GAME_APP, start: now - 1_000 }),
                // A play that has ended, so the same track starting again is a second play.
                spotifyActivity({ ...TRACK, start: now - 60_000, end: now - 20_000 }),
              ],
            },
          },
          { user: { id: KAI, username: 'kai' }, presence: { status: 'idle' } },
          { user: { id: MIRA, username: 'mira' }, presence: { status: 'dnd' } },
        ],
      }),
  });
  await eventually(() => expect(harness.app.view.get(MIRA)).toBeDefined());
  const [novaKey, miraKey] = await Promise.all([
    insertApiKey(harness.app.store, NOVA),
    insertApiKey(harness.app.store, MIRA),
  ]);
  const kv = await fetch(`${harness.base}/v1/users/@me/kv/secret`, {
    method: 'PUT',
    headers: { authorization: novaKey },
    body: SECRET_KV,
  });
  expect(kv.status).toBe(204);
  await setPrivacy(harness.base, novaKey, {
    allow_agents: true,
    hide_activity_types: ['playing'],
    hide_kv: true,
  });
  await setPrivacy(harness.base, miraKey, { allow_agents: true, visibility: 'private' });
  harness.simulator.setPresence(NOVA, {
    status: 'online',
    activities: [
      gameActivity({ name: SECRET_GAME, applicationId: GAME_APP, start: now - 1_000 }),
      spotifyActivity({ ...TRACK, start: Date.now() - 1_000, end: Date.now() + 200_000 }),
    ],
  });
  await eventually(async () => {
    const { top_tracks } = (await restData(harness.base, `/v1/users/${NOVA}/top-tracks`)) as {
      top_tracks: unknown[];
    };
    expect(top_tracks).toHaveLength(1);
  });
  return harness;
}
