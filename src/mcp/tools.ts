import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  RECENT_DEFAULT_LIMIT,
  RECENT_MAX_LIMIT,
  TOP_TRACKS_DEFAULT_LIMIT,
  TOP_TRACKS_DEFAULT_PERIOD,
  TOP_TRACKS_MAX_LIMIT,
  TOP_TRACKS_MIN_PLAYS,
  TOP_TRACKS_PERIODS,
  type TopTracksPeriod,
} from '../model/history.js';
import { isSnowflake, SNOWFLAKE_PATTERN } from '../presence/snowflake.js';
import { type AgentAnswer, type AgentReads, AgentRefusal } from './reads.js';

/** Told to the agent for a failure of ours, whose own message is none of its business. */
export const COULD_NOT_ANSWER = 'Presently could not answer this just now; try again shortly.';

const NOT_AN_ID = 'must be a Discord user id: a snowflake of 1–20 digits, below 2^64, as a string';

/** A user id, checked by the same rule as REST's paths (the pattern alone cannot bound the value). */
const userId = z
  .string()
  .regex(new RegExp(SNOWFLAKE_PATTERN), { error: NOT_AN_ID, abort: true })
  .refine(isSnowflake, { error: NOT_AN_ID })
  .describe('a Discord user id (snowflake), e.g. "94490510688792576"');

/** `limit` of how many `things`: an integer, clamped as the REST route clamps it. */
const limitOf = (things: string, byDefault: number, max: number) =>
  z
    .number()
    .int({ error: 'must be an integer' })
    .optional()
    .describe(`how many ${things}: an integer, default ${byDefault}, clamped to 1–${max}`);

const TOP_TRACKS_LIMIT = limitOf('tracks', TOP_TRACKS_DEFAULT_LIMIT, TOP_TRACKS_MAX_LIMIT);
const RECENT_LIMIT = limitOf('plays', RECENT_DEFAULT_LIMIT, RECENT_MAX_LIMIT);
const PERIOD = z
  .enum(Object.keys(TOP_TRACKS_PERIODS) as [TopTracksPeriod, ...TopTracksPeriod[]])
  .optional()
  .describe(
    `the plays counted: those of the last 7 or 30 UTC days, or all (default ${TOP_TRACKS_DEFAULT_PERIOD})`,
  );

/** Whom every tool answers for, said once in each description. */
const WHO =
  'Answers only for users who allowed AI agents (the privacy setting `allow_agents`); for others it says why not, and how they can allow it.';

const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;

export interface AgentToolOptions {
  /** Ids one `get_presences` call may name: the bulk read's limit. */
  maxIds: number;
  /** Told of a failure of ours, which the agent hears of as COULD_NOT_ANSWER. */
  onError(error: unknown): void;
}

/** The tool's answer: the data as JSON text, then a line for each user not shown. Not shown is no error. */
function resultOf(answer: AgentAnswer): CallToolResult {
  const texts = answer.json === null ? answer.notes : [answer.json, ...answer.notes];
  return { content: texts.map((text) => ({ type: 'text', text })) };
}

/** The call's answer; a refused or failed call as a tool error the agent can read. */
async function answered(
  read: () => AgentAnswer | Promise<AgentAnswer>,
  options: AgentToolOptions,
): Promise<CallToolResult> {
  let text = COULD_NOT_ANSWER;
  try {
    return resultOf(await read());
  } catch (error) {
    if (error instanceof AgentRefusal) text = error.message;
    else options.onError(error);
  }
  return { isError: true, content: [{ type: 'text', text }] };
}

/**
 * The tools, each the agent's way to one REST read: the same data, limits and privacy rules. Arguments the
 * schemas refuse are answered by the SDK as a tool error naming the argument.
 */
export function registerAgentTools(server: McpServer, reads: AgentReads, options: AgentToolOptions): void {
  server.registerTool(
    'get_presence',
    {
      title: 'Discord presence',
      description: `A user's live Discord presence, as \`GET /v1/users/{id}\` answers it: status, activities, custom status, what they listen to (\`now_playing\`), platforms, profile and their key/value store. ${WHO}`,
      inputSchema: { user_id: userId },
      annotations: READ_ONLY,
    },
    ({ user_id }) => answered(() => reads.presence(user_id), options),
  );
  server.registerTool(
    'get_presences',
    {
      title: 'Several Discord presences',
      description: `The presences of up to ${options.maxIds} users at once, as \`GET /v1/users?ids=\` answers them: \`presences\` by id, then the ids \`not_allowed\` (users who did not allow agents) and \`not_monitored\`. Counts one read of the rate limit per distinct id. ${WHO}`,
      inputSchema: {
        user_ids: z
          .array(userId)
          .min(1, { error: 'must name at least one user id' })
          .max(options.maxIds, { error: `may name at most ${options.maxIds} user ids; ask in batches` })
          .describe(`1–${options.maxIds} Discord user ids`),
      },
      annotations: READ_ONLY,
    },
    ({ user_ids }) => answered(() => reads.presences(user_ids), options),
  );
  server.registerTool(
    'get_history',
    {
      title: 'Status and listening history',
      description: `A user's status changes and the tracks they played, newest first, as \`GET /v1/users/{id}/history\` answers them. ${WHO}`,
      inputSchema: { user_id: userId },
      annotations: READ_ONLY,
    },
    ({ user_id }) => answered(() => reads.history(user_id), options),
  );
  server.registerTool(
    'get_stats',
    {
      title: 'Listening and status stats',
      description: `Plays today (since 00:00 UTC), the size of the track history, the current status and when the user was last seen online, as \`GET /v1/users/{id}/stats\` answers them. ${WHO}`,
      inputSchema: { user_id: userId },
      annotations: READ_ONLY,
    },
    ({ user_id }) => answered(() => reads.stats(user_id), options),
  );
  server.registerTool(
    'get_top_tracks',
    {
      title: 'Most played tracks',
      description: `A user's tracks played at least ${TOP_TRACKS_MIN_PLAYS} times, most played first, as \`GET /v1/users/{id}/top-tracks\` answers them. ${WHO}`,
      inputSchema: {
        user_id: userId,
        limit: TOP_TRACKS_LIMIT,
        period: PERIOD,
      },
      annotations: READ_ONLY,
    },
    ({ user_id, limit, period }) => answered(() => reads.topTracks(user_id, limit, period), options),
  );
  server.registerTool(
    'get_recent_tracks',
    {
      title: 'Recently played',
      description: `A user's latest plays, newest first, the first being what plays now, if anything, as \`GET /v1/users/{id}/recent\` answers them. ${WHO}`,
      inputSchema: {
        user_id: userId,
        limit: RECENT_LIMIT,
      },
      annotations: READ_ONLY,
    },
    ({ user_id, limit }) => answered(() => reads.recentTracks(user_id, limit), options),
  );
}
