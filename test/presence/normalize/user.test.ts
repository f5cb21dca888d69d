import { describe, expect, it } from 'vitest';
import type { DiscordUser } from '../../../src/presence/model.js';
import { mergeUser } from '../../../src/presence/normalize/user.js';

const ID = '80351110224678912';

function known(): DiscordUser {
  return {
    id: ID,
    username: 'nelly',
    global_name: 'Nelly',
    avatar: '8342729096ea3675442027381ff50dfe',
    discriminator: '0',
    public_flags: 131141,
    avatar_decoration_data: { asset: 'a_d3da36040163ee0f9176dfe7ced45cdc', sku_id: '1144058522808614923' },
    primary_guild: null,
  };
}

describe('mergeUser', () => {
  it('takes the first user seen as a copy without undefined fields', () => {
    const partial = { ...known(), banner: undefined };
    const merged = mergeUser(undefined, partial);
    expect(merged).toEqual(known());
    expect(merged).not.toBe(partial);
    expect(Object.keys(merged)).not.toContain('banner');
  });

  it('returns the known user itself when the partial carries only the id', () => {
    const user = known();
    expect(mergeUser(user, { id: ID })).toBe(user);
  });

  it('returns the known user itself when nothing differs, nested objects included', () => {
    const user = known();
    expect(mergeUser(user, known())).toBe(user);
    expect(mergeUser(user, { id: ID, username: 'nelly', global_name: undefined })).toBe(user);
  });

  it('merges the fields a partial carries over the known ones, without touching the known object', () => {
    const user = known();
    const merged = mergeUser(user, { id: ID, global_name: 'Nelly 🌸' });
    expect(merged).not.toBe(user);
    expect(merged).toEqual({ ...known(), global_name: 'Nelly 🌸' });
    expect(user.global_name).toBe('Nelly');
  });

  it('lets an explicit null overwrite (avatar removed), and undefined not', () => {
    const user = known();
    expect(mergeUser(user, { id: ID, avatar: null })).toEqual({ ...known(), avatar: null });
    expect(mergeUser(user, { id: ID, avatar: undefined })).toBe(user);
  });

  it('replaces a nested object whole', () => {
    const user = known();
    const merged = mergeUser(user, { id: ID, avatar_decoration_data: { asset: 'other', sku_id: '1' } });
    expect(merged.avatar_decoration_data).toEqual({ asset: 'other', sku_id: '1' });
    expect(mergeUser(merged, { id: ID, avatar_decoration_data: null }).avatar_decoration_data).toBeNull();
  });

  it('adds fields it did not know', () => {
    const user: DiscordUser = { id: ID };
    expect(mergeUser(user, { id: ID, username: 'nelly', bot: false })).toEqual({
      id: ID,
      username: 'nelly',
      bot: false,
    });
  });

  it('takes a partial for another id as a new user', () => {
    expect(mergeUser(known(), { id: '1', username: 'other' })).toEqual({ id: '1', username: 'other' });
  });

  it('keeps the known user when the partial is garbage', () => {
    const user = known();
    for (const partial of [null, undefined, 5, 'nelly', [], { username: 'x' }, { id: 5 }]) {
      expect(mergeUser(user, partial as unknown as DiscordUser)).toBe(user);
    }
    expect(mergeUser(undefined, null as unknown as DiscordUser)).toEqual({ id: '' });
  });
});
