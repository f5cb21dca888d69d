import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { Snowflake } from '../presence/model.js';
import { isSnowflake } from '../presence/snowflake.js';
import { type AgentAnswer, type AgentReads, AgentRefusal } from './reads.js';
import { COULD_NOT_ANSWER } from './tools.js';

/** JSON-RPC's first code of the range for a server's own errors: a refused read, a method it does not take. */
export const SERVER_ERROR = -32000;

/** How long an id a refusal quotes may be. */
const QUOTED_ID_CHARS = 40;

/** What each resource is, as its template (`presently://users/{id}/…`) names it, and how it is read. */
const RESOURCES: readonly {
  path: string;
  title: string;
  description: string;
  route: string;
  read(reads: AgentReads, id: Snowflake): AgentAnswer | Promise<AgentAnswer>;
}[] = [
  {
    path: 'presence',
    title: 'Discord presence',
    description: 'The live presence',
    route: 'GET /v1/users/{id}',
    read: (reads, id) => reads.presence(id),
  },
  {
    path: 'history',
    title: 'Status and listening history',
    description: 'Status changes and plays, newest first',
    route: 'GET /v1/users/{id}/history',
    read: (reads, id) => reads.history(id),
  },
  {
    path: 'stats',
    title: 'Listening and status stats',
    description: 'Plays today, history size, current status, last seen',
    route: 'GET /v1/users/{id}/stats',
    read: (reads, id) => reads.stats(id),
  },
  {
    path: 'top-tracks',
    title: 'Most played tracks',
    description: 'The most played tracks, as many as the route gives by default',
    route: 'GET /v1/users/{id}/top-tracks',
    read: (reads, id) => reads.topTracks(id),
  },
  {
    path: 'recent',
    title: 'Recently played',
    description: 'The latest plays, as many as the route gives by default',
    route: 'GET /v1/users/{id}/recent',
    read: (reads, id) => reads.recentTracks(id),
  },
];

/** The URI template of the resource at `path`. */
export const resourceTemplateOf = (path: string): string => `presently://users/{id}/${path}`;

/** The id of a URI the template matched, checked by the same rule as REST's paths. */
function idOf(variables: Record<string, string | string[]>): Snowflake {
  const id = variables.id;
  if (typeof id !== 'string' || !isSnowflake(id)) {
    const quoted = JSON.stringify(String(id).slice(0, QUOTED_ID_CHARS));
    throw new McpError(
      ErrorCode.InvalidParams,
      `${quoted} is not a Discord user id (a snowflake: 1–20 digits)`,
    );
  }
  return id;
}

/**
 * Resource templates for the same reads as the tools, `presently://users/{id}/presence` and so on: JSON as
 * REST answers it under `data`, or, for a user agents do not see, a line of text saying why. They list no
 * resources: a list of the users who allowed agents would be a directory of them, which REST has not
 * either.
 */
export function registerAgentResources(
  server: McpServer,
  reads: AgentReads,
  onError: (error: unknown) => void,
): void {
  for (const { path, title, description, route, read } of RESOURCES) {
    server.registerResource(
      path,
      new ResourceTemplate(resourceTemplateOf(path), { list: undefined }),
      { title, description: `${description}, as \`${route}\` answers it.`, mimeType: 'application/json' },
      async (uri, variables): Promise<ReadResourceResult> => {
        const id = idOf(variables);
        let answer: AgentAnswer;
        try {
          answer = await read(reads, id);
        } catch (error) {
          if (error instanceof AgentRefusal) throw new McpError(SERVER_ERROR, error.message);
          onError(error);
          throw new McpError(ErrorCode.InternalError, COULD_NOT_ANSWER);
        }
        return {
          contents: [
            answer.json === null
              ? { uri: uri.href, mimeType: 'text/plain', text: answer.notes.join('\n') }
              : { uri: uri.href, mimeType: 'application/json', text: answer.json },
          ],
        };
      },
    );
  }
}
