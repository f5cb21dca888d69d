import { slashSpelling } from '../discord/commands/prefix-words.js';
import type { Snowflake } from '../presence/model.js';
import type { PrivacySettings } from '../presence/privacy.js';
import type { PresenceView } from '../presence/registry/registry.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';

/** What agents may read of whom. */
export interface AgentViewDeps {
  /** What anyone may read: private users are not in it, and every presence in it is rendered under its user's settings. */
  view: PresenceView;
  /** The user's privacy settings; undefined for one who set none (agents not allowed). */
  settingsOf(userId: Snowflake): PrivacySettings | undefined;
  /** What REST's `user_not_monitored` says of a user, word for word. */
  notMonitored(userId: Snowflake): string;
}

/** How an agent sees a user: their presence, or why not, in words to pass on. */
export type AgentSight =
  | { seen: true; snapshot: PresenceSnapshot }
  | { seen: false; reason: 'not_monitored' | 'not_allowed'; text: string };

/** How a user lets agents read them, in the bot's and the API's words. */
const HOW_TO_ALLOW = `Only they can allow it: with the bot, ${slashSpelling('privacy set', { setting: 'allow_agents', value: 'true' })}, or with their API key, \`PATCH /v1/users/@me/privacy\` with \`{"allow_agents": true}\`.`;

/** What an agent is told of a monitored user who has not let agents read them: no error, an answer. */
export function notAllowedText(userId: Snowflake): string {
  return `User ${userId} has not allowed AI agents to read their presence on Presently (their privacy setting \`allow_agents\` is off). ${HOW_TO_ALLOW}`;
}

/**
 * Whom agents see: a monitored user whose `visibility` is public (the public view holds no other) and who
 * turned `allow_agents` on. A private user reads exactly as one nobody monitors; a public one who did not
 * allow agents is told apart, since anyone may read them over REST anyway, and the agent can say how to
 * allow it. Nothing is read from the store to decide, so the answer takes the same time for everyone.
 */
export function agentSight(deps: AgentViewDeps, userId: Snowflake): AgentSight {
  const snapshot = deps.view.get(userId);
  if (snapshot === undefined) {
    return { seen: false, reason: 'not_monitored', text: deps.notMonitored(userId) };
  }
  if (deps.settingsOf(userId)?.allow_agents !== true) {
    return { seen: false, reason: 'not_allowed', text: notAllowedText(userId) };
  }
  return { seen: true, snapshot };
}
