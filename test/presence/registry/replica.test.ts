import { describe, expect, it } from 'vitest';
import type { PresenceChange } from '../../../src/presence/registry/registry.js';
import { PresenceReplica, type PublishedPresence } from '../../../src/presence/registry/replica.js';

const ALICE = '80351110224678912';
const BOB = '80351110224678913';

function published(
  userId: string,
  version: number,
  status: string | null,
  kvRevision = 0,
): PublishedPresence {
  return {
    userId,
    version,
    kvRevision,
    json: status === null ? null : JSON.stringify({ discord_status: status, kv: {} }),
  };
}

function replica(): { replica: PresenceReplica; changes: PresenceChange[] } {
  const r = new PresenceReplica();
  const changes: PresenceChange[] = [];
  r.onChange((change) => changes.push(change));
  return { replica: r, changes };
}

describe('PresenceReplica', () => {
  it('serves the published JSON as is, with the REST envelope built once', () => {
    const { replica: r } = replica();
    r.apply(published(ALICE, 1, 'online', 3));
    const snapshot = r.get(ALICE);
    expect(snapshot?.json).toBe('{"discord_status":"online","kv":{}}');
    expect(snapshot?.body.toString()).toBe('{"success":true,"data":{"discord_status":"online","kv":{}}}');
    expect(snapshot?.presence.discord_status).toBe('online');
    expect(snapshot?.version).toBe(1);
    expect(r.kvRevisionOf(ALICE)).toBe(3);
    expect(r.size).toBe(1);
  });

  it('gives a REST read the body and its digest, the next ones once a publication replaces them', () => {
    const { replica: r } = replica();
    r.apply(published(ALICE, 1, 'online'));
    const first = r.body(ALICE);
    expect(first?.body).toBe('{"success":true,"data":{"discord_status":"online","kv":{}}}');
    expect(first?.digest).toBe(r.get(ALICE)?.digest().toString('base64url'));
    r.apply(published(ALICE, 2, 'idle'));
    expect(r.body(ALICE)?.body).toContain('"idle"');
    expect(r.body(ALICE)?.digest).not.toBe(first?.digest);
    expect(r.body(BOB)).toBeUndefined();
  });

  it('announces a new user, then updates, then the removal', () => {
    const { replica: r, changes } = replica();
    r.apply(published(ALICE, 1, 'online'));
    r.apply(published(ALICE, 2, 'idle'));
    r.apply(published(ALICE, 3, null));
    expect(changes.map((change) => change.kind)).toEqual(['monitored', 'updated', 'unmonitored']);
    expect(r.get(ALICE)).toBeUndefined();
  });

  it('drops a publication older than or equal to what it holds, so a late message never rolls back', () => {
    const { replica: r, changes } = replica();
    r.apply(published(ALICE, 5, 'dnd'));
    expect(r.apply(published(ALICE, 4, 'online'))).toBe(false);
    expect(r.apply(published(ALICE, 5, 'online'))).toBe(false);
    expect(r.get(ALICE)?.presence.discord_status).toBe('dnd');
    expect(changes).toHaveLength(1);
  });

  it('takes a publication that skips versions: each carries the whole presence', () => {
    const { replica: r } = replica();
    r.apply(published(ALICE, 1, 'online'));
    expect(r.apply(published(ALICE, 7, 'idle'))).toBe(true);
    expect(r.versionOf(ALICE)).toBe(7);
  });

  it('accepts a user monitored again at a restarted version after the removal', () => {
    const { replica: r } = replica();
    r.apply(published(ALICE, 9, 'online'));
    r.apply(published(ALICE, 10, null));
    expect(r.apply(published(ALICE, 1, 'idle'))).toBe(true);
    expect(r.get(ALICE)?.presence.discord_status).toBe('idle');
  });

  it('a removal of a user it does not hold changes nothing', () => {
    const { replica: r, changes } = replica();
    expect(r.apply(published(BOB, 1, null))).toBe(false);
    expect(changes).toEqual([]);
  });

  describe('resync', () => {
    it('announces only what differs from the listing: removed, changed, new; the same stays silent', () => {
      const { replica: r, changes } = replica();
      r.apply(published(ALICE, 2, 'online'));
      r.apply(published(BOB, 1, 'idle'));
      r.apply(published('3', 1, 'dnd'));
      changes.length = 0;

      r.resync([published(ALICE, 2, 'online'), published(BOB, 4, 'dnd'), published('4', 1, 'online')]);

      expect(changes.map((change) => [change.kind, change.userId])).toEqual([
        ['updated', BOB],
        ['monitored', '4'],
        ['unmonitored', '3'],
      ]);
      expect([...r.snapshots()].map(([id]) => id).sort()).toEqual([ALICE, BOB, '4'].sort());
    });

    it('takes the listing even at a lower version: the user was re-monitored while the node was away', () => {
      const { replica: r } = replica();
      r.apply(published(ALICE, 8, 'online'));
      r.resync([published(ALICE, 2, 'idle')]);
      expect(r.get(ALICE)?.presence.discord_status).toBe('idle');
      expect(r.versionOf(ALICE)).toBe(2);
    });

    it('an empty listing removes everyone', () => {
      const { replica: r, changes } = replica();
      r.apply(published(ALICE, 1, 'online'));
      r.resync([]);
      expect(r.size).toBe(0);
      expect(changes.at(-1)?.kind).toBe('unmonitored');
    });
  });
});
