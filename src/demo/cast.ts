import { NameplatePalette } from 'discord-api-types/v10';
import type { Profile, Snowflake } from '../presence/model.js';
import type { PrivacyPatch } from '../presence/privacy.js';

/**
 * Who the demo shows: its users as Discord describes them, the servers they share with the bot, and the
 * profiles Discord answers for them. What each does over time is the script's.
 */

const DEMO_GUILD = '1100000000000000001';
/** Nova, Kai and Ada share a second server, so the demo shows per-guild copies becoming one presence. */
const DEMO_SECOND_GUILD = '1100000000000000002';

export const DEMO_USERS = {
  nova: {
    id: '94490510688792576',
    username: 'nova',
    global_name: 'Nova',
    avatar: '3c9f1e2b7a8d4e6f9a0b1c2d3e4f5a6b',
    avatar_decoration_data: {
      asset: 'a_6e1f0c2d3b4a59687f8e9d0c1b2a3f4e',
      sku_id: '1144058844004233369',
      expires_at: null,
    },
  },
  kai: {
    id: '218486934151479296',
    username: 'kai.dev',
    global_name: 'Kai',
    avatar: 'a_5b8e0c1d2f3a4b5c6d7e8f9a0b1c2d3e',
  },
  mira: {
    id: '381456437152087040',
    username: 'mira',
    global_name: 'Mira',
    avatar: null,
    // The demo server's tag, which Mira wears.
    primary_guild: {
      identity_guild_id: DEMO_GUILD,
      identity_enabled: true,
      tag: 'PRES',
      badge: '7c4e2a9d1b3f5e6a8c0d2f4b6a8e0c1d',
    },
    // A nameplate and a styled display name, passed through as Discord sends them.
    collectibles: {
      nameplate: {
        sku_id: '1349486948942745691',
        asset: 'nameplates/nameplates/twilight/',
        label: '',
        palette: NameplatePalette.Cobalt,
      },
    },
    display_name_styles: { font_id: 11, effect_id: 2, colors: [0x5865f2, 0xeb459e] },
  },
  juno: {
    id: '725054734427766827',
    username: 'juno_',
    global_name: 'Juno',
    avatar: '9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a',
  },
  ada: {
    id: '533331104316391424',
    username: 'ada.wav',
    global_name: 'Ada',
    avatar: '1f2e3d4c5b6a79880f1e2d3c4b5a6978',
    // The Listening Club's tag; Discord often leaves identity_enabled null.
    primary_guild: {
      identity_guild_id: DEMO_SECOND_GUILD,
      identity_enabled: null,
      tag: 'LSTN',
      badge: '2b4d6f8a0c1e3a5c7e9b1d3f5a7c9e0b',
    },
  },
  rio: {
    id: '612003440101048331',
    username: 'rio_live',
    global_name: 'Rio',
    avatar: 'a_8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b',
  },
  sol: {
    id: '689411255036837898',
    username: 'sol',
    global_name: 'Sol',
    avatar: null,
  },
  theo: {
    id: '806229180441968670',
    username: 'theo_plays',
    global_name: 'Theo',
    avatar: '4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d',
  },
} as const;

/** The user the landing page opens on, whose API key the demo prints and whose KV it fills in. */
export const DEMO_FEATURED_USER = DEMO_USERS.nova;

/** The servers the demo users share with the bot, and who is in each. */
export const DEMO_GUILDS = [
  { id: DEMO_GUILD, name: 'Presently Demo', members: Object.values(DEMO_USERS) },
  {
    id: DEMO_SECOND_GUILD,
    name: 'Listening Club',
    members: [DEMO_USERS.nova, DEMO_USERS.kai, DEMO_USERS.ada],
  },
] as const;

/**
 * Privacy settings the demo users start with: Juno's presence hides something; most let AI agents read
 * them, so the agent endpoint can be tried, and Rio and Sol do not, so its answer to that can be too.
 */
export const DEMO_PRIVACY: ReadonlyMap<Snowflake, PrivacyPatch> = new Map([
  [DEMO_USERS.nova.id, { allow_agents: true }],
  [DEMO_USERS.kai.id, { allow_agents: true }],
  [DEMO_USERS.mira.id, { allow_agents: true }],
  [DEMO_USERS.juno.id, { hide_platforms: true, show_last_seen: false, allow_agents: true }],
  [DEMO_USERS.ada.id, { allow_agents: true }],
  [DEMO_USERS.theo.id, { allow_agents: true }],
]);

/** The banners and accent colours Discord's `GET /users/:id` answers with. */
export const DEMO_PROFILES: ReadonlyMap<Snowflake, Partial<Profile>> = new Map([
  [DEMO_USERS.nova.id, { banner: 'a_6f2d8c1e0b9a4f3e2d1c0b9a8f7e6d5c', accent_color: 0x5865f2 }],
  [DEMO_USERS.kai.id, { banner: '0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f', accent_color: 0xff0033 }],
  [DEMO_USERS.mira.id, { banner: null, accent_color: 0x2ecc71 }],
]);
