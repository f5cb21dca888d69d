import type { DiscordUser } from '../model.js';
import { cdnBase, isRecord, urlComponent } from './values.js';

/**
 * The user as Discord sent it, with the URLs of its newer images beside their keys, where Discord sent the
 * object (built, never fetched):
 *
 * | object                   | added       | URL                                                        |
 * |--------------------------|-------------|------------------------------------------------------------|
 * | `primary_guild`          | `badge_url` | `{cdn}/guild-tag-badges/<identity_guild_id>/<badge>.png`   |
 * | `avatar_decoration_data` | `asset_url` | `{cdn}/avatar-decoration-presets/<asset>.png`              |
 * | `collectibles.nameplate` | `asset_url` | `{cdn}/assets/collectibles/<asset>static.png` (`asset.webm` beside it is the animation) |
 *
 * Null when the object lacks what the URL needs. The user itself (===) when it has none of them.
 */
export function userWithImageUrls(user: DiscordUser, cdnUrl: string): DiscordUser {
  const raw = user as unknown as Record<string, unknown>;
  const { primary_guild: guild, avatar_decoration_data: decoration, collectibles } = raw;
  const nameplate = isRecord(collectibles) ? collectibles.nameplate : undefined;
  if (!isRecord(guild) && !isRecord(decoration) && !isRecord(nameplate)) return user;
  const base = cdnBase(cdnUrl);
  const copy: Record<string, unknown> = { ...raw };
  if (isRecord(guild)) {
    const { identity_guild_id: guildId, badge } = guild;
    copy.primary_guild = {
      ...guild,
      badge_url:
        typeof guildId === 'string' && /^\d{1,20}$/.test(guildId) && typeof badge === 'string' && badge !== ''
          ? `${base}/guild-tag-badges/${guildId}/${urlComponent(badge)}.png`
          : null,
    };
  }
  if (isRecord(decoration)) {
    const { asset } = decoration;
    copy.avatar_decoration_data = {
      ...decoration,
      asset_url:
        typeof asset === 'string' && asset !== ''
          ? `${base}/avatar-decoration-presets/${urlComponent(asset)}.png`
          : null,
    };
  }
  if (isRecord(collectibles) && isRecord(nameplate)) {
    const { asset } = nameplate;
    copy.collectibles = {
      ...collectibles,
      nameplate: {
        ...nameplate,
        asset_url:
          typeof asset === 'string' && asset !== ''
            ? `${base}/assets/collectibles/${assetPath(asset)}static.png`
            : null,
      },
    };
  }
  return copy as unknown as DiscordUser;
}

/**
 * A nameplate's asset is a path ("nameplates/nameplates/twilight/"): each part encoded, the slashes kept,
 * and `.`/`..` escaped so the path cannot climb out of the collectibles.
 */
function assetPath(asset: string): string {
  const part = (segment: string) =>
    /^\.+$/.test(segment) ? segment.replaceAll('.', '%2E') : urlComponent(segment);
  const path = asset.split('/').map(part).join('/');
  return path.endsWith('/') ? path : `${path}/`;
}

/** The user as Discord sent it: `userWithImageUrls` undone. The user itself (===) when it has no URLs. */
export function withoutImageUrls(user: DiscordUser): DiscordUser {
  const raw = user as unknown as Record<string, unknown>;
  const { primary_guild: guild, avatar_decoration_data: decoration, collectibles } = raw;
  const nameplate = isRecord(collectibles) ? collectibles.nameplate : undefined;
  const has = (value: unknown, key: string) => isRecord(value) && Object.hasOwn(value, key);
  if (!has(guild, 'badge_url') && !has(decoration, 'asset_url') && !has(nameplate, 'asset_url')) return user;
  const copy: Record<string, unknown> = { ...raw };
  if (isRecord(guild)) copy.primary_guild = without(guild, 'badge_url');
  if (isRecord(decoration)) copy.avatar_decoration_data = without(decoration, 'asset_url');
  if (isRecord(collectibles) && isRecord(nameplate)) {
    copy.collectibles = { ...collectibles, nameplate: without(nameplate, 'asset_url') };
  }
  return copy as unknown as DiscordUser;
}

function without(record: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _, ...rest } = record;
  return rest;
}
