import type { Readable, Writable } from 'node:stream';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  ErrorCode,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';

export interface StdioBridgeOptions {
  /** The instance's MCP endpoint (endpoint.ts). */
  endpoint: URL;
  /** Default: the process's. */
  stdin?: Readable;
  stdout?: Writable;
  /** Where the bridge says what went wrong: never stdout, which is the protocol's. */
  log(line: string): void;
}

/** What the transport's message for a refused POST says before the answer's body. */
const POST_REFUSED = 'Error POSTing to endpoint: ';

/** What the instance's refusal says: the envelope's message, or JSON-RPC's, or the body as it came. */
function refusalOf(body: string): string {
  try {
    const answer = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof answer.error?.message === 'string') return answer.error.message;
  } catch {
    // not JSON: the body as it is
  }
  return body;
}

/** A failed request, in words the agent can pass on. */
function failureOf(endpoint: URL, error: unknown): string {
  if (error instanceof StreamableHTTPError && error.code !== undefined && error.code > 0) {
    const at = error.message.indexOf(POST_REFUSED);
    const body = at < 0 ? error.message : error.message.slice(at + POST_REFUSED.length);
    return `Presently at ${endpoint.origin} answered HTTP ${error.code}: ${refusalOf(body)}`;
  }
  const cause = (error as { cause?: { code?: unknown } }).cause?.code;
  const reason = error instanceof Error ? error.message : String(error);
  return `Presently at ${endpoint.href} could not be reached: ${reason}${typeof cause === 'string' ? ` (${cause})` : ''}`;
}

/**
 * An MCP server on stdio for clients that start one as a process, passing every message on to the instance's
 * Streamable HTTP endpoint and every answer back. The tools, resources and rules are then the instance's
 * own: who allowed agents, what their privacy settings hide and the rate limit are decided where the data
 * is, which no client of the public REST API could do. A request the instance refuses, or cannot be sent,
 * is answered with a JSON-RPC error that says why. Resolves once stdin ends and every answer on its way
 * has been written.
 */
export async function bridgeStdio(options: StdioBridgeOptions): Promise<void> {
  const { endpoint, log } = options;
  const stdin = options.stdin ?? process.stdin;
  const remote = new StreamableHTTPClientTransport(endpoint);
  const local = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  /** Ids of `initialize` requests on their way: their answer says which protocol version later requests name. */
  const initializing = new Set<string | number>();

  /** Messages on their way to the instance: a client that ends stdin after a request still gets its answer. */
  const inFlight = new Set<Promise<void>>();

  local.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && message.method === 'initialize') initializing.add(message.id);
    const sending = remote.send(message).catch(async (error: unknown) => {
      if (!isJSONRPCRequest(message)) return;
      initializing.delete(message.id);
      await local.send({
        jsonrpc: '2.0',
        id: message.id,
        error: { code: ErrorCode.InternalError, message: failureOf(endpoint, error) },
      });
    });
    inFlight.add(sending);
    void sending.finally(() => inFlight.delete(sending));
  };
  remote.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCResultResponse(message) && initializing.delete(message.id)) {
      const { protocolVersion } = message.result;
      if (typeof protocolVersion === 'string') remote.setProtocolVersion(protocolVersion);
    }
    void local.send(message);
  };
  remote.onerror = (error) => log(failureOf(endpoint, error));
  local.onerror = (error) => log(`a message on stdin could not be read: ${error.message}`);

  const ended = new Promise<void>((resolve) => {
    stdin.once('end', resolve);
    stdin.once('close', resolve);
  });
  await remote.start();
  await local.start();
  await ended;
  await Promise.allSettled([...inFlight]);
  await local.close();
  await remote.close();
}
