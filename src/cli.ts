#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { mcpEndpointOf } from './mcp/endpoint.js';
import { bridgeStdio } from './mcp/stdio.js';

/**
 * `presently`, the package's command: `presently mcp --base <url>` serves an instance's agent tools over
 * stdio, for MCP clients that start their servers as processes.
 */

const USAGE = `Usage: presently mcp --base <url>

Commands:
  mcp    An MCP server on stdin and stdout for AI agents (Claude Desktop, VS Code, ...), serving the
         tools and resources of the Presently instance at <url> (its /mcp endpoint).

Options:
  --base <url>  the instance, e.g. https://presently.example.com
  -h, --help    show this
`;

/** The exit code of a command line that cannot be run: what is wrong, and the usage. */
function misused(problem: string): number {
  process.stderr.write(`presently: ${problem}\n\n${USAGE}`);
  return 2;
}

async function main(args: readonly string[]): Promise<number> {
  const [command, ...rest] = args;
  if (command === undefined) return misused('no command given');
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command !== 'mcp') return misused(`unknown command ${JSON.stringify(command)}`);
  let options: { base?: string | undefined; help?: boolean | undefined };
  try {
    ({ values: options } = parseArgs({
      args: rest,
      options: { base: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    }));
  } catch (error) {
    return misused((error as Error).message);
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (options.base === undefined) return misused('mcp needs --base <url>');
  let endpoint: URL;
  try {
    endpoint = mcpEndpointOf(options.base);
  } catch {
    return misused(`--base ${JSON.stringify(options.base)} is not an http:// or https:// URL`);
  }
  const log = (line: string) => process.stderr.write(`presently mcp: ${line}\n`);
  try {
    await bridgeStdio({ endpoint, log });
  } catch (error) {
    log(`stopped: ${(error as Error).message}`);
    return 1;
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
