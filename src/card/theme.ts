import type { DiscordStatus, MusicSource } from '../presence/model.js';

export type ThemeName = 'dark' | 'light';

/**
 * Colours of one theme. Panels and tracks are the text colour at low opacity rather than fixed colours,
 * so they sit right on any custom background.
 */
export interface Theme {
  background: string;
  text: string;
  muted: string;
  /** Overlay colour and opacity of the activity panel. */
  panel: string;
  panelOpacity: number;
  /** The progress bar's empty part. */
  trackOpacity: number;
  /** The card's 1px outline, so a light card still has an edge on a white page. */
  border: string;
  borderOpacity: number;
  /** Behind the server tag. */
  tag: string;
}

export const THEMES: Record<ThemeName, Theme> = {
  // Discord's own dark and light palettes.
  dark: {
    background: '#1e1f22',
    text: '#f2f3f5',
    muted: '#b5bac1',
    panel: '#ffffff',
    panelOpacity: 0.05,
    trackOpacity: 0.16,
    border: '#ffffff',
    borderOpacity: 0.08,
    tag: '#2b2d31',
  },
  light: {
    background: '#ffffff',
    text: '#060607',
    muted: '#4e5058',
    panel: '#000000',
    panelOpacity: 0.045,
    trackOpacity: 0.12,
    border: '#000000',
    borderOpacity: 0.12,
    tag: '#e3e5e8',
  },
};

/** Discord's status colours. */
export const STATUS_COLOURS: Record<DiscordStatus, string> = {
  online: '#23a55a',
  idle: '#f0b232',
  dnd: '#f23f43',
  offline: '#80848e',
};

export const STATUS_LABELS: Record<DiscordStatus, string> = {
  online: 'Online',
  idle: 'Idle',
  dnd: 'Do Not Disturb',
  offline: 'Offline',
};

/** Brand colours of the music sources: the equalizer, the progress bar, the artwork placeholder. */
export const SOURCE_COLOURS: Record<MusicSource, string> = {
  spotify: '#1db954',
  youtube_music: '#ff0033',
  apple_music: '#fa243c',
  tidal: '#33ffee',
  deezer: '#a238ff',
  soundcloud: '#ff5500',
  amazon_music: '#25d1da',
  other: '#5865f2',
};

export const SOURCE_LABELS: Record<MusicSource, string> = {
  spotify: 'Spotify',
  youtube_music: 'YouTube Music',
  apple_music: 'Apple Music',
  tidal: 'TIDAL',
  deezer: 'Deezer',
  soundcloud: 'SoundCloud',
  amazon_music: 'Amazon Music',
  other: 'Music',
};

/** Discord's blurple: the activity placeholder and the clock icon. */
export const ACCENT = '#5865f2';

/**
 * Relative luminance (WCAG) of a `#rrggbb` or `#rrggbbaa` colour; alpha is ignored, a translucent card
 * takes the page's colour, which we cannot know.
 */
export function luminance(hex: string): number {
  const channel = (offset: number): number => {
    const value = Number.parseInt(hex.slice(offset, offset + 2), 16) / 255;
    return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** Light text on dark backgrounds and the other way round, where the user gave a background but no theme. */
export function themeForBackground(hex: string): ThemeName {
  // Where black and white text have equal contrast: sqrt(1.05 * 0.05) - 0.05.
  return luminance(hex) > 0.179 ? 'light' : 'dark';
}
