import { type APIUser, GatewayDispatchEvents, type GatewayDispatchPayload } from 'discord-api-types/v10';
import { type InstallLinks, installLinks } from './install-links.js';

/** The bot's own user as the gateway last described it: READY's user, then the bot's USER_UPDATEs. */
export class BotIdentity {
  #user: APIUser | null = null;
  #links: InstallLinks | null = null;

  /** For `DiscordGateway.onDispatch`. */
  readonly observe = (payload: GatewayDispatchPayload): void => {
    if (payload.t === GatewayDispatchEvents.Ready) {
      this.#user = payload.d.user;
      this.#links = installLinks(payload.d.application.id);
    }
    if (payload.t === GatewayDispatchEvents.UserUpdate && payload.d.id === this.#user?.id) {
      this.#user = payload.d;
    }
  };

  /**
   * The name people find the bot by in a member list: its username, as `name#1234` while it still has a
   * discriminator (bots may); null before the first READY.
   */
  get name(): string | null {
    const user = this.#user;
    if (user === null) return null;
    const { username, discriminator } = user;
    return discriminator && discriminator !== '0' ? `${username}#${discriminator}` : username;
  }

  /** Where people add the bot to a server or to themselves; null before the first READY. */
  get links(): InstallLinks | null {
    return this.#links;
  }
}
