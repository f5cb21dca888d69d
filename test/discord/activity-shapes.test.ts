import { ActivityFlags, ActivityType, type GatewayActivity, StatusDisplayType } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  appleMusicActivity,
  attachmentKey,
  premidBrowsingActivity,
  premidYouTubeMusicActivity,
  richPresenceActivity,
  streamingActivity,
  youtubeMusicActivity,
} from '../../src/simulator/activities.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * The activity shapes found in the wild, sent by the simulated Discord the way Discord sends them (as
 * PRESENCE_UPDATEs, and in a guild's listing), taken in by the real app and served back over HTTP: each is
 * served with what it carried, and nothing answers 5xx or stops the service. Which music `now_playing`
 * names is the presence rules' business, tested with them.
 */

const GUILD = '600000000000000001';
const LISTED_GUILD = '600000000000000002';
const USER = '600000000000000101';
const LISTED = '600000000000000102';
const START = Date.now() - 30_000;
const LUMEN_DRIFT_ID = 1087212339117940700;
const END = START + 200_000;

const STREAMS = [
  streamingActivity({ service: 'twitch', channel: 'rio_live', title: 'PB attempts', game: 'Celeste' }),
  streamingActivity({ service: 'youtube', channel: 'jfKfPfyJRdk', title: 'lofi radio' }),
  richPresenceActivity({ type: ActivityType.Watching, name: 'Crunchyroll', details: 'Frieren' }),
  richPresenceActivity({ type: ActivityType.Competing, name: 'Rocket League', state: 'Champion II' }),
];

const ATTACHMENT_IMAGE = attachmentKey({
  channelId: '1100000000000000101',
  messageId: '1100000000000000102',
  file: 'sector-7.png',
  expiresAt: END,
});

/** A game whose library sends a numeric application id, microseconds, no id, and every optional field. */
const LUMEN_DRIFT = richPresenceActivity({
  type: ActivityType.Playing,
  name: 'Lumen Drift',
  // A JSON number: past 2^53 only what a double holds of the id arrives.
  applicationId: LUMEN_DRIFT_ID,
  details: 'Sector 7',
  detailsUrl: 'https://lumendrift.example/sectors/7',
  state: 'In a squad',
  stateUrl: 'https://lumendrift.example/squads/4411',
  statusDisplayType: StatusDisplayType.State,
  start: START,
  end: END,
  microsecondTimestamps: true,
  largeImage: ATTACHMENT_IMAGE,
  largeText: 'Sector 7',
  smallImage: null,
  smallText: 'Level 12',
  buttons: [
    { label: 'Join the squad', url: 'https://lumendrift.example/join/4411' },
    { label: 'Website', url: 'https://lumendrift.example/' },
  ],
  party: { id: 'squad-4411', size: [3, 4] },
  secrets: { join: 'c3F1YWQtNDQxMQ' },
  flags: ActivityFlags.Instance | ActivityFlags.Join,
  platform: 'desktop',
  sessionId: '5f0e1d2c3b4a69788796a5b4c3d2e1f0',
  bare: true,
});

const PREMID_LISTENING = premidYouTubeMusicActivity({
  title: 'Genesis',
  artist: 'Grimes',
  album: 'Visions',
  videoId: '1RKqOmSkGgM',
  imageUrl: 'https://lh3.googleusercontent.com/genesis=w544-h544-l90-rj',
  start: START,
  end: END,
});

const APPLE_MUSIC = appleMusicActivity({
  title: 'Everything In Its Right Place',
  artist: 'Radiohead',
  album: 'Kid A',
  artworkUrl: 'https://is1-ssl.mzstatic.com/image/thumb/Music115/v4/4e/2c/6e/kid-a.png/600x600bb.jpg',
  albumSlug: 'kid-a',
  albumId: '1097861387',
  trackId: '1097861389',
  start: START,
  end: END,
});

