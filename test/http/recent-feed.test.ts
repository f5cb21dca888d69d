import { describe, expect, it } from 'vitest';
import { recentFeed } from '../../src/http/recent-feed.js';
import type { TrackEntry } from '../../src/model/history.js';

/** The RSS feed of `/recent?format=rss`: what Discord lets a user name a track cannot break out of it. */

const TS = Date.UTC(2026, 11, 7, 12);

const entry = (song: string | null, artist: string | null, extra: Partial<TrackEntry> = {}): TrackEntry => ({
  source: 'spotify',
  song,
  artist,
  album: 'Album',
  album_art_url: null,
  track_id: 't',
  track_url: 'https://open.spotify.com/track/t?a=1&b=2',
  timestamps: { start: TS, end: TS + 1 },
  duration_ms: 1,
  ts: TS,
  ...extra,
});

describe('the recently played feed', () => {
  it('escapes every text it carries, drops what XML cannot hold, and names each play once', () => {
    const xml = recentFeed(
      '80351110224678912',
      '<b>"Eve" & co</b>',
      [
        entry('</title><script>x</script>', "it's\u0000 me"),
        entry(null, null, { source: 'other', album: null, track_url: null, ts: TS - 1 }),
      ],
      'https://presently.example/?id=80351110224678912',
    );
    expect(xml).not.toContain('<script>');
    expect(xml).not.toContain('\u0000');
    expect(xml).toContain('<title>&lt;/title&gt;&lt;script&gt;x&lt;/script&gt; — it&#39;s me</title>');
    expect(xml).toContain('<title>&lt;b&gt;&quot;Eve&quot; &amp; co&lt;/b&gt;: recently played</title>');
    expect(xml).toContain('<link>https://open.spotify.com/track/t?a=1&amp;b=2</link>');
    expect(xml).toContain('<title>Unknown track</title><description>Played on Music</description>');
    expect(xml.match(/<guid isPermaLink="false">80351110224678912-\d+<\/guid>/g)).toHaveLength(2);
  });

  it('names the user by id when their name is not known', () => {
    expect(recentFeed('80351110224678912', null, [], 'https://x.example/')).toContain(
      '<title>80351110224678912: recently played</title>',
    );
  });
});
