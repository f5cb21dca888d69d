import { describe, expect, it } from 'vitest';
import { DEFAULT_YOUTUBE_MUSIC_MATCHER } from '../../src/presence/normalize/youtube-music.js';
import { type PresenceChange, PresenceRegistry } from '../../src/presence/registry/registry.js';
import { eventsOfChange } from '../../src/webhooks/events.js';

/** What a presence change sends to webhooks: a presence taken back after a restart is no change. */

const GUILD = '1';
const USER = { id: '80351110224678912', username: 'alice' };

function changes(): { registry: PresenceRegistry; seen: PresenceChange[] } {
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: DEFAULT_YOUTUBE_MUSIC_MATCHER,
  });
  const seen: PresenceChange[] = [];
  registry.onChange((change) => seen.push(change));
  return { registry, seen };
}

describe('webhook events of a change', () => {
  it('sends a presence for a user first seen, none for one taken back after a restart', () => {
    const every = () => true;
    const fresh = changes();
    fresh.registry.memberSeen(GUILD, USER, { status: 'online', activities: [], client_status: {} });
    expect(eventsOfChange(fresh.seen[0] as PresenceChange, every).map((event) => event.type)).toEqual([
      'presence',
    ]);

    const restored = changes();
    restored.registry.restore({
      userId: USER.id,
      guildIds: [GUILD],
      stale: false,
      text: JSON.stringify([
        Date.now() - 1_000,
        USER,
        { status: 'online', activities: [], client_status: {} },
      ]),
    });
    restored.registry.get(USER.id);
    expect(restored.seen).toMatchObject([{ kind: 'monitored', restored: true }]);
    expect(eventsOfChange(restored.seen[0] as PresenceChange, every)).toEqual([]);
  });
});
