import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';

/** An agent's MCP client, connected through `transport` (initialize and initialized done). */
export async function agentClient(transport: Transport): Promise<Client> {
  const client = new Client({ name: 'presently-tests', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** The texts of a tool's answer, in order; fails on content of another type. */
export function textsOf(result: unknown): string[] {
  const { content } = result as CallToolResult;
  return content.map((item) => {
    expect(item.type).toBe('text');
    return (item as { text: string }).text;
  });
}

/** A tool's answer: whether it is an error, and its texts. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; texts: string[] }> {
  const result = await client.callTool({ name, arguments: args });
  return { isError: result.isError === true, texts: textsOf(result) };
}

/** The JSON data of a tool's answer that shows a user: one text, JSON. */
export async function dataOf(client: Client, name: string, args: Record<string, unknown>): Promise<unknown> {
  const { isError, texts } = await call(client, name, args);
  expect(isError, texts.join('\n')).toBe(false);
  expect(texts.length, texts.join('\n')).toBeGreaterThanOrEqual(1);
  return JSON.parse(texts[0] as string);
}
