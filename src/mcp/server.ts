import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { AgentReads, type AgentReadsDeps, type ChargeReads } from './reads.js';
import { registerAgentResources } from './resources.js';
import { type AgentToolOptions, registerAgentTools } from './tools.js';

/** The name the server gives itself in `initialize`. */
export const AGENT_SERVER_NAME = 'presently';

/** What the agent is told of the server when it connects. */
const INSTRUCTIONS =
  'Presently serves the live Discord presence (status, activities, what they listen to, custom status), the status and listening history, stats and top tracks of the users who let AI agents read them. Users are named by their Discord user id (a snowflake, as a string). A user who has not allowed agents is answered as such, with how they can allow it; a user Presently does not monitor, or who keeps their presence private, is answered as not monitored. Reads count against the rate limit of the address they come from.';

/**
 * Checks what a client answers to a server's questions (elicitation), which these tools never ask. One for
 * every server, since each request makes a server and the validator is the costly part of one.
 */
const CLIENT_ANSWERS = new AjvJsonSchemaValidator();

export interface AgentServerDeps extends AgentReadsDeps {
  /** The service's version, which the server gives as its own. */
  version: string;
  maxIds: AgentToolOptions['maxIds'];
}

/** What one request to the server brings: whom its reads are charged to, where failures are logged. */
export interface AgentCall {
  charge: ChargeReads;
  onError(error: unknown): void;
}

/**
 * The MCP server of one request: stateless, it holds nothing between requests, so each is served by a new
 * one (as the SDK has it for a server without sessions), charging that request's client.
 */
export function agentServer(deps: AgentServerDeps, call: AgentCall): McpServer {
  const server = new McpServer(
    { name: AGENT_SERVER_NAME, version: deps.version },
    { instructions: INSTRUCTIONS, jsonSchemaValidator: CLIENT_ANSWERS },
  );
  const reads = new AgentReads(deps, call.charge);
  registerAgentTools(server, reads, { maxIds: deps.maxIds, onError: call.onError });
  registerAgentResources(server, reads, call.onError);
  return server;
}
