import { readFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BULK_IDS } from '../../src/http/bulk-read.js';
import { MCP_BODY_LIMIT } from '../../src/http/routes/mcp.js';
import { AGENT_SERVER_NAME } from '../../src/mcp/server.js';
import { COULD_NOT_ANSWER } from '../../src/mcp/tools.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { inOneReadWindow } from '../support/read-window.js';
import { agentClient, call, dataOf } from './client.js';
import {
  KAI,
  MIRA,
  NOVA,
  restData,
  SECRET_GAME,
  SECRET_KV,
  startAgentHarness,
  TRACK_SONG,
  UNKNOWN,
} from './fixture.js';

/**
 * The agent endpoint as an agent meets it: the SDK's own client over Streamable HTTP, against the service
 * on loopback. Agents see whom REST shows, under the same privacy rules, and only users who allowed them.
 */

const TOOLS = [
  'get_presence',
  'get_presences',
  'get_history',
  'get_stats',
  'get_top_tracks',
  'get_recent_tracks',
];

let harness: Harness;
let client: Client;

const rest = (path: string) => restData(harness.base, path);

function connect(base: string, fetchFn?: typeof fetch): Promise<Client> {
  return agentClient(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), fetchFn ? { fetch: fetchFn } : undefined),
  );
}

beforeAll(async () => {
  harness = await startAgentHarness();
  client = await connect(harness.base);
});

afterAll(async () => {
  await client?.close();
  await harness?.close();
});

describe('what an agent finds', () => {
  it('the server names itself, and lists the six tools and the resource templates', async () => {
    expect(client.getServerVersion()?.name).toBe(AGENT_SERVER_NAME);
    expect(client.getInstructions()).toContain('allowed agents');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(TOOLS);
    for (const tool of tools) {
      expect(tool.annotations?.readOnlyHint, tool.name).toBe(true);
      expect(tool.description, tool.name).toContain('allow_agents');
    }
    const presences = tools.find((tool) => tool.name === 'get_presences');
    expect(presences?.inputSchema.properties?.user_ids).toMatchObject({
      maxItems: MAX_BULK_IDS,
      minItems: 1,
    });
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(
      ['presence', 'history', 'stats', 'top-tracks', 'recent'].map(
        (path) => `presently://users/{id}/${path}`,
      ),
    );
    // No directory of the users who allowed agents.
    expect((await client.listResources()).resources).toEqual([]);
    const documented = readFileSync(new URL('../../docs/agents.md', import.meta.url), 'utf8');
    for (const name of [...tools.map((tool) => tool.name), ...resourceTemplates.map((t) => t.uriTemplate)]) {
      expect(documented, name).toContain(`| \`${name}\` |`);
    }
  });
});

describe('a user who allowed agents', () => {
  it('get_presence: the presence REST serves, with what their settings hide left out', async () => {
    const response = await (await fetch(`${harness.base}/v1/users/${NOVA}`)).json();
    const { isError, texts } = await call(client, 'get_presence', { user_id: NOVA });
    expect(isError).toBe(false);
    expect(texts).toHaveLength(1);
    expect(JSON.parse(texts[0] as string)).toEqual((response as { data: unknown }).data);
    const presence = JSON.parse(texts[0] as string) as Record<string, unknown>;
    expect(presence.discord_user).toMatchObject({ id: NOVA, username: 'nova' });
    expect(presence.kv).toEqual({});
    expect(presence.privacy).toEqual({ hidden: ['activities:playing', 'kv'] });
    expect(texts[0]).not.toContain(SECRET_GAME);
    expect(texts[0]).not.toContain(SECRET_KV);
  });

  it('history, stats, top tracks and recent tracks: what REST answers under `data`', async () => {
    const answers = {
      get_history: await dataOf(client, 'get_history', { user_id: NOVA }),
      get_stats: await dataOf(client, 'get_stats', { user_id: NOVA }),
      get_top_tracks: await dataOf(client, 'get_top_tracks', { user_id: NOVA }),
      get_recent_tracks: await dataOf(client, 'get_recent_tracks', { user_id: NOVA }),
    };
    expect(answers).toEqual({
      get_history: await rest(`/v1/users/${NOVA}/history`),
      get_stats: await rest(`/v1/users/${NOVA}/stats`),
      get_top_tracks: await rest(`/v1/users/${NOVA}/top-tracks`),
      get_recent_tracks: await rest(`/v1/users/${NOVA}/recent`),
    });
    expect(answers.get_top_tracks).toMatchObject({ top_tracks: [{ song: TRACK_SONG, play_count: 2 }] });
    expect(answers.get_stats).toMatchObject({ current_status: 'online', is_monitored: true });
    expect((answers.get_history as { track_history: unknown[] }).track_history.length).toBeGreaterThan(0);
    expect(JSON.stringify(answers)).not.toContain(SECRET_GAME);
  });

  it('limits as REST takes them: clamped to their bounds, a non-integer refused', async () => {
    expect(await dataOf(client, 'get_recent_tracks', { user_id: NOVA, limit: 1 })).toEqual(
      await rest(`/v1/users/${NOVA}/recent?limit=1`),
    );
    expect(await dataOf(client, 'get_top_tracks', { user_id: NOVA, limit: 0 })).toEqual(
      await rest(`/v1/users/${NOVA}/top-tracks?limit=1`),
    );
    const refused = await call(client, 'get_top_tracks', { user_id: NOVA, limit: 1.5 });
    expect(refused.isError).toBe(true);
    expect(refused.texts.join('\n')).toContain('must be an integer');
  });

  it('periods as REST takes them: the plays of the last 7 days, an unknown period refused', async () => {
    expect(await dataOf(client, 'get_top_tracks', { user_id: NOVA, period: '7d' })).toEqual(
      await rest(`/v1/users/${NOVA}/top-tracks?period=7d`),
    );
    const refused = await call(client, 'get_top_tracks', { user_id: NOVA, period: '1y' });
    expect(refused.isError).toBe(true);
  });

  it('resources: the same data as JSON', async () => {
    const { contents } = await client.readResource({ uri: `presently://users/${NOVA}/presence` });
    expect(contents).toHaveLength(1);
    expect(contents[0]).toMatchObject({
      uri: `presently://users/${NOVA}/presence`,
      mimeType: 'application/json',
    });
    expect(JSON.parse((contents[0] as { text: string }).text)).toEqual(await rest(`/v1/users/${NOVA}`));
    for (const [path, route] of [
      ['history', 'history'],
      ['stats', 'stats'],
      ['top-tracks', 'top-tracks'],
      ['recent', 'recent'],
    ]) {
      const read = await client.readResource({ uri: `presently://users/${NOVA}/${path}` });
      expect(JSON.parse((read.contents[0] as { text: string }).text), path).toEqual(
        await rest(`/v1/users/${NOVA}/${route}`),
      );
    }
  });
});

