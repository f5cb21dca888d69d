import { describe, expect, it } from 'vitest';
import { type PresenceRow, PresenceTable } from '../../../src/presence/registry/presence-table.js';
import { LARGE_BODY_BYTES, PresenceSnapshot } from '../../../src/presence/registry/snapshot.js';

const ID = '80351110224678912';

/** A rendered presence whose body is `body`, and the snapshot of its change. */
function rendered(body: string | Buffer): [PresenceRow, PresenceSnapshot] {
  const kvAt = body.length - 4;
  return [
    { body, userLength: 10, kvAt, status: 'online', clientStatus: { desktop: 'online' }, observedAt: 1 },
    new PresenceSnapshot(null, body, 1, 'online', kvAt),
  ];
}

describe('the presence table, by slot', () => {
  it('knows a pending member, kept as their listing’s payload, until a first body, small or large', () => {
    const table = new PresenceTable();
    const small = table.addPending(ID, '[1,{"id":"80351110224678912"},{"status":"online"}]');
    expect(table.isPending(small)).toBe(true);
    expect(table.pendingText(small)).toBe('[1,{"id":"80351110224678912"},{"status":"online"}]');
    table.update(small, ...rendered('{"success":true,"data":{"kv":{}}}'));
    expect(table.isPending(small)).toBe(false);
    expect(table.body(small)).toBe('{"success":true,"data":{"kv":{}}}');

    const other = '80351110224678913';
    const large = table.addPending(other, '[2,{"id":"80351110224678913"},{"status":"idle"}]');
    table.update(
      large,
      ...rendered(Buffer.from(`{"success":true,"data":{"kv":{"a":"${'x'.repeat(LARGE_BODY_BYTES)}"}}}`)),
    );
    expect(table.isPending(large)).toBe(false);
    expect(Buffer.isBuffer(table.body(large))).toBe(true);
  });

  it('hands a pending member’s slot, let go, to the next user as neither pending nor holding a body', () => {
    const table = new PresenceTable();
    const slot = table.addPending(ID, '[1,{"id":"80351110224678912"},{"status":"online"}]');
    table.remove(ID);
    const again = table.add('175928847299117063', ...rendered('{"success":true,"data":{"kv":{}}}'));
    expect(again).toBe(slot);
    expect(table.isPending(again)).toBe(false);
    expect(table.body(again)).toBe('{"success":true,"data":{"kv":{}}}');
    table.remove('175928847299117063');
    const pendingAgain = table.addPending(ID, '[3,{"id":"80351110224678912"},{"status":"dnd"}]');
    expect(table.isPending(pendingAgain)).toBe(true);
    expect(table.pendingText(pendingAgain)).toBe('[3,{"id":"80351110224678912"},{"status":"dnd"}]');
  });
});
