import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PendingRenderer } from '../../src/discord/pending-renderer.js';
import type { PresenceChange } from '../../src/presence/registry/registry.js';
import { PresenceRegistry } from '../../src/presence/registry/registry.js';

const GUILD = '200000000000000001';
const idOf = (n: number) => String(80351110224678912n + BigInt(n));
/** The next turn of the event loop, after the renderer's own (scheduled before this). */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A registry with `members` pending members, and the users it announces as monitored. */
function pendingRegistry(members: number) {
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

describe('PendingRenderer', () => {
  it('renders and announces every pending member, a batch per turn, in the order they came', async () => {
    const { registry, announced } = pendingRegistry(10);
    const renderer = new PendingRenderer(registry, pino({ level: 'silent' }), { batch: 4 });
    renderer.kick();
    renderer.kick();
    expect(announced).toHaveLength(0);
    await nextTurn();
    expect(announced).toHaveLength(4);
    await nextTurn();
    expect(announced).toHaveLength(8);
    await nextTurn();
    expect(announced).toEqual(Array.from({ length: 10 }, (_, n) => idOf(n)));
    expect(registry.pendingCount).toBe(0);
  });

  it('renders nothing more once stopped, and is not started again', async () => {
    const { registry, announced } = pendingRegistry(10);
    const renderer = new PendingRenderer(registry, pino({ level: 'silent' }), { batch: 4 });
    renderer.kick();
    await nextTurn();
    renderer.stop();
    renderer.kick();
    await nextTurn();
    await nextTurn();
    expect(announced).toHaveLength(4);
    expect(registry.pendingCount).toBe(6);
  });

  it("goes on past a listener's failure, and logs it", async () => {
    const { registry, announced } = pendingRegistry(6);
    registry.onChange((change) => {
      if (change.userId === idOf(1)) throw new Error('listener failed');
    });
    const errors: unknown[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => errors.push(JSON.parse(line)) });
    const renderer = new PendingRenderer(registry, logger, { batch: 4 });
    renderer.kick();
    await nextTurn();
    await nextTurn();
    await nextTurn();
    expect(announced).toEqual(Array.from({ length: 6 }, (_, n) => idOf(n)));
    expect(errors).toEqual([expect.objectContaining({ msg: 'failed to announce a pending member' })]);
    expect(registry.get(idOf(1))?.version).toBe(1);
  });

  it('renders users a lost session made stale, a batch per turn, without waiting for a listing', async () => {
    const { registry } = pendingRegistry(6);
    registry.renderPending(6);
    const stale: string[] = [];
    registry.onChange((change) => {
      if (change.kind === 'updated' && change.current.summary().stale) stale.push(change.userId);
    });
    registry.guildsLost([GUILD]);
    const renderer = new PendingRenderer(registry, pino({ level: 'silent' }), {
      batch: 4,
      listing: () => true,
    });
    renderer.kick();
    await nextTurn();
    expect(stale).toHaveLength(4);
    await nextTurn();
    expect(stale).toEqual(Array.from({ length: 6 }, (_, n) => idOf(n)));
    expect(registry.staleWaiting).toBe(0);
    renderer.stop();
  });

  describe('while a listing is under way', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('waits for it to end, then renders', async () => {
      const { registry, announced } = pendingRegistry(6);
      let listing = true;
      const renderer = new PendingRenderer(registry, pino({ level: 'silent' }), {
        batch: 4,
        listing: () => listing,
      });
      renderer.kick();
      await nextTurn();
      await nextTurn();
      expect(announced).toHaveLength(0);
      listing = false;
      renderer.kick();
      await nextTurn();
      await nextTurn();
      expect(announced).toHaveLength(6);
    });

    it('renders all the same once it has waited the longest it may, for a listing that never ends', () => {
      vi.useFakeTimers();
      const clock = { now: 0 };
      const { registry, announced } = pendingRegistry(6);
      const renderer = new PendingRenderer(registry, pino({ level: 'silent' }), {
        batch: 4,
        listing: () => true,
        maxPauseMs: 1_000,
        now: () => clock.now,
      });
      renderer.kick();
      clock.now = 999;
      vi.advanceTimersByTime(999);
      expect(announced).toHaveLength(0);
      clock.now = 1_000;
      vi.advanceTimersByTime(1);
      vi.runOnlyPendingTimers();
      expect(announced).toHaveLength(4);
      vi.runOnlyPendingTimers();
      expect(announced).toHaveLength(6);
      renderer.stop();
    });
  });
});
