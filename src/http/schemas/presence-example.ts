/**
 * A presence as the service answers it (the demo's Nova, listening to Spotify), for the OpenAPI document.
 * A test validates it against the presence schema, so it cannot drift from the contract.
 */

const track = {
  track_id: '1eyzqe2QqGZUmfcPZtrIyt',
  timestamps: { start: 1763800000000, end: 1763800040000 },
  album: "Hurry Up, We're Dreaming",
  album_art_url: 'https://i.scdn.co/image/ab67616d0000b273fff2cb485c36a6d8f639bdba',
  artist: 'M83',
  song: 'Midnight City',
};

export const presenceExample = {
  discord_user: {
    id: '94490510688792576',
    username: 'nova',
    global_name: 'Nova',
    avatar: '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b',
    discriminator: '0',
    public_flags: 0,
    avatar_decoration_data: null,
    primary_guild: null,
  },
  discord_status: 'online',
  active_on_discord_desktop: true,
  active_on_discord_web: false,
  active_on_discord_mobile: true,
  active_on_discord_embedded: false,
  active_on_discord_vr: false,
  custom_status: { text: 'on repeat', emoji: { name: '🎧', id: null, animated: false } },
  listening_to_spotify: true,
  spotify: track,
  listening_to_youtube_music: false,
  youtube_music: null,
  listening_to_music: true,
  now_playing: {
    source: 'spotify',
    song: track.song,
    artist: track.artist,
    album: track.album,
    album_art_url: track.album_art_url,
    track_id: track.track_id,
    track_url: `https://open.spotify.com/track/${track.track_id}`,
    timestamps: track.timestamps,
    duration_ms: 40000,
  },
  activities: [
    {
      type: 4,
      name: 'Custom Status',
      state: 'on repeat',
      emoji: { name: '🎧' },
      id: 'custom',
      created_at: 1763799990000,
    },
    {
      type: 2,
      name: 'Spotify',
      id: 'spotify:1',
      flags: 48,
      details: track.song,
      state: track.artist,
      timestamps: track.timestamps,
      assets: {
        large_image: 'spotify:ab67616d0000b273fff2cb485c36a6d8f639bdba',
        large_text: track.album,
        large_image_url: track.album_art_url,
        small_image_url: null,
      },
      sync_id: track.track_id,
      session_id: 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
      party: { id: 'spotify:94490510688792576' },
      created_at: 1763800000000,
    },
  ],
  banner: 'a_6f2d8c1e0b9a4f3e2d1c0b9a8f7e6d5c',
  banner_url:
    'https://cdn.discordapp.com/banners/94490510688792576/a_6f2d8c1e0b9a4f3e2d1c0b9a8f7e6d5c.gif?size=1024',
  accent_color: 5793266,
  member_since: 1442598693297,
  observed_at: 1763800012000,
  stale: false,
  kv: { location: 'Lisbon' },
} as const;
