import { describe, expect, it } from 'vitest';
import { type HeldPresence, HeldPresences } from '../../../src/presence/registry/held-presences.js';
import { LARGE_BODY_BYTES, PresenceSnapshot } from '../../../src/presence/registry/snapshot.js';

const ID = '80351110224678912';

/** A rendered presence whose body is `body`, and the snapshot of its change. */
function rendered(body: string | Buffer): [HeldPresence, PresenceSnapshot] {
  const kvAt = body.length - 4;
  return [
    { body, userLength: 10, kvAt, status: 'online', clientStatus: { desktop: 'online' }, observedAt: 1 },
    new PresenceSnapshot(null, body, 1, 'online', kvAt),
  ];
}

describe('presences held by slot', () => {
  it('knows a member held as their listing’s payload until their first body is stored, small or large', () => {
    const held = new HeldPresences();
    const small = held.addListed(ID, '[1,{"id":"80351110224678912"},{"status":"online"}]');
    expect(held.isListed(small)).toBe(true);
    expect(held.listedText(small)).toBe('[1,{"id":"80351110224678912"},{"status":"online"}]');
    held.update(small, ...rendered('{"success":true,"data":{"kv":{}}}'));
    expect(held.isListed(small)).toBe(false);
    expect(held.body(small)).toBe('{"success":true,"data":{"kv":{}}}');

    const other = '80351110224678913';
    const large = held.addListed(other, '[2,{"id":"80351110224678913"},{"status":"idle"}]');
    held.update(
      large,
      ...rendered(Buffer.from(`{"success":true,"data":{"kv":{"a":"${'x'.repeat(LARGE_BODY_BYTES)}"}}}`)),
    );
    expect(held.isListed(large)).toBe(false);
    expect(Buffer.isBuffer(held.body(large))).toBe(true);
  });

  it('hands a listed member’s slot, let go, to the next user as neither listed nor holding a body', () => {
    const held = new HeldPresences();
    const slot = held.addListed(ID, '[1,{"id":"80351110224678912"},{"status":"online"}]');
    held.remove(ID);
    const again = held.add('175928847299117063', ...rendered('{"success":true,"data":{"kv":{}}}'));
    expect(again).toBe(slot);
    expect(held.isListed(again)).toBe(false);
    expect(held.body(again)).toBe('{"success":true,"data":{"kv":{}}}');
    held.remove('175928847299117063');
    const listedAgain = held.addListed(ID, '[3,{"id":"80351110224678912"},{"status":"dnd"}]');
    expect(held.isListed(listedAgain)).toBe(true);
    expect(held.listedText(listedAgain)).toBe('[3,{"id":"80351110224678912"},{"status":"dnd"}]');
  });
});
