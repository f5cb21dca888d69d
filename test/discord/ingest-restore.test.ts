import { GatewayDispatchEvents, type GatewayDispatchPayload } from 'discord-api-types/v10';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { GatewayIngest } from '../../src/discord/ingest.js';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { type PresenceChange, PresenceRegistry } from '../../src/presence/registry/registry.js';

/**
 * A process taking back a snapshot made a turn at a time resumes from the sessions' sequence numbers of
 * the snapshot's start: the replay then holds events some users' saved presences hold already. Those are
 * not applied to them again, so nobody flips back through an older presence on the way.
 */

const GUILD = '100000000000000001';
const USER = { id: '80351110224678912', username: 'user' };
const OTHER = { id: '80351110224678913', username: 'other' };

const presence = (user: { id: string }, status: string, s: number): GatewayDispatchPayload =>
  ({
    op: 0,
    s,
    t: GatewayDispatchEvents.PresenceUpdate,
    d: { user, guild_id: GUILD, status, activities: [], client_status: { desktop: status } },
  }) as unknown as GatewayDispatchPayload;

function restored() {
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
  });
  const ingest = new GatewayIngest({ registry, requestMembers: () => {}, logger: pino({ level: 'silent' }) });
  // Saved at sequence 10; the user's line was made after event 12 (their presence then: dnd).
  const saved = (user: { id: string }, status: string) => ({
    userId: user.id,
    guildIds: [GUILD],
    stale: false,
    text: JSON.stringify([1, user, { status, activities: [], client_status: { desktop: status } }]),
  });
  registry.restore(saved(USER, 'dnd'));
  registry.restore(saved(OTHER, 'online'));
  ingest.restore([0], [[GUILD, 0]], new Map([[0, new Map([[USER.id, 12]])]]));
  registry.get(USER.id);
  registry.get(OTHER.id);
  const changes: PresenceChange[] = [];
  registry.onChange((change) => changes.push(change));
  const status = (id: string) => registry.get(id)?.summary().discord_status;
  return { ingest, changes, status };
}

describe('the replay of a session resumed after a restart', () => {
  it('skips what a user’s saved presence holds already, and applies the rest', () => {
    const { ingest, changes, status } = restored();
    // Replayed: 11 (idle) and 12 (dnd) are in the user's line; 13 is not.
    ingest.handle(presence(USER, 'idle', 11), 0);
    ingest.handle(presence(USER, 'dnd', 12), 0);
    expect(changes).toEqual([]);
    expect(status(USER.id)).toBe('dnd');
    // Another user's line was made before 11: theirs is applied.
    ingest.handle(presence(OTHER, 'idle', 11), 0);
    expect(status(OTHER.id)).toBe('idle');
    ingest.handle(presence(USER, 'online', 13), 0);
    expect(status(USER.id)).toBe('online');
    expect(changes.map((change) => change.userId)).toEqual([OTHER.id, USER.id]);
  });

  it('skips nothing once resumed, nor on a session of its own', () => {
    const resumed = restored();
    resumed.ingest.handle(
      { op: 0, s: 14, t: GatewayDispatchEvents.Resumed, d: {} } as unknown as GatewayDispatchPayload,
      0,
    );
    resumed.ingest.handle(presence(USER, 'idle', 12), 0);
    expect(resumed.status(USER.id)).toBe('idle');

    const identified = restored();
    identified.ingest.handle(
      {
        op: 0,
        s: 1,
        t: GatewayDispatchEvents.Ready,
        d: {
          v: 10,
          user: USER,
          guilds: [{ id: GUILD, unavailable: true }],
          session_id: 'x',
          resume_gateway_url: 'ws://x',
          application: { id: '1', flags: 0 },
        },
      } as unknown as GatewayDispatchPayload,
      0,
    );
    identified.ingest.handle(presence(USER, 'idle', 2), 0);
    expect(identified.status(USER.id)).toBe('idle');
  });
});
