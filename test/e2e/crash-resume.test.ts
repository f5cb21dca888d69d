import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, type TestContext } from 'vitest';
import { DiscordSimulator } from '../../src/simulator/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { eventually } from '../support/eventually.js';
import { type NodeProcess, startNodeProcess } from '../support/node-process.js';

/**
 * `kill -9` of the service (its own process, on a SQLite file): the gateway state it saved last, a few
 * seconds old, is what the next process resumes from. Its sequence number is the snapshot's, so what
 * Discord sent after the snapshot is replayed, and nothing is listed or identified again.
 */

const GUILD = '400000000000000001';
const ALICE = '80351110224678912';
const BOB = '80351110224678913';

async function statusOf(node: NodeProcess, userId: string): Promise<string | undefined> {
  const response = await fetch(`${node.url}/v1/users/${userId}`);
  const body = (await response.json()) as { data?: { discord_status: string } };
  return body.data?.discord_status;
}

describe('a crash', () => {
  it('resumes from the last saved state, and what came after it is replayed', async ({
    onTestFinished,
  }: TestContext) => {
    const dir = mkdtempSync(join(tmpdir(), 'presently-crash-resume-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'p.db');
    const discord = new DiscordSimulator({ heartbeatIntervalMs: 1_000 });
    await discord.start();
    onTestFinished(() => discord.stop());
    discord.createGuild({
      id: GUILD,
      name: 'Crash',
      members: [
        { user: { id: ALICE, username: 'alice' }, presence: { status: 'online' } },
        { user: { id: BOB, username: 'bob' }, presence: { status: 'online' } },
      ],
    });
    const env = {
      DATABASE_URL: `sqlite:${path}`,
      DISCORD_TOKEN: discord.token,
      DISCORD_API_URL: discord.apiUrl,
      DISCORD_CDN_URL: discord.cdnUrl,
    };
    const first = await startNodeProcess('first', env);
    onTestFinished(async () => {
      await first.stop(0);
    });
    await eventually(async () => expect(await statusOf(first, ALICE)).toBe('online'), 15_000);
    discord.setPresence(ALICE, { status: 'dnd' });
    await eventually(async () => expect(await statusOf(first, ALICE)).toBe('dnd'));

    // A periodic save with Alice's change in it.
    const saved = async () => {
      const store = openSqliteStore({ kind: 'sqlite', path });
      try {
        return await store.gatewayState.load('all');
      } finally {
        await store.close();
      }
    };
    const sequence = discord.sequenceOf(0);
    await eventually(async () => expect((await saved())?.sessions[0]?.sequence).toBe(sequence), 15_000, 200);

    // After the last save: known to this process alone when it dies.
    discord.setPresence(BOB, { status: 'idle' });
    await eventually(async () => expect(await statusOf(first, BOB)).toBe('idle'));
    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull();
    const identifies = discord.identifyCount;
    const listings = discord.memberRequests.length;

    const second = await startNodeProcess('second', env);
    onTestFinished(async () => {
      await second.stop();
    });
    expect(await statusOf(second, ALICE)).toBe('dnd');
    await eventually(async () => expect(await statusOf(second, BOB)).toBe('idle'));
    expect(discord.identifyCount).toBe(identifies);
    expect(discord.resumeCount).toBe(1);
    expect(discord.memberRequests).toHaveLength(listings);
  }, 60_000);
});
