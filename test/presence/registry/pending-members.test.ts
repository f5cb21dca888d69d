import { describe, expect, it } from 'vitest';
import { NO_SLOT } from '../../../src/collections/snowflake-slots.js';
import { PendingMembers } from '../../../src/presence/registry/pending-members.js';

describe('PendingMembers', () => {
  it('gives the slots in the order they came, and says which were taken back after a restart', () => {
    const pending = new PendingMembers();
    pending.add(7, false);
    pending.add(2, true);
    expect(pending.count).toBe(2);
    expect([pending.next(), pending.next(), pending.next()]).toEqual([7, 2, NO_SLOT]);
    expect(pending.rendered(7)).toBe(false);
    expect(pending.rendered(2)).toBe(true);
    expect(pending.count).toBe(0);
  });

  it('forgets a slot taken back once it is pending again as a member from a listing', () => {
    const pending = new PendingMembers();
    pending.add(3, true);
    pending.add(3, false);
    expect(pending.rendered(3)).toBe(false);
  });

  it('resolves its waiters once the last one is rendered', async () => {
    const pending = new PendingMembers();
    await pending.whenNone();
    pending.add(1, false);
    let resolved = false;
    void pending.whenNone().then(() => {
      resolved = true;
    });
    await Promise.resolve();
    expect(resolved).toBe(false);
    pending.rendered(1);
    await Promise.resolve();
    expect(resolved).toBe(true);
  });
});
