import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bodyDigest as digestOf } from '../../../src/collections/body-digest.js';
import type { DiscordStatus, Kv, RawPresence } from '../../../src/presence/model.js';
import { type PresenceChange, PresenceRegistry } from '../../../src/presence/registry/registry.js';
import { customStatusActivity } from '../../../src/simulator/activities.js';

const GUILDS = ['100000000000000001', '100000000000000002', '100000000000000003'];
const USERS = Array.from({ length: 24 }, (_, n) => String(80351110224678912n + BigInt(n) * 4194304n));

function registry(): { registry: PresenceRegistry; changes: PresenceChange[] } {
  const reg = new PresenceRegistry({
    cdnUrl: 'https://cdn.discordapp.com',
    youtubeMusic: { applicationIds: new Set(), names: new Set() },
  });
  const changes: PresenceChange[] = [];
  reg.onChange((change) => changes.push(change));
  return { registry: reg, changes };
}

function presence(status: DiscordStatus, text: string): RawPresence {
  return {
    status,
    client_status: status === 'offline' ? {} : { desktop: status },
    activities: text === '' ? [] : [customStatusActivity({ text })],
  };
}

type Operation =
  | { kind: 'seen' | 'listed'; guild: number; user: number; status: DiscordStatus; text: string }
  | { kind: 'renderPending'; max: number }
  | { kind: 'removed'; guild: number; user: number }
  | { kind: 'guildRemoved'; guild: number }
  | { kind: 'kv'; user: number; kv: Kv }
  | { kind: 'beginSync' | 'endSync'; guild: number };

const index = (max: number) => fc.integer({ min: 0, max: max - 1 });
const operation: fc.Arbitrary<Operation> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      // Seen in a guild, or listed: pending until asked for or rendered in a batch, served the same.
      kind: fc.constantFrom('seen' as const, 'listed' as const),
      guild: index(GUILDS.length),
      user: index(USERS.length),
      status: fc.constantFrom<DiscordStatus>('online', 'idle', 'dnd', 'offline'),
      text: fc.constantFrom('', 'héllo 🎧', 'coding', 'a "quoted" \\ back'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('renderPending' as const), max: fc.nat(3) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('removed' as const),
      guild: index(GUILDS.length),
      user: index(USERS.length),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('guildRemoved' as const), guild: index(GUILDS.length) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('beginSync' as const, 'endSync' as const),
      guild: index(GUILDS.length),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('kv' as const),
      user: index(USERS.length),
      // Now and then past a large body's size, so a user's body moves between text and bytes.
      kv: fc.oneof(
        fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 30 }), { maxKeys: 4 }),
        fc.constant({ big: 'é'.repeat(20_000) }),
      ),
    }),
  },
);

