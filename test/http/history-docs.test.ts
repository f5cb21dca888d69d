import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  RECENT_DEFAULT_LIMIT,
  RECENT_MAX_LIMIT,
  TOP_TRACKS_DEFAULT_LIMIT,
  TOP_TRACKS_MAX_LIMIT,
} from '../../src/model/history.js';

const api = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');

/** The `limit`s of the history routes, as docs/api.md gives them, are the code's. */
describe('docs/api.md on the history routes', () => {
  it('gives the default and the bounds of each limit the code has', () => {
    expect(api).toContain(
      `\`top-tracks\`: \`{top_tracks: [now_playing + last_played + play_count]}\`, tracks played at least twice, most played first, then most recently played; \`limit\` defaults to ${TOP_TRACKS_DEFAULT_LIMIT} and is clamped to 1–${TOP_TRACKS_MAX_LIMIT}`,
    );
    expect(api).toContain(
      `\`limit\` defaults to ${RECENT_DEFAULT_LIMIT} and is clamped to 1–${RECENT_MAX_LIMIT}; a non-integer \`limit\` is \`400 invalid_query\`. \`format=rss\``,
    );
  });
});
