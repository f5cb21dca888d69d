import { describe, expect, it } from 'vitest';
import { DEFAULT_MUSIC_APPS } from '../../src/presence/normalize/music-apps.js';
import {
  DEFAULT_PRIVACY,
  hiddenBy,
  hiddenMusicSources,
  isPrivacyRefusal,
  MAX_HIDDEN_APPLICATIONS,
  PAUSED_UNTIL_UNDONE,
  PRIVACY_FIELDS,
  parsePrivacyPatch,
  recordsHistory,
  withDefaults,
} from '../../src/presence/privacy.js';

const NOW = 1_780_000_000_000;

function refusal(input: unknown): { field: string; message: string } {
  const parsed = parsePrivacyPatch(input);
  if (!isPrivacyRefusal(parsed)) throw new Error(`accepted: ${JSON.stringify(parsed)}`);
  return parsed;
}

describe('privacy settings', () => {
  it('takes every setting with a value it allows, lists without repeats', () => {
    const patch = {
      hide_activity_types: ['playing', 'custom', 'playing'],
      hide_application_ids: ['1402418491272986635'],
      hide_music_sources: ['spotify', 'apple_music'],
      hide_custom_status: true,
      hide_platforms: true,
      hide_profile: false,
      hide_kv: true,
      record_history: false,
      show_last_seen: false,
      visibility: 'private',
      allow_agents: true,
      paused_until: PAUSED_UNTIL_UNDONE,
      opted_in: true,
    };
    expect(parsePrivacyPatch(patch)).toEqual({ ...patch, hide_activity_types: ['playing', 'custom'] });
    expect(Object.keys(patch).sort()).toEqual([...PRIVACY_FIELDS].sort());
    expect(parsePrivacyPatch({})).toEqual({});
    expect(parsePrivacyPatch({ paused_until: null })).toEqual({ paused_until: null });
  });

  it('refuses, naming the field, anything that is no setting or no value of it', () => {
    expect(refusal({ hide_everything: true }).field).toBe('hide_everything');
    expect(refusal({ hide_kv: 'yes' })).toEqual({ field: 'hide_kv', message: 'must be true or false' });
    expect(refusal({ visibility: 'friends' }).field).toBe('visibility');
    expect(refusal({ hide_activity_types: ['gaming'] }).message).toContain('"gaming"');
    expect(refusal({ hide_activity_types: 'playing' }).message).toContain('must be a list');
    expect(refusal({ hide_music_sources: ['other'] }).field).toBe('hide_music_sources');
    expect(refusal({ hide_application_ids: [123] }).field).toBe('hide_application_ids');
    expect(refusal({ hide_application_ids: ['not-a-snowflake'] }).field).toBe('hide_application_ids');
    const tooMany = Array.from({ length: MAX_HIDDEN_APPLICATIONS + 1 }, (_, i) =>
      String(1_000_000_000_000_000n + BigInt(i)),
    );
    expect(refusal({ hide_application_ids: tooMany }).message).toContain(
      `at most ${MAX_HIDDEN_APPLICATIONS}`,
    );
    expect(refusal({ paused_until: -1 }).field).toBe('paused_until');
    expect(refusal({ paused_until: 1.5 }).field).toBe('paused_until');
    expect(refusal({ paused_until: PAUSED_UNTIL_UNDONE + 1 }).field).toBe('paused_until');
    expect(refusal([]).field).toBe('');
    expect(refusal(null).field).toBe('');
    expect(refusal('hide').field).toBe('');
    // A key named like an object's own property is no setting either.
    expect(refusal(JSON.parse('{"__proto__": {"hide_kv": true}}')).field).toBe('__proto__');
  });

  it('fills what a user never set with the defaults', () => {
    expect(withDefaults(undefined)).toEqual(DEFAULT_PRIVACY);
    expect(withDefaults({ hide_kv: true })).toEqual({ ...DEFAULT_PRIVACY, hide_kv: true });
  });

  it('names the settings, not what is going on, in what is hidden', () => {
    expect(hiddenBy(DEFAULT_PRIVACY, NOW)).toEqual([]);
    expect(hiddenBy(withDefaults({ visibility: 'private', record_history: false }), NOW)).toEqual([]);
    expect(hiddenBy(withDefaults({ hide_application_ids: ['1402418491272986635'] }), NOW)).toEqual([
      'applications',
    ]);
    expect(hiddenBy(withDefaults({ paused_until: NOW + 1 }), NOW)).toEqual(['paused']);
    expect(hiddenBy(withDefaults({ paused_until: NOW }), NOW)).toEqual([]);
  });

  it('records history unless turned off or paused', () => {
    expect(recordsHistory(undefined, NOW)).toBe(true);
    expect(recordsHistory(withDefaults({ record_history: false }), NOW)).toBe(false);
    expect(recordsHistory(withDefaults({ paused_until: NOW + 1 }), NOW)).toBe(false);
    expect(recordsHistory(withDefaults({ paused_until: NOW - 1 }), NOW)).toBe(true);
  });

  it('hides the past plays of a hidden service, of a hidden player by its service, all with listening', () => {
    const sources = (patch: object) => hiddenMusicSources(withDefaults(patch), NOW, DEFAULT_MUSIC_APPS);
    expect(sources({})).toEqual(new Set());
    expect(sources({ hide_music_sources: ['spotify'] })).toEqual(new Set(['spotify']));
    // Cider is an Apple Music player; an application no service is known by may have played as `other`.
    expect(sources({ hide_application_ids: ['911790844204437504'] })).toEqual(new Set(['apple_music']));
    expect(sources({ hide_application_ids: ['1402418491272986635'] })).toEqual(new Set(['other']));
    expect(sources({ hide_activity_types: ['listening'] })).toBe('all');
    expect(sources({ paused_until: NOW + 1 })).toBe('all');
  });
});
