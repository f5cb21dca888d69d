import { describe, expect, it } from 'vitest';
import { activeOnFrom } from '../../../src/presence/normalize/client-status.js';

const NOWHERE = {
  active_on_discord_desktop: false,
  active_on_discord_web: false,
  active_on_discord_mobile: false,
  active_on_discord_embedded: false,
  active_on_discord_vr: false,
};

describe('activeOnFrom', () => {
  it('is false everywhere for an empty client_status (offline)', () => {
    expect(activeOnFrom({})).toEqual(NOWHERE);
  });

  it('is true for each platform named, whatever its status', () => {
    expect(activeOnFrom({ desktop: 'online' })).toEqual({ ...NOWHERE, active_on_discord_desktop: true });
    expect(activeOnFrom({ mobile: 'idle', web: 'idle' })).toEqual({
      ...NOWHERE,
      active_on_discord_mobile: true,
      active_on_discord_web: true,
    });
    expect(activeOnFrom({ desktop: 'dnd', embedded: 'dnd' })).toEqual({
      ...NOWHERE,
      active_on_discord_desktop: true,
      active_on_discord_embedded: true,
    });
    expect(activeOnFrom({ vr: 'online' })).toEqual({ ...NOWHERE, active_on_discord_vr: true });
  });

  it('is true everywhere when every platform is named, in the order of the presence object', () => {
    const all = activeOnFrom({
      vr: 'idle',
      embedded: 'online',
      mobile: 'online',
      web: 'idle',
      desktop: 'dnd',
    });
    expect(Object.entries(all)).toEqual([
      ['active_on_discord_desktop', true],
      ['active_on_discord_web', true],
      ['active_on_discord_mobile', true],
      ['active_on_discord_embedded', true],
      ['active_on_discord_vr', true],
    ]);
  });

  it('is false for a platform without an active status, and for garbage', () => {
    expect(
      activeOnFrom({ desktop: 'offline', web: 'invisible', mobile: 1, vr: null, embedded: undefined }),
    ).toEqual(NOWHERE);
    expect(activeOnFrom({ xbox: 'online', playstation: 'online' })).toEqual(NOWHERE);
    for (const input of [null, undefined, 'desktop', 7, ['desktop'], true])
      expect(activeOnFrom(input)).toEqual(NOWHERE);
  });
});
