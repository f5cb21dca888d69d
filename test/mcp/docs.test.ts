import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEMO_PRIVACY, DEMO_USERS } from '../../src/demo/cast.js';
import { MAX_BULK_IDS } from '../../src/http/bulk-read.js';
import { MCP_BODY_LIMIT } from '../../src/http/routes/mcp.js';
import {
  HISTORY_LIMIT,
  RECENT_DEFAULT_LIMIT,
  RECENT_MAX_LIMIT,
  TOP_TRACKS_DEFAULT_LIMIT,
  TOP_TRACKS_MAX_LIMIT,
  TOP_TRACKS_MIN_PLAYS,
} from '../../src/model/history.js';

const read = (page: string) =>
  readFileSync(new URL(`../../docs/${page}`, import.meta.url), 'utf8').replace(/\s+/g, ' ');
const agents = read('agents.md');
const limits = read('limits.md');

/** The limits docs/agents.md and docs/limits.md give the agent endpoint are the code's. */
describe('docs on the agent endpoint', () => {
  it('gives each tool the limits of the route it reads', () => {
    expect(agents).toContain(`| \`get_presences\` | \`user_ids\`: 1–${MAX_BULK_IDS} ids |`);
    expect(agents).toContain(`the ${HISTORY_LIMIT} most recent of each`);
    expect(agents).toContain(
      `\`limit\`: an integer, default ${TOP_TRACKS_DEFAULT_LIMIT}, clamped to 1–${TOP_TRACKS_MAX_LIMIT}; \`period\`: \`7d\`, \`30d\` or \`all\` (the default), as \`/top-tracks\` takes it | \`{top_tracks}\`, tracks played at least ${TOP_TRACKS_MIN_PLAYS === 2 ? 'twice' : `${TOP_TRACKS_MIN_PLAYS} times`}`,
    );
    expect(agents).toContain(
      `\`limit\`: an integer, default ${RECENT_DEFAULT_LIMIT}, clamped to 1–${RECENT_MAX_LIMIT} |`,
    );
    expect(agents).toContain(`more than ${MAX_BULK_IDS} ids`);
  });

  it('gives the body bound, on both pages', () => {
    expect(agents).toContain(`a body over ${MCP_BODY_LIMIT / 1024} KiB`);
    expect(limits).toContain(
      `| \`POST /mcp\` body (the [agent endpoint](agents.md)) | ${MCP_BODY_LIMIT / 1024} KiB of JSON |`,
    );
  });

  it('names the demo users who do not allow agents as the demo has them', () => {
    const notAllowed = Object.values(DEMO_USERS)
      .filter((user) => DEMO_PRIVACY.get(user.id)?.allow_agents !== true)
      .map((user) => user.global_name);
    expect(notAllowed.length).toBeGreaterThan(0);
    expect(agents).toContain(`most demo users allow agents and ${notAllowed.join(' and ')} do not`);
  });
});
