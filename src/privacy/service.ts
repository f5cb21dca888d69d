import type { Bus } from '../bus/ports.js';
import type { Snowflake } from '../presence/model.js';
import { type PrivacyPatch, type PrivacySettings, withDefaults } from '../presence/privacy.js';
import type { PrivacyStore } from '../store/ports.js';
import type { PrivacyDirectory } from './directory.js';

/**
 * The one way a user's privacy settings change, whether by REST or by the bot: kept in the store, then
 * announced to every node, and applied on this one before the change is answered.
 */
export class PrivacyService {
  constructor(
    private readonly store: PrivacyStore,
    private readonly bus: Bus,
    private readonly directory: PrivacyDirectory,
  ) {}

  /** The user's settings, every field present, as the store holds them. */
  async settings(userId: Snowflake): Promise<PrivacySettings> {
    return withDefaults(await this.store.getPrivacy(userId));
  }

  /** Applies a checked patch (`parsePrivacyPatch`) and answers the settings it left. */
  async change(userId: Snowflake, patch: PrivacyPatch): Promise<PrivacySettings> {
    const stored = await this.store.patchPrivacy(userId, patch);
    await this.announce(userId);
    return withDefaults(stored);
  }

  /** Forgets every setting of the user: the defaults apply again. */
  async reset(userId: Snowflake): Promise<void> {
    await this.store.deletePrivacy(userId);
    await this.announce(userId);
  }

  /** The store erased every setting of the user (an erasure of everything): the defaults apply everywhere. */
  erased(userId: Snowflake): Promise<void> {
    return this.announce(userId);
  }

  private async announce(userId: Snowflake): Promise<void> {
    await this.bus.publish('privacy.changed', { userId });
    await this.directory.refresh(userId);
  }
}