/** A music app nobody knows, with an https URL for an image key. */
const FOOBAR_RADIO = richPresenceActivity({
  type: ActivityType.Listening,
  name: 'Foobar Radio',
  applicationId: '1200000000000000001',
  details: 'Night Drive',
  state: 'Cassette Hours',
  largeText: 'Late Shift FM',
  largeImage: 'https://foobar-radio.example/covers/late-shift.png',
  start: START,
  end: END,
});

type Json = Record<string, unknown>;

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({
    setup: (sim) =>
      sim.createGuild({
        id: GUILD,
        name: 'Shapes',
        members: [{ user: { id: USER, username: 'shapes' }, presence: { status: 'online' } }],
      }),
  });
  await eventually(() => expect(harness.app.registry.isMonitored(USER)).toBe(true));
});

afterAll(async () => {
  await harness?.close();
});

/** The user's activities as the API serves them, once they are these, by name and in order. */
async function activitiesOf(userId: string, names: readonly string[]): Promise<Json[]> {
  return eventually(async () => {
    const response = await fetch(`${harness.base}/v1/users/${userId}`);
    expect(response.status).toBe(200);
    const { data } = (await response.json()) as { data: { activities: Json[] } };
    expect(data.activities.map((activity) => activity.name)).toEqual(names);
    return data.activities;
  });
}

/** Sends the activities as a PRESENCE_UPDATE; resolves with what the API serves once it shows them. */
function served(activities: GatewayActivity[]): Promise<Json[]> {
  harness.simulator.setPresence(USER, { status: 'online', activities });
  return activitiesOf(
    USER,
    activities.map((activity) => activity.name),
  );
}

