import { describe, expect, it, type TestContext } from 'vitest';
import { eventually } from '../support/eventually.js';
import { startHarness } from '../support/harness.js';

/**
 * GATEWAY_COMPRESSION=zlib-stream: Discord's transport compression, one zlib stream per connection. The
 * service connects with it, takes in a listing and updates, and resumes a dropped connection on it.
 */

const GUILD = '600000000000000001';
const USER = '80351110224678912';

describe('GATEWAY_COMPRESSION=zlib-stream', () => {
  it('connects compressed, and loads, follows and resumes as without it', async ({
    onTestFinished,
  }: TestContext) => {
    const h = await startHarness({
      env: { GATEWAY_COMPRESSION: 'zlib-stream' },
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Compressed',
          members: [{ user: { id: USER, username: 'user' }, presence: { status: 'online' } }],
        }),
    });
    onTestFinished(() => h.close());
    const status = async () => {
      const response = await fetch(`${h.base}/v1/users/${USER}`);
      return ((await response.json()) as { data?: { discord_status: string } }).data?.discord_status;
    };
    await eventually(async () => expect(await status()).toBe('online'));
    h.simulator.setPresence(USER, { status: 'dnd' });
    await eventually(async () => expect(await status()).toBe('dnd'));

    h.simulator.faults.dropConnection();
    h.simulator.setPresence(USER, { status: 'idle' });
    await eventually(async () => expect(await status()).toBe('idle'));
    expect(h.simulator.resumeCount).toBe(1);
    expect(h.simulator.identifyCount).toBe(1);
    // The first connection and the one it resumed on.
    expect(h.simulator.compressedConnections).toBe(2);
  });
});