describe('the registry holding many users off the heap', () => {
  it('serves each monitored user their own latest presence and KV, and nobody else, through any churn', () => {
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 120, size: 'max' }), (operations) => {
        const { registry: reg, changes } = registry();
        const guildsOf = new Map<string, Set<number>>();
        const shown = new Map<string, { status: DiscordStatus; text: string; kv: Kv; revision: number }>();
        const syncing = new Map<number, Set<string>>();
        const leave = (id: string, guild: number) => {
          const guilds = guildsOf.get(id);
          guilds?.delete(guild);
          if (guilds?.size === 0) {
            guildsOf.delete(id);
            shown.delete(id);
          }
        };
        for (const op of operations) {
          if (op.kind === 'renderPending') {
            reg.renderPending(op.max);
          } else if (op.kind === 'seen' || op.kind === 'listed') {
            const id = USERS[op.user] as string;
            const see = op.kind === 'seen' ? reg.memberSeen : reg.memberListed;
            see.call(
              reg,
              GUILDS[op.guild] as string,
              { id, username: `user${op.user}` },
              presence(op.status, op.text),
            );
            syncing.get(op.guild)?.add(id);
            const guilds = guildsOf.get(id) ?? new Set();
            guilds.add(op.guild);
            guildsOf.set(id, guilds);
            const held = shown.get(id) ?? { kv: {}, revision: 0 };
            shown.set(id, { ...held, status: op.status, text: op.text });
          } else if (op.kind === 'kv') {
            const id = USERS[op.user] as string;
            const held = shown.get(id);
            if (!held) continue;
            held.revision++;
            held.kv = op.kv;
            reg.kvLoaded(id, op.kv, held.revision);
          } else if (op.kind === 'beginSync') {
            reg.beginGuildSync(GUILDS[op.guild] as string);
            syncing.set(op.guild, new Set());
          } else if (op.kind === 'endSync') {
            reg.endGuildSync(GUILDS[op.guild] as string);
            const seen = syncing.get(op.guild);
            syncing.delete(op.guild);
            if (!seen) continue;
            for (const [id, guilds] of [...guildsOf])
              if (guilds.has(op.guild) && !seen.has(id)) leave(id, op.guild);
          } else {
            if (op.kind === 'guildRemoved') syncing.delete(op.guild);
            const leaving = op.kind === 'removed' ? [USERS[op.user] as string] : [...guildsOf.keys()];
            if (op.kind === 'removed') reg.memberRemoved(GUILDS[op.guild] as string, leaving[0] as string);
            else reg.guildRemoved(GUILDS[op.guild] as string);
            for (const id of leaving) leave(id, op.guild);
          }
        }
        expect(reg.size).toBe(shown.size);
        expect(reg.pendingCount).toBeLessThanOrEqual(reg.size);
        expect(new Set([...reg.snapshots()].map(([id]) => id))).toEqual(new Set(shown.keys()));
        expect(reg.pendingCount).toBe(0);
        for (const id of USERS) {
          const expected = shown.get(id);
          const snapshot = reg.get(id);
          expect(reg.isMonitored(id)).toBe(expected !== undefined);
          if (!expected || !snapshot) {
            expect(snapshot).toBeUndefined();
            expect(reg.body(id)).toBeUndefined();
            continue;
          }
          // What a REST read writes is the snapshot's body as bytes, and its tag the body's own digest.
          const read = reg.body(id);
          expect(typeof read?.body).toBe(typeof snapshot.body);
          expect(read?.body.toString()).toBe(snapshot.body.toString());
          expect(read?.digest).toBe(digestOf(snapshot.body).toString('base64url'));
          const { data } = JSON.parse(snapshot.body.toString()) as {
            data: ReturnType<typeof snapshot.summary>;
          };
          expect(data).toEqual(snapshot.presence);
          expect(snapshot.presence.discord_user.id).toBe(id);
          expect(snapshot.status).toBe(expected.status);
          expect(snapshot.presence.custom_status?.text ?? '').toBe(expected.text);
          expect(snapshot.presence.kv).toEqual(expected.kv);
          expect(reg.kvRevisionOf(id)).toBe(expected.revision);
        }
        GUILDS.forEach((guild, n) => {
          const members = [...guildsOf.values()].filter((guilds) => guilds.has(n)).length;
          expect(reg.memberCount(guild)).toBe(members);
        });
        // Every change carries the version after the one before it, per user, from their announcement on.
        const versions = new Map<string, number>();
        for (const change of changes) {
          if (change.kind === 'unmonitored') {
            expect(versions.has(change.userId)).toBe(true);
            versions.delete(change.userId);
            continue;
          }
          expect(change.kind === 'monitored').toBe(!versions.has(change.userId));
          expect(change.current.version).toBe((versions.get(change.userId) ?? 0) + 1);
          versions.set(change.userId, change.current.version);
        }
      }),
    );
  });

  it('after a re-listing, forgets a member not listed again though one listed has left since', () => {
    const { registry: reg } = registry();
    const [guild] = GUILDS as [string];
    const [stayed, listed] = USERS as [string, string];
    reg.memberSeen(guild, { id: stayed, username: 'stayed' }, presence('online', ''));
    reg.beginGuildSync(guild);
    reg.memberSeen(guild, { id: listed, username: 'listed' }, presence('online', ''));
    reg.memberRemoved(guild, listed);
    reg.endGuildSync(guild);
    expect(reg.isMonitored(stayed)).toBe(false);
    expect(reg.size).toBe(0);
    expect(reg.memberCount(guild)).toBe(0);
  });

  it('holds twenty thousand members of a listing, forgets half, and serves the rest and the newcomers', () => {
    const { registry: reg } = registry();
    const ids = Array.from({ length: 20_000 }, (_, n) => String(90000000000000000n + BigInt(n)));
    ids.forEach((id, n) => {
      reg.memberSeen(GUILDS[0] as string, { id, username: `member${n}` }, presence('online', `status ${n}`));
    });
    ids.forEach((id, n) => {
      if (n % 2 === 1) reg.memberRemoved(GUILDS[0] as string, id);
    });
    const newcomers = Array.from({ length: 10_000 }, (_, n) => String(95000000000000000n + BigInt(n)));
    newcomers.forEach((id, n) => {
      reg.memberSeen(GUILDS[1] as string, { id, username: `newcomer${n}` }, presence('idle', `new ${n}`));
    });
    expect(reg.size).toBe(20_000);
    ids.forEach((id, n) => {
      const snapshot = reg.get(id);
      if (n % 2 === 1) expect(snapshot).toBeUndefined();
      else expect(snapshot?.presence.custom_status?.text).toBe(`status ${n}`);
    });
    newcomers.forEach((id, n) => {
      expect(reg.get(id)?.presence.discord_user.username).toBe(`newcomer${n}`);
    });
    expect(reg.memberCount(GUILDS[0] as string)).toBe(10_000);
  });

  it('gives each snapshot and each read the digest of its own body, a new one with every change', () => {
    const { registry: reg } = registry();
    // More users than snapshots kept: most reads make their snapshot from what the table keeps.
    const ids = Array.from({ length: 40_000 }, (_, n) => String(90000000000000000n + BigInt(n)));
    const see = (status: DiscordStatus, text: string) =>
      ids.forEach((id, n) => {
        reg.memberSeen(GUILDS[0] as string, { id, username: `member${n}` }, presence(status, `${text} ${n}`));
      });
    const expectInStep = (text: string) => {
      for (const id of ids) {
        const snapshot = reg.get(id);
        const read = reg.body(id);
        expect(snapshot?.body.toString()).toContain(text);
        expect(snapshot?.digest()).toEqual(snapshot && digestOf(snapshot.body));
        expect(typeof read?.body).toBe('string');
        expect(read?.body).toBe(snapshot?.body);
        expect(read?.digest).toBe(snapshot?.digest().toString('base64url'));
      }
    };
    see('online', 'first');
    expectInStep('first');
    see('idle', 'second');
    expectInStep('second');
    // A KV past the large size makes the body bytes, and one back under it text again.
    const [first] = ids as [string];
    reg.kvLoaded(first, { big: 'é'.repeat(20_000) }, 1);
    expect(Buffer.isBuffer(reg.body(first)?.body)).toBe(true);
    expect(reg.body(first)?.digest).toBe(digestOf(reg.get(first)?.body as Buffer).toString('base64url'));
    reg.kvLoaded(first, { small: 'kv' }, 2);
    expect(reg.body(first)?.body.toString()).toContain('"small":"kv"');
    expect(reg.body(first)?.digest).toBe(digestOf(reg.get(first)?.body as string).toString('base64url'));
  });
});