describe('users agents do not see', () => {
  it('not allowed: a plain answer, no error, that says how the user can allow it', async () => {
    for (const tool of TOOLS.filter((name) => name !== 'get_presences')) {
      const { isError, texts } = await call(client, tool, { user_id: KAI });
      expect(isError, tool).toBe(false);
      expect(texts, tool).toEqual([
        `User ${KAI} has not allowed AI agents to read their presence on Presently (their privacy setting \`allow_agents\` is off). Only they can allow it: with the bot, \`/presently privacy set setting:allow_agents value:true\`, or with their API key, \`PATCH /v1/users/@me/privacy\` with \`{"allow_agents": true}\`.`,
      ]);
    }
    const { contents } = await client.readResource({ uri: `presently://users/${KAI}/stats` });
    expect(contents[0]).toMatchObject({ mimeType: 'text/plain' });
    expect((contents[0] as { text: string }).text).toContain('has not allowed AI agents');
  });

  it('private, and unknown: answered alike, as not monitored, whatever allow_agents says', async () => {
    for (const tool of TOOLS.filter((name) => name !== 'get_presences')) {
      const [hidden, unknown] = [
        await call(client, tool, { user_id: MIRA }),
        await call(client, tool, { user_id: UNKNOWN }),
      ];
      expect(hidden.isError, tool).toBe(false);
      expect(hidden.texts, tool).toEqual([
        expect.stringContaining(`User ${MIRA} is not being monitored by Presently`),
      ]);
      expect(hidden.texts.map((text) => text.replaceAll(MIRA, UNKNOWN))).toEqual(unknown.texts);
    }
  });

  it('get_presences: the users shown, then who is not and why, one line for each not allowed', async () => {
    const { isError, texts } = await call(client, 'get_presences', {
      user_ids: [UNKNOWN, KAI, NOVA, MIRA, NOVA],
    });
    expect(isError).toBe(false);
    const data = JSON.parse(texts[0] as string) as {
      presences: Record<string, unknown>;
      not_allowed: string[];
      not_monitored: string[];
    };
    expect(Object.keys(data.presences)).toEqual([NOVA]);
    expect(data.presences[NOVA]).toEqual(await rest(`/v1/users/${NOVA}`));
    expect(data.not_allowed).toEqual([KAI]);
    expect(data.not_monitored).toEqual([UNKNOWN, MIRA]);
    expect(texts.slice(1)).toEqual([expect.stringContaining(`User ${KAI} has not allowed AI agents`)]);
    expect(texts.join('')).not.toContain(SECRET_GAME);
  });
});

