import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ListedSettler } from '../../src/discord/listed-settler.js';
import type { PresenceChange } from '../../src/presence/registry/registry.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';

const GUILD = '200000000000000001';
const idOf = (n: number) => String(80351110224678912n + BigInt(n));
/** The next turn of the event loop, after the settler's own (scheduled before this). */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function listedRegistry(members: number) {
  const registry = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: { applicationIds: new Set(), names: new Set() },
  });
  for (let n = 0; n < members; n++) {
    registry.memberListed(
      GUILD,
      { id: idOf(n), username: `user${n}` },
      {
        status: 'online',
        client_status: { desktop: 'online' },
        activities: [],
      },
    );
  }
  const announced: string[] = [];
  registry.onChange((change: PresenceChange) => {
    if (change.kind === 'monitored') announced.push(change.userId);
  });
  return { registry, announced };
}

describe('ListedSettler', () => {
  it('renders and announces every listed member, a batch per turn, in the order they were listed', async () => {
    const { registry, announced } = listedRegistry(10);
    const settler = new ListedSettler(registry, pino({ level: 'silent' }), { batch: 4 });
    settler.kick();
    settler.kick();
    expect(announced).toHaveLength(0);
    await nextTurn();
    expect(announced).toHaveLength(4);
    await nextTurn();
    expect(announced).toHaveLength(8);
    await nextTurn();
    expect(announced).toEqual(Array.from({ length: 10 }, (_, n) => idOf(n)));
    expect(registry.unsettled).toBe(0);
  });

  it('renders nothing more once stopped, and is not started again', async () => {
    const { registry, announced } = listedRegistry(10);
    const settler = new ListedSettler(registry, pino({ level: 'silent' }), { batch: 4 });
    settler.kick();
    await nextTurn();
    settler.stop();
    settler.kick();
    await nextTurn();
    await nextTurn();
    expect(announced).toHaveLength(4);
    expect(registry.unsettled).toBe(6);
  });

  it("goes on past a listener's failure, and logs it", async () => {
    const { registry, announced } = listedRegistry(6);
    registry.onChange((change) => {
      if (change.userId === idOf(1)) throw new Error('listener failed');
    });
    const errors: unknown[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => errors.push(JSON.parse(line)) });
    const settler = new ListedSettler(registry, logger, { batch: 4 });
    settler.kick();
    await nextTurn();
    await nextTurn();
    await nextTurn();
    expect(announced).toEqual(Array.from({ length: 6 }, (_, n) => idOf(n)));
    expect(errors).toEqual([expect.objectContaining({ msg: 'failed to announce a listed member' })]);
    expect(registry.get(idOf(1))?.version).toBe(1);
  });

  it('renders users a lost session made stale, a batch per turn, without waiting for a listing', async () => {
    const { registry } = listedRegistry(6);
    registry.settleListed(6);
    const stale: string[] = [];
    registry.onChange((change) => {
      if (change.kind === 'updated' && change.current.summary().stale) stale.push(change.userId);
    });
    registry.guildsLost([GUILD]);
    const settler = new ListedSettler(registry, pino({ level: 'silent' }), { batch: 4, listing: () => true });
    settler.kick();
    await nextTurn();
    expect(stale).toHaveLength(4);
    await nextTurn();
    expect(stale).toEqual(Array.from({ length: 6 }, (_, n) => idOf(n)));
    expect(registry.staleWaiting).toBe(0);
    settler.stop();
  });

  describe('while a listing is under way', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('waits for it to end, then renders', async () => {
      const { registry, announced } = listedRegistry(6);
      let listing = true;
      const settler = new ListedSettler(registry, pino({ level: 'silent' }), {
        batch: 4,
        listing: () => listing,
      });
      settler.kick();
      await nextTurn();
      await nextTurn();
      expect(announced).toHaveLength(0);
      listing = false;
      settler.kick();
      await nextTurn();
      await nextTurn();
      expect(announced).toHaveLength(6);
    });

    it('renders all the same once it has waited the longest it may, for a listing that never ends', () => {
      vi.useFakeTimers();
      const clock = { now: 0 };
      const { registry, announced } = listedRegistry(6);
      const settler = new ListedSettler(registry, pino({ level: 'silent' }), {
        batch: 4,
        listing: () => true,
        maxPauseMs: 1_000,
        now: () => clock.now,
      });
      settler.kick();
      clock.now = 999;
      vi.advanceTimersByTime(999);
      expect(announced).toHaveLength(0);
      clock.now = 1_000;
      vi.advanceTimersByTime(1);
      vi.runOnlyPendingTimers();
      expect(announced).toHaveLength(4);
      vi.runOnlyPendingTimers();
      expect(announced).toHaveLength(6);
      settler.stop();
    });
  });
});