describe('activity shapes from the wild, through the real gateway client and HTTP', () => {
  it('Streaming with a Twitch or YouTube URL, Watching and Competing', async () => {
    const [twitch, youtube, watching, competing] = await served(STREAMS);
    expect(twitch).toMatchObject({
      type: 1,
      name: 'Twitch',
      url: 'https://www.twitch.tv/rio_live',
      details: 'PB attempts',
      state: 'Celeste',
      assets: { large_image: 'twitch:rio_live' },
    });
    expect(youtube).toMatchObject({ type: 1, url: 'https://www.youtube.com/watch?v=jfKfPfyJRdk' });
    expect(watching).toMatchObject({ type: 3, name: 'Crunchyroll', details: 'Frieren' });
    expect(competing).toMatchObject({ type: 5, name: 'Rocket League', state: 'Champion II' });
  });

  it('a game that sends a numeric application id, microseconds, no id, and every optional field', async () => {
    const [game] = await served([LUMEN_DRIFT]);
    expect(ATTACHMENT_IMAGE).toMatch(
      /^mp:attachments\/1100000000000000101\/1100000000000000102\/sector-7\.png\?ex=[0-9a-f]+&is=[0-9a-f]+&hm=[0-9a-f]{64}&$/,
    );
    expect(game).toMatchObject({
      type: 0,
      application_id: expect.stringMatching(/^\d+$/),
      details: 'Sector 7',
      details_url: 'https://lumendrift.example/sectors/7',
      state: 'In a squad',
      state_url: 'https://lumendrift.example/squads/4411',
      status_display_type: 1,
      assets: {
        large_image: ATTACHMENT_IMAGE,
        large_text: 'Sector 7',
        small_image: null,
        small_text: 'Level 12',
      },
      buttons: ['Join the squad', 'Website'],
      metadata: { button_urls: ['https://lumendrift.example/join/4411', 'https://lumendrift.example/'] },
      party: { id: 'squad-4411', size: [3, 4] },
      secrets: { join: 'c3F1YWQtNDQxMQ' },
      flags: 3,
      platform: 'desktop',
      session_id: '5f0e1d2c3b4a69788796a5b4c3d2e1f0',
    });
    expect(Number(game?.application_id)).toBe(LUMEN_DRIFT_ID);
    // Sent in microseconds, served in milliseconds.
    expect(game?.timestamps).toEqual({ start: START, end: END });
  });

  it('YouTube Music through PreMiD (with and without an album, and browsing) beside Pear Desktop paused', async () => {
    const [listening, browsing, paused] = await served([
      PREMID_LISTENING,
      premidBrowsingActivity({ details: 'Browsing Home' }),
      youtubeMusicActivity({
        title: 'Nightcall',
        artist: 'Kavinsky',
        album: 'OutRun',
        videoId: 'MV_3Dpw-BRY',
        imageUrl: 'https://i.ytimg.com/vi/MV_3Dpw-BRY/hqdefault.jpg',
        paused: true,
      }),
    ]);
    expect(listening).toMatchObject({
      type: 2,
      application_id: '463151177836658699',
      name: 'YouTube Music',
      details: 'Genesis',
      state: 'Grimes',
      details_url: 'https://music.youtube.com/watch?v=1RKqOmSkGgM',
      timestamps: { start: START, end: END },
      assets: {
        large_text: 'Visions',
        large_image: expect.stringMatching(
          /^mp:external\/[\w-]+\/https\/lh3\.googleusercontent\.com\/genesis=w544-h544-l90-rj$/,
        ),
      },
    });
    expect(browsing).toMatchObject({
      type: 0,
      name: 'YouTube Music',
      application_id: '463151177836658699',
      details: 'Browsing Home',
    });
    expect(browsing).not.toHaveProperty('timestamps');
    expect(paused).toMatchObject({
      type: 2,
      application_id: '1177081335727267940',
      assets: { large_text: '\u23F8\uFE0E' },
    });
    expect(paused).not.toHaveProperty('timestamps');

    const [untitled] = await served([
      premidYouTubeMusicActivity({
        title: 'Kids',
        artist: 'MGMT',
        album: null,
        videoId: 'fe4EK4HSPkI',
        imageUrl: 'https://i.ytimg.com/vi/fe4EK4HSPkI/hqdefault.jpg',
        start: START,
      }),
    ]);
    expect(untitled).toMatchObject({ details: 'Kids', assets: { large_text: 'PreMiD • v2.7.4' } });
  });

  it('Apple Music through Music Presence, and a music app nobody knows', async () => {
    const [apple, radio] = await served([APPLE_MUSIC, FOOBAR_RADIO]);
    expect(apple).toMatchObject({
      type: 2,
      name: 'Apple Music',
      application_id: '1247654840780460125',
      details: 'Everything In Its Right Place',
      state: 'Radiohead',
      details_url: 'https://music.apple.com/us/album/kid-a/1097861387?i=1097861389',
      status_display_type: 2,
      timestamps: { start: START, end: END },
      assets: {
        large_text: 'Kid A',
        large_image: expect.stringMatching(
          /^mp:external\/[\w-]+\/https\/is1-ssl\.mzstatic\.com\/image\/thumb\/.+\/600x600bb\.jpg$/,
        ),
      },
    });
    expect(radio).toMatchObject({
      type: 2,
      name: 'Foobar Radio',
      application_id: '1200000000000000001',
      details: 'Night Drive',
      state: 'Cassette Hours',
      timestamps: { start: START, end: END },
      assets: {
        large_text: 'Late Shift FM',
        large_image: 'https://foobar-radio.example/covers/late-shift.png',
      },
    });
  });

  it('all of them at once, in a guild listing: served, drawn on the card, and the service carries on', async () => {
    const everything = [...STREAMS, LUMEN_DRIFT, PREMID_LISTENING, APPLE_MUSIC, FOOBAR_RADIO];
    harness.simulator.createGuild({
      id: LISTED_GUILD,
      name: 'Listed',
      members: [
        { user: { id: LISTED, username: 'listed' }, presence: { status: 'dnd', activities: everything } },
      ],
    });
    const activities = await activitiesOf(
      LISTED,
      everything.map((activity) => activity.name),
    );
    for (const activity of activities) expect(typeof activity.application_id).not.toBe('number');
    for (const card of ['card.svg', 'card.png']) {
      const response = await fetch(`${harness.base}/v1/users/${LISTED}/${card}`);
      expect(response.status, card).toBe(200);
      await response.arrayBuffer();
    }
    expect(harness.fatal).toEqual([]);
  });
});
