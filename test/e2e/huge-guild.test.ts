import { WebSocketShardEvents } from '@discordjs/ws';
import {
  GatewayDispatchEvents,
  type GatewayGuildCreateDispatchData,
  GatewayIntentBits,
} from 'discord-api-types/v10';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayFor, restFor } from '../simulator/support.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';

/**
 * A guild past Discord's 75,000 members (lowered here to 300): its GUILD_CREATE carries only the bot and who
 * is in voice, and no presences, so every member and presence comes from the listing (op 8) the service asks
 * for, as for any other guild.
 */

const GUILD = '410000000000000001';
const HUGE = 300;
const MEMBERS = 400;
const userId = (n: number) => String(((1_100_000_000_000n + BigInt(n)) << 22n) | 5n);

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('a guild past the size where GUILD_CREATE lists members', () => {
  it('is listed by op 8: every member and presence served, from a GUILD_CREATE that named only the bot', async () => {
    harness = await startHarness({
      simulator: { hugeGuildMembers: HUGE },
      setup: (sim) => {
        sim.createGuild({
          id: GUILD,
          name: 'Huge',
          members: [
            { user: sim.botUser },
            ...Array.from({ length: MEMBERS }, (_, n) => ({
              user: { id: userId(n), username: `member${n}` },
              presence: { status: n % 2 === 0 ? ('online' as const) : ('idle' as const) },
            })),
          ],
        });
      },
    });
    const h = harness;
    // The bot is a member too.
    await eventually(() => expect(h.app.registry.size).toBe(MEMBERS + 1), 15_000);
    for (const n of [0, 1, MEMBERS - 1]) {
      const response = await fetch(`${h.base}/v1/users/${userId(n)}`);
      const body = (await response.json()) as { data: { discord_status: string } };
      expect(body.data.discord_status).toBe(n % 2 === 0 ? 'online' : 'idle');
    }
    const listings = h.simulator.memberRequests.filter(
      (request) => request.guild_id === GUILD && 'query' in request,
    );
    expect(listings).toHaveLength(1);

    // What the service was sent: another session with the same intents sees the bot alone, no presences.
    const manager = gatewayFor(h.simulator, restFor(h.simulator), {
      intents: GatewayIntentBits.Guilds | GatewayIntentBits.GuildMembers | GatewayIntentBits.GuildPresences,
    });
    const created = new Promise<GatewayGuildCreateDispatchData>((resolve) => {
      manager.on(WebSocketShardEvents.Dispatch, (payload) => {
        if (payload.t === GatewayDispatchEvents.GuildCreate) resolve(payload.d);
      });
    });
    await manager.connect();
    const guild = await created;
    await manager.destroy();
    expect(guild.member_count).toBe(MEMBERS + 1);
    expect(guild.members.map((member) => member.user.id)).toEqual([h.simulator.botUser.id]);
    expect(guild.presences).toEqual([]);
  });
});
