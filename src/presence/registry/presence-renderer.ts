import type { DiscordUser, Freshness, PresenceSummary, Profile, RawPresence, Snowflake } from '../model.js';
import { DEFAULT_MUSIC_APPS } from '../normalize/music-apps.js';
import { type NormalizeOptions, type PresenceFields, presenceFields } from '../normalize/presence.js';
import { mergeUser } from '../normalize/user.js';
import { userWithImageUrls } from '../normalize/user-images.js';
import { applyPrivacy, hiddenBy, type PrivacySettings } from '../privacy.js';
import { FieldTemplates } from './field-templates.js';
import type { PresenceRow } from './presence-table.js';
import { assembleBody, type PresenceParts, PresenceSnapshot } from './snapshot.js';

/** The KV of every user who has none. */
const NO_KV_JSON = '{}';

/** What rendering needs besides the presence: how to normalize, and whose settings hide what. */
export interface RenderOptions extends NormalizeOptions {
  /** The user's privacy settings; undefined for one who set none. */
  privacy?: (userId: Snowflake) => PrivacySettings | undefined;
}

/** What a presence is built from besides the user. */
export interface RenderSources {
  raw: RawPresence;
  profile: Profile | null;
  freshness: Freshness;
  kvJson: string | Buffer;
}

/**
 * What the presence of a user whose settings hide anything was rendered from: its body holds less than
 * that, so the next version is made from these, not read back from the body.
 */
export interface Unfiltered {
  /** With its images' URLs, as a body holds a user. */
  user: DiscordUser;
  raw: RawPresence;
  kvJson: string | Buffer;
}

/** A rendered presence: the object for the listeners (all but the KV), and its envelope. */
export interface Rendered {
  presence: PresenceSummary;
  /** What `body` was assembled from. */
  parts: PresenceParts;
  body: string | Buffer;
  userLength: number;
  kvAt: number;
  /** Set when privacy settings hid anything. */
  unfiltered?: Unfiltered;
}

/**
 * Turns a user and what their presence is built from into the presence and its body, serialized once,
 * under the user's privacy settings. Pure: the clock says only which settings apply now.
 */
export class PresenceRenderer {
  private readonly templates: FieldTemplates;

  constructor(
    private readonly options: RenderOptions,
    private readonly now: () => number,
  ) {
    this.templates = new FieldTemplates(options);
  }

  /** A user's first version: no KV read yet, and the user as Discord gave it. */
  first(user: DiscordUser, raw: RawPresence, freshness: Freshness, profile: Profile | null = null): Rendered {
    return this.render(user.id, mergeUser(undefined, user), null, {
      raw,
      profile,
      freshness,
      kvJson: NO_KV_JSON,
    });
  }

  /** `userJson`: the user's JSON when it is kept already, so it is not serialized again. */
  render(userId: Snowflake, user: DiscordUser, userJson: string | null, sources: RenderSources): Rendered {
    const settings = this.options.privacy?.(userId);
    if (settings !== undefined) {
      const hidden = hiddenBy(settings, this.now());
      if (hidden.length > 0) return this.renderHiding(userId, user, userJson, sources, settings, hidden);
    }
    const { raw, profile } = sources;
    const template = this.templates.of(userId, raw, profile);
    const fields = template?.fields ?? presenceFields({ userId, raw, profile }, this.options);
    const shown = userJson === null ? userWithImageUrls(user, this.options.cdnUrl) : user;
    const parts = {
      userJson: userJson ?? JSON.stringify(shown),
      fieldsJson: template?.json ?? JSON.stringify(fields),
      freshness: sources.freshness,
      kvJson: sources.kvJson,
    };
    return {
      presence: { discord_user: shown, ...fields, ...sources.freshness },
      parts,
      ...assembleBody(parts),
    };
  }

  /**
   * The presence with what the user's settings hide taken out of what it is made from, so that nothing
   * derived from a hidden field is left in it; `privacy.hidden` says what.
   */
  private renderHiding(
    userId: Snowflake,
    user: DiscordUser,
    userJson: string | null,
    sources: RenderSources,
    settings: PrivacySettings,
    hidden: string[],
  ): Rendered {
    const fullUser =
      userJson === null
        ? userWithImageUrls(user, this.options.cdnUrl)
        : (JSON.parse(userJson) as DiscordUser);
    const shown = applyPrivacy(
      settings,
      this.now(),
      { user: fullUser, raw: sources.raw, profile: sources.profile },
      { musicApps: this.options.musicApps ?? DEFAULT_MUSIC_APPS, youtubeMusic: this.options.youtubeMusic },
    );
    const fields: PresenceFields = {
      ...presenceFields({ userId, raw: shown.raw, profile: shown.profile }, this.options),
      privacy: { hidden },
    };
    if (settings.hide_profile) fields.member_since = null;
    const parts = {
      userJson: JSON.stringify(shown.user),
      fieldsJson: JSON.stringify(fields),
      freshness: sources.freshness,
      kvJson: settings.hide_kv ? NO_KV_JSON : sources.kvJson,
    };
    return {
      presence: { discord_user: shown.user, ...fields, ...sources.freshness },
      parts,
      ...assembleBody(parts),
      unfiltered: { user: fullUser, raw: sources.raw, kvJson: sources.kvJson },
    };
  }
}

/** The rendered presence observed at `at`: assembled again from its parts, nothing else rendered again. */
export function observedAt(rendered: Rendered, at: number): Rendered {
  const freshness = { observed_at: at, stale: rendered.parts.freshness.stale };
  const parts = { ...rendered.parts, freshness };
  return { ...rendered, presence: { ...rendered.presence, ...freshness }, parts, ...assembleBody(parts) };
}

export function snapshotOf(rendered: Rendered, version: number): PresenceSnapshot {
  const { presence, body, kvAt } = rendered;
  return new PresenceSnapshot(presence, body, version, presence.discord_status, kvAt);
}

/** What the table keeps of a rendered presence; `raw` is what it was rendered from. */
export function rowOf(rendered: Rendered, raw: RawPresence): PresenceRow {
  return {
    body: rendered.body,
    userLength: rendered.userLength,
    kvAt: rendered.kvAt,
    status: rendered.presence.discord_status,
    clientStatus: raw.client_status,
    observedAt: rendered.presence.observed_at,
  };
}
