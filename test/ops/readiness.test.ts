import { describe, expect, it } from 'vitest';
import type { ListingWait } from '../../src/ops/readiness.js';
import { checkReadiness, gatewayCheck, MAX_NAMED_WAITING_GUILDS } from '../../src/ops/readiness.js';

const guild = (n: number) => String(500000000000000000n + BigInt(n));

function report(gatewayReady: boolean, listed: boolean, waiting: ListingWait[]) {
  return checkReadiness([
    gatewayCheck({ ready: gatewayReady }, { listed: () => listed, waiting: () => waiting }),
  ]);
}

describe('the gateway readiness check', () => {
  it('fails while a guild listing waits on Discord’s rate limit, naming the guild and when it is sent again', async () => {
    expect(await report(true, true, [])).toEqual({ ready: true, checks: { gateway: 'ok' }, problems: [] });
    expect(await report(true, true, [{ guildId: guild(1), retryInMs: 12_345 }])).toEqual({
      ready: false,
      checks: { gateway: 'failed' },
      problems: [
        `gateway: the member listing of guild ${guild(1)} waits on Discord's rate limit, sent again in 12.3 s`,
      ],
    });
  });

  it('names a few waiting guilds and counts the rest; says too when a shard has no session', async () => {
    const waits = Array.from({ length: MAX_NAMED_WAITING_GUILDS + 2 }, (_, n) => ({
      guildId: guild(n),
      retryInMs: 1_000 * (n + 1),
    }));
    const { problems } = await report(false, false, waits);
    const named = waits
      .slice(0, MAX_NAMED_WAITING_GUILDS)
      .map((wait, n) => `${wait.guildId} (in ${n + 1}.0 s)`)
      .join(', ');
    expect(problems).toEqual([
      'gateway: not every shard has a live Discord session, or the first member listing is not done; ' +
        `the member listings of ${waits.length} guilds wait on Discord's rate limit, sent again: ${named}, and 2 more`,
    ]);
  });

  it('says so while the gateway waits for Discord’s IDENTIFY budget to reset', async () => {
    const waiting = (identifyWaitMs: number) =>
      checkReadiness([
        gatewayCheck({ ready: false, identifyWaitMs }, { listed: () => false, waiting: () => [] }),
      ]);
    expect((await waiting(83_456)).problems).toEqual([
      "gateway: not every shard has a live Discord session, or the first member listing is not done; the gateway waits for Discord's IDENTIFY budget to reset, in 83.5 s",
    ]);
    expect((await waiting(0)).problems).toEqual([
      'gateway: not every shard has a live Discord session, or the first member listing is not done',
    ]);
  });
});
