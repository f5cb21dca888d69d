import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SERVER_NAME } from '../../src/mcp/server.js';
import { type Harness, startHarness } from '../support/harness.js';
import { inOneReadWindow } from '../support/read-window.js';
import { agentClient, call, dataOf } from './client.js';
import { KAI, MIRA, NOVA, restData, SECRET_GAME, startAgentHarness, UNKNOWN } from './fixture.js';

/**
 * `presently mcp --base <url>`, as an MCP client that starts its servers as processes runs it: the SDK's
 * own client over stdio, the command pointed at the service on loopback.
 */

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** The command as `npx presently` runs it, from the source. */
const COMMAND = ['--import', 'tsx', 'src/cli.ts'];
const run = promisify(execFile);

/** A client of a `presently mcp --base <base>` process; its stderr is kept in `stderr`. */
async function stdioAgent(base: string): Promise<{ client: Client; stderr: string[] }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...COMMAND, 'mcp', '--base', base],
    cwd: REPO,
    stderr: 'pipe',
  });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  return { client: await agentClient(transport), stderr };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the stdio server, against an instance', () => {
  let harness: Harness;
  let client: Client;

  beforeAll(async () => {
    harness = await startAgentHarness();
    ({ client } = await stdioAgent(harness.base));
  });

  afterAll(async () => {
    await client?.close();
    await harness?.close();
  });

  it('answers a request sent just before its client closes stdin, then ends', async () => {
    const child = execFile(process.execPath, [...COMMAND, 'mcp', '--base', harness.base], { cwd: REPO });
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const initialize = {
      jsonrpc: '2.0',
      id: 7,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
    };
    child.stdin?.end(`${JSON.stringify(initialize)}\n`);
    expect(await exited).toBe(0);
    const answer = JSON.parse(stdout.trim().split('\n')[0] ?? '{}') as { id?: number; result?: object };
    expect(answer).toMatchObject({ id: 7, result: { serverInfo: { name: AGENT_SERVER_NAME } } });
  });

  it("serves the instance's tools and resources", async () => {
    expect(client.getServerVersion()?.name).toBe(AGENT_SERVER_NAME);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
      'get_presence',
      'get_presences',
      'get_history',
      'get_stats',
      'get_top_tracks',
      'get_recent_tracks',
    ]);
    expect((await client.listResourceTemplates()).resourceTemplates).toHaveLength(5);
  });

  it('answers as the instance does: the presence, under the privacy settings', async () => {
    const presence = await dataOf(client, 'get_presence', { user_id: NOVA });
    expect(presence).toEqual(await restData(harness.base, `/v1/users/${NOVA}`));
    expect(JSON.stringify(presence)).not.toContain(SECRET_GAME);
    expect(await dataOf(client, 'get_top_tracks', { user_id: NOVA, limit: 3 })).toEqual(
      await restData(harness.base, `/v1/users/${NOVA}/top-tracks?limit=3`),
    );
    const { contents } = await client.readResource({ uri: `presently://users/${NOVA}/stats` });
    expect(JSON.parse((contents[0] as { text: string }).text)).toEqual(
      await restData(harness.base, `/v1/users/${NOVA}/stats`),
    );
  });

  it('who did not allow agents, who is private and who is unknown: as the instance says', async () => {
    const [kai, mira, unknown] = [
      await call(client, 'get_stats', { user_id: KAI }),
      await call(client, 'get_stats', { user_id: MIRA }),
      await call(client, 'get_stats', { user_id: UNKNOWN }),
    ];
    expect(kai).toEqual({ isError: false, texts: [expect.stringContaining('has not allowed AI agents')] });
    expect(mira).toEqual({ isError: false, texts: [expect.stringContaining('is not being monitored')] });
    expect(mira.texts.map((text) => text.replaceAll(MIRA, UNKNOWN))).toEqual(unknown.texts);
  });

  it('a bad argument: the tool error the instance gives', async () => {
    const { isError, texts } = await call(client, 'get_presence', { user_id: 'nope' });
    expect(isError).toBe(true);
    expect(texts.join('\n')).toContain('must be a Discord user id');
  });
});

describe('refusals and failures, answered', () => {
  it('past the rate limit: an error naming the limit and the wait', async () => {
    const READS = 6;
    const limited = await startHarness({
      env: { RATE_LIMIT_READ: String(READS) },
      setup: (sim) =>
        sim.createGuild({
          id: '520000000000000003',
          name: 'Limits',
          members: [{ user: { id: NOVA, username: 'nova' } }],
        }),
    });
    await inOneReadWindow();
    const { client } = await stdioAgent(limited.base).catch(async (error) => {
      await limited.close();
      throw error;
    });
    try {
      let refusal: unknown = null;
      let answered = 0;
      while (refusal === null && answered <= READS) {
        try {
          await client.callTool({ name: 'get_presence', arguments: { user_id: NOVA } });
          answered++;
        } catch (error) {
          refusal = error;
        }
      }
      // Connecting took three reads (initialize, initialized, the GET of a stream not offered), the GET
      // maybe after a call: each call is one more.
      expect(answered).toBeGreaterThanOrEqual(READS - 3);
      expect(answered).toBeLessThanOrEqual(READS - 2);
      expect(String(refusal)).toMatch(
        new RegExp(
          `Presently at ${limited.base} answered HTTP 429: more than ${READS} reads a minute; retry in \\d+ (?:seconds?|minutes?)$`,
        ),
      );
    } finally {
      await client.close();
      await limited.close();
    }
  });

  it('an instance that cannot be reached: connecting fails with why', async () => {
    const base = `http://127.0.0.1:${await closedPort()}`;
    const failure = await stdioAgent(base).then(
      async ({ client }) => {
        await client.close();
        return null;
      },
      (error: unknown) => error,
    );
    expect(String(failure)).toMatch(
      new RegExp(`Presently at ${base}/mcp could not be reached: .*ECONNREFUSED`),
    );
  });

  it('ends by itself when its client closes stdin', async () => {
    const child = execFile(process.execPath, [...COMMAND, 'mcp', '--base', 'http://127.0.0.1:9'], {
      cwd: REPO,
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.stdin?.end();
    expect(await exited).toBe(0);
  });
});

describe('the command line', () => {
  it("is the package's `presently`, built from src/cli.ts, run by node through its shebang", () => {
    const manifest = JSON.parse(readFileSync(`${REPO}/package.json`, 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(manifest.bin).toEqual({ presently: 'dist/cli.js' });
    expect(readFileSync(`${REPO}/src/cli.ts`, 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
  });

  it('--help: the usage, on stdout', async () => {
    const { stdout } = await run(process.execPath, [...COMMAND, '--help'], { cwd: REPO });
    expect(stdout).toMatch(/^Usage: presently mcp --base <url>\n/);
    expect(stdout).toContain('--base <url>');
  });

  it.each([
    [[], 'no command given'],
    [['mcp'], 'mcp needs --base <url>'],
    [['mcp', '--base', 'ftp://example.com'], 'is not an http:// or https:// URL'],
    [['serve'], 'unknown command "serve"'],
  ])('%j: exit code 2, what is wrong and the usage on stderr', async (args, problem) => {
    const failure = (await run(process.execPath, [...COMMAND, ...args], { cwd: REPO }).catch(
      (error: unknown) => error,
    )) as { code?: number; stderr?: string; stdout?: string };
    expect(failure.code).toBe(2);
    expect(failure.stderr).toContain(problem);
    expect(failure.stderr).toContain('Usage: presently mcp --base <url>');
    expect(failure.stdout).toBe('');
  });
});
