import type { ClientStatus, DiscordStatus, Profile, RawPresence, Snowflake } from '../model.js';
import { ACTIVE_STATUSES, CLIENT_PLATFORMS } from '../normalize/client-status.js';
import { type NormalizeOptions, type PresenceFields, presenceFields } from '../normalize/presence.js';
import { memberSince } from '../normalize/profile.js';
import { statusFrom } from '../normalize/raw.js';

const STATUSES: readonly DiscordStatus[] = ['offline', 'online', 'idle', 'dnd'];

/** A presence's fields and their JSON, as the registry renders them. */
export interface FieldsAndJson {
  fields: PresenceFields;
  json: string;
}

/** The fields of one status and set of platforms, and their JSON up to `member_since`'s value. */
interface Template {
  fields: PresenceFields;
  head: string;
}

/**
 * The fields of a presence with no activity and no profile, which most members of a large guild have,
 * depend only on its status, the platforms it is active on and the account's age. They are made once per
 * status and platforms, a template, and copied with `member_since`, the last field, written in.
 */
export class FieldTemplates {
  private readonly templates: (Template | undefined)[] = [];

  constructor(private readonly options: NormalizeOptions) {}

  /** `presenceFields` and their JSON; null for a presence with activities or a profile. */
  of(userId: Snowflake, raw: RawPresence, profile: Profile | null): FieldsAndJson | null {
    if (profile !== null || raw.activities.length > 0) return null;
    const status = STATUSES.indexOf(statusFrom(raw.status));
    let platforms = 0;
    CLIENT_PLATFORMS.forEach((platform, index) => {
      if (ACTIVE_STATUSES.has(raw.client_status[platform])) platforms |= 1 << index;
    });
    const key = (status << CLIENT_PLATFORMS.length) | platforms;
    let template = this.templates[key];
    if (template === undefined) {
      template = this.made(STATUSES[status] as DiscordStatus, platforms);
      this.templates[key] = template;
    }
    const since = memberSince(userId);
    return { fields: { ...template.fields, member_since: since }, json: `${template.head}${since}}` };
  }

  private made(status: DiscordStatus, platforms: number): Template {
    const clientStatus: ClientStatus = {};
    CLIENT_PLATFORMS.forEach((platform, index) => {
      if (platforms & (1 << index)) clientStatus[platform] = status === 'offline' ? 'online' : status;
    });
    const fields = presenceFields(
      { userId: '0', raw: { status, activities: [], client_status: clientStatus }, profile: null },
      this.options,
    );
    const json = JSON.stringify(fields);
    // Every presence made from it shares its empty activities: frozen, none can change the others'.
    Object.freeze(fields.activities);
    return {
      fields: Object.freeze(fields),
      head: json.slice(0, json.length - `${fields.member_since}}`.length),
    };
  }
}
