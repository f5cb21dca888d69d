import type { MusicSource } from '../model.js';

/** The music services whose players publish rich presence under applications of their own. */
export type AppSource = Exclude<MusicSource, 'spotify' | 'youtube_music' | 'other'>;

export const APP_SOURCES: readonly AppSource[] = [
  'apple_music',
  'tidal',
  'deezer',
  'soundcloud',
  'amazon_music',
];

/**
 * The applications popular players publish under, by service. Each id was read in the player's own
 * source or configuration (docs/music.md lists where); ids a player used before are kept, since old
 * versions stay installed.
 */
export const DEFAULT_MUSIC_APP_IDS: Readonly<Record<AppSource, readonly string[]>> = {
  apple_music: [
    '1247654840780460125', // Music Presence: Apple Music
    '1302023626018787379', // Music Presence: Cider
    '911790844204437504', // Cider 1 (named "Cider")
    '886578863147192350', // Cider 1 and 2 (named "Apple Music")
    '1020414178047041627', // Cider 2
    '842112189618978897', // PreMiD
    '621819308481445934', // PreMiD, earlier
    '773825528921849856', // apple-music-discord-rpc: Music
    '979297966739300416', // apple-music-discord-rpc: iTunes
    '1066220978406953012', // AMWin-RP
    '1239490006054207550', // Vencord AppleMusicRichPresence
  ],
  tidal: [
    '1246943204411179120', // Music Presence
    '901591802342150174', // PreMiD
    '707985888814039040', // PreMiD, earlier
    '793071505327652864', // PreMiD, earlier
    '833617820704440341', // TIDAL Hi-Fi
  ],
  deezer: [
    '1247654082215284847', // Music Presence
    '607651992567021580', // PreMiD
    '1258131430928547880', // deezer-discord-rpc
    '899229435130183690', // deezer-discord-rpc, earlier
  ],
  soundcloud: [
    '1285553804518887508', // Music Presence
    '802958833214423081', // PreMiD
    '607697998490894356', // PreMiD, earlier
    '1090770350251458592', // soundcloud-rpc
    '1054636117284106270', // BetterSoundCloud
  ],
  amazon_music: [
    '1247654006587789363', // Music Presence
    '808756700022702120', // PreMiD
    '619041735795802112', // PreMiD, earlier
    '1479925587697995857', // Amazon-Music-Discord-RPC
    '1545581759796617237', // amazon-music-rich-presence
  ],
};

/** Activity names (compared trimmed and lower-cased) of players we have no id for. */
export const DEFAULT_MUSIC_APP_NAMES: Readonly<Record<AppSource, readonly string[]>> = {
  apple_music: ['apple music', 'cider', 'itunes'],
  tidal: ['tidal', 'tidal hi-fi'],
  deezer: ['deezer'],
  soundcloud: ['soundcloud'],
  amazon_music: ['amazon music'],
};

/** Which service an activity's application or name belongs to. */
export interface MusicApps {
  byApplicationId: ReadonlyMap<string, AppSource>;
  byName: ReadonlyMap<string, AppSource>;
}

/** The table of every service's applications: `ids` replaces a service's defaults where it names it. */
export function musicApps(ids: Partial<Record<AppSource, readonly string[]>> = {}): MusicApps {
  const byApplicationId = new Map<string, AppSource>();
  const byName = new Map<string, AppSource>();
  for (const source of APP_SOURCES) {
    for (const id of ids[source] ?? DEFAULT_MUSIC_APP_IDS[source]) byApplicationId.set(id, source);
    for (const name of DEFAULT_MUSIC_APP_NAMES[source]) byName.set(name, source);
  }
  return { byApplicationId, byName };
}

export const DEFAULT_MUSIC_APPS: MusicApps = musicApps();

/** The configuration variable that replaces a service's application ids, e.g. `APPLE_MUSIC_APP_IDS`. */
export function appIdsVariable(source: AppSource): string {
  return `${source.toUpperCase()}_APP_IDS`;
}
