import type { GatewayActivity } from 'discord-api-types/v10';
import { spotifyActivity } from '../../src/simulator/activities.js';

/** Spotify playing `song`, its own track, from `start`: each song a play of its own. */
export function playingOnSpotify(song: string, start = Date.now()): GatewayActivity {
  return spotifyActivity({
    song,
    artists: ['A'],
    album: 'B',
    imageId: 'ab67',
    trackId: song,
    start,
    end: start + 200_000,
  });
}