describe('input refused', () => {
  it.each([
    ['get_presence', { user_id: 'abc' }, 'must be a Discord user id'],
    ['get_presence', { user_id: '18446744073709551616' }, 'must be a Discord user id'],
    ['get_stats', {}, 'user_id'],
    ['get_presences', { user_ids: [] }, 'must name at least one user id'],
    ['get_presences', { user_ids: [NOVA, 'x'] }, 'must be a Discord user id'],
  ])('%s %j: a tool error naming what is wrong', async (tool, args, message) => {
    const { isError, texts } = await call(client, tool, args);
    expect(isError).toBe(true);
    expect(texts.join('\n')).toContain(message);
  });

  it(`get_presences with more than ${MAX_BULK_IDS} ids`, async () => {
    const ids = Array.from({ length: MAX_BULK_IDS + 1 }, (_, i) => String(520000000000001000n + BigInt(i)));
    const { isError, texts } = await call(client, 'get_presences', { user_ids: ids });
    expect(isError).toBe(true);
    expect(texts.join('\n')).toContain(`may name at most ${MAX_BULK_IDS} user ids`);
    const fits = await call(client, 'get_presences', { user_ids: ids.slice(0, MAX_BULK_IDS) });
    expect(fits.isError).toBe(false);
  });

  it('a resource of an id that is none', async () => {
    await expect(client.readResource({ uri: 'presently://users/abc/presence' })).rejects.toThrow(
      /"abc" is not a Discord user id/,
    );
  });
});

describe('a failure of ours', () => {
  it('is a tool error, and a resource error, that say nothing of it', async () => {
    const { history } = harness.app.store;
    const read = history.history;
    history.history = () => Promise.reject(new Error('disk on fire at /var/lib/presently'));
    try {
      const { isError, texts } = await call(client, 'get_history', { user_id: NOVA });
      expect({ isError, texts }).toEqual({ isError: true, texts: [COULD_NOT_ANSWER] });
      await expect(client.readResource({ uri: `presently://users/${NOVA}/recent` })).rejects.toThrow(
        COULD_NOT_ANSWER,
      );
    } finally {
      history.history = read;
    }
    expect((await call(client, 'get_history', { user_id: NOVA })).isError).toBe(false);
  });
});

describe('HTTP around the protocol', () => {
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${harness.base}/mcp`, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        ...headers,
      },
      body,
    });

  it('a body over the bound: 413 in the envelope, before it is parsed', async () => {
    const response = await post(`"${'x'.repeat(MCP_BODY_LIMIT)}"`);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      success: false,
      error: { code: 'payload_too_large', message: expect.any(String) },
    });
  });

  it("a body that is not JSON: the protocol's parse error; not application/json: 415 in the envelope", async () => {
    const broken = await post('{"jsonrpc":');
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 }, id: null });
    const text = await post('{}', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ success: false, error: { code: 'unsupported_media_type' } });
  });

  it('a batch of messages: refused as an invalid request, none of them run', async () => {
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
    const batch = await post(JSON.stringify([call(1), call(2)]));
    expect(batch.status).toBe(400);
    expect(await batch.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 }, id: null });
  });

  it('GET and DELETE: 405, POST allowed (no stream, no session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${harness.base}/mcp`, {
        method,
        headers: { accept: 'text/event-stream' },
      });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
    }
  });

  it('answers carry the headers every answer does, and are JSON', async () => {
    const response = await post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'get_stats', arguments: { user_id: NOVA } },
      }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.json()).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text' }] },
    });
  });

  it('is documented: POST, GET and DELETE /mcp, under Agents', async () => {
    const document = (await (await fetch(`${harness.base}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { tags: string[] }>>;
    };
    expect(Object.keys(document.paths['/mcp'] ?? {}).sort()).toEqual(['delete', 'get', 'post']);
    expect(document.paths['/mcp']?.post?.tags).toEqual(['Agents']);
  });
});

describe('rate limits', () => {
  const READS = 10;
  let limited: Harness;

  beforeAll(async () => {
    limited = await startHarness({
      env: { RATE_LIMIT_READ: String(READS) },
      setup: (sim) =>
        sim.createGuild({
          id: '520000000000000002',
          name: 'Limits',
          members: [{ user: { id: NOVA, username: 'nova' } }],
        }),
    });
  });

  afterAll(() => limited?.close());

  it('every request is a read, get_presences one per distinct id; past the budget, a clear refusal', async () => {
    await inOneReadWindow();
    const answers: Response[] = [];
    const counted: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      answers.push(response);
      return response;
    };
    const agent = await connect(limited.base, counted);
    // initialize, initialized, and the GET of a stream the server does not offer: three reads.
    await eventually(() => expect(answers.map((answer) => answer.status)).toEqual([200, 202, 405]));
    expect(answers.map((answer) => answer.headers.get('ratelimit-remaining'))).toEqual(['9', '8', '7']);

    const ids = Array.from({ length: 8 }, (_, i) => String(520000000000002000n + BigInt(i)));
    const refused = await call(agent, 'get_presences', { user_ids: ids });
    expect(refused.isError).toBe(true);
    expect(refused.texts).toEqual([
      expect.stringMatching(
        /^more than 10 reads a minute \(a bulk read counts one per id\); retry in \d+ seconds?$/,
      ),
    ]);
    expect(answers.at(-1)?.headers.get('retry-after')).toMatch(/^\d+$/);

    await expect(agent.callTool({ name: 'get_presence', arguments: { user_id: NOVA } })).rejects.toThrow(
      /HTTP 429|rate_limited.*more than 10 reads a minute/,
    );
    await agent.close();
  });
});
