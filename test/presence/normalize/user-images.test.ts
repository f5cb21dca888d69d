import { describe, expect, it } from 'vitest';
import type { DiscordUser } from '../../../src/presence/model.js';
import { userWithImageUrls } from '../../../src/presence/normalize/user-images.js';
import { CDN } from '../payloads.js';

describe('userWithImageUrls', () => {
  it('adds the URLs of the server tag badge, the avatar decoration and the nameplate, keeping the rest', () => {
    const user = {
      id: '94490510688792576',
      username: 'mira',
      primary_guild: {
        identity_guild_id: '1234567890123456789',
        identity_enabled: true,
        tag: 'MIRA',
        badge: '2ba1b0b2a1c4d5e6f7a8b9c0d1e2f3a4',
      },
      avatar_decoration_data: {
        asset: 'a_fac3bb5ecd3f8d8bde4b3ab0e4b4d7cb',
        sku_id: '1144058844004233369',
        expires_at: null,
      },
      collectibles: {
        nameplate: {
          sku_id: '1349486948942745691',
          asset: 'nameplates/nameplates/twilight/',
          label: '',
          palette: 'cobalt',
        },
      },
    } as unknown as DiscordUser;
    const shown = userWithImageUrls(user, `${CDN}/`) as unknown as Record<string, Record<string, unknown>>;
    expect(shown.primary_guild).toEqual({
      ...(user as unknown as Record<string, object>).primary_guild,
      badge_url: `${CDN}/guild-tag-badges/1234567890123456789/2ba1b0b2a1c4d5e6f7a8b9c0d1e2f3a4.png`,
    });
    expect(shown.avatar_decoration_data?.asset_url).toBe(
      `${CDN}/avatar-decoration-presets/a_fac3bb5ecd3f8d8bde4b3ab0e4b4d7cb.png`,
    );
    expect((shown.collectibles?.nameplate as Record<string, unknown> | undefined)?.asset_url).toBe(
      `${CDN}/assets/collectibles/nameplates/nameplates/twilight/static.png`,
    );
    expect(shown.username).toBe('mira');
    // The user given is not changed.
    expect(
      (user as unknown as Record<string, Record<string, unknown>>).primary_guild?.badge_url,
    ).toBeUndefined();
  });

  it('null URLs where the object lacks what they need; the user itself when it has none of them', () => {
    const user = {
      id: '1',
      primary_guild: { identity_guild_id: null, tag: null, badge: null },
      avatar_decoration_data: { asset: 5 },
      collectibles: { nameplate: {} },
    } as unknown as DiscordUser;
    const shown = userWithImageUrls(user, CDN) as unknown as Record<string, Record<string, unknown>>;
    expect(shown.primary_guild?.badge_url).toBeNull();
    expect(shown.avatar_decoration_data?.asset_url).toBeNull();
    expect((shown.collectibles?.nameplate as Record<string, unknown> | undefined)?.asset_url).toBeNull();
    const plain = {
      id: '2',
      username: 'x',
      primary_guild: null,
      avatar_decoration_data: null,
    } as unknown as DiscordUser;
    expect(userWithImageUrls(plain, CDN)).toBe(plain);
  });

  it('keeps a hostile key inside its path', () => {
    const user = {
      id: '1',
      primary_guild: { identity_guild_id: '1/../../x', badge: 'b' },
      avatar_decoration_data: { asset: '../../evil?x=1' },
    } as unknown as DiscordUser;
    const shown = userWithImageUrls(user, CDN) as unknown as Record<string, Record<string, unknown>>;
    expect(shown.primary_guild?.badge_url).toBeNull();
    expect(shown.avatar_decoration_data?.asset_url).toBe(
      `${CDN}/avatar-decoration-presets/..%2F..%2Fevil%3Fx%3D1.png`,
    );
  });
});

describe('nameplate paths', () => {
  it('cannot climb out of the collectibles', () => {
    const user = {
      id: '1',
      collectibles: { nameplate: { asset: '../../avatars/x' } },
    } as unknown as DiscordUser;
    const shown = userWithImageUrls(user, CDN) as unknown as {
      collectibles: { nameplate: { asset_url: string } };
    };
    expect(shown.collectibles.nameplate.asset_url).toBe(
      `${CDN}/assets/collectibles/%2E%2E/%2E%2E/avatars/x/static.png`,
    );
  });
});
