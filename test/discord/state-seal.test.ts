import { describe, expect, it } from 'vitest';
import { openState, sealState, stateKey } from '../../src/discord/state-seal.js';
import type { SavedGatewaySession } from '../../src/store/ports.js';

/**
 * The saved gateway state is taken back only as the bot saved it: a state made or changed by anyone
 * without the bot's token (who could name their own resume URL and be sent the token) is refused.
 */

const SESSION: SavedGatewaySession = {
  shardId: 0,
  shardCount: 1,
  sessionId: 'a1b2c3',
  resumeUrl: 'wss://gateway-us-east1-b.discord.gg',
  sequence: 42,
};
const SAVED_AT = 1_780_000_000_000;
const SNAPSHOT = Buffer.from('gzipped lines');
const NODE = '0,1';

describe('the seal of the saved gateway state', () => {
  const key = stateKey('the bot token');
  const sealed = sealState(key, NODE, SAVED_AT, [SESSION], SNAPSHOT);

  it('opens to the snapshot for the same bot, moment and sessions, their keys in any order', () => {
    expect(openState(key, NODE, SAVED_AT, [SESSION], sealed)?.equals(SNAPSHOT)).toBe(true);
    const reordered = JSON.parse(JSON.stringify({ ...SESSION, resumeUrl: undefined, sessionId: undefined }));
    const same = { ...reordered, sessionId: SESSION.sessionId, resumeUrl: SESSION.resumeUrl };
    expect(openState(key, NODE, SAVED_AT, [same], sealed)?.equals(SNAPSHOT)).toBe(true);
  });

  it('refuses another resume URL, session, sequence, node, moment, snapshot or token', () => {
    const refused = [
      openState(key, NODE, SAVED_AT, [{ ...SESSION, resumeUrl: 'ws://attacker.example' }], sealed),
      openState(key, NODE, SAVED_AT, [{ ...SESSION, sessionId: 'other' }], sealed),
      openState(key, NODE, SAVED_AT, [{ ...SESSION, sequence: 43 }], sealed),
      openState(key, NODE, SAVED_AT, [], sealed),
      openState(key, NODE, SAVED_AT + 1, [SESSION], sealed),
      openState(key, '0', SAVED_AT, [SESSION], sealed),
      openState(key, NODE, SAVED_AT, [SESSION], Buffer.concat([sealed, Buffer.from('x')])),
      openState(stateKey('another token'), NODE, SAVED_AT, [SESSION], sealed),
      openState(key, NODE, SAVED_AT, [SESSION], sealed.subarray(0, 31)),
      openState(
        key,
        NODE,
        SAVED_AT,
        [SESSION],
        sealState(stateKey('another token'), NODE, SAVED_AT, [SESSION], SNAPSHOT),
      ),
    ];
    expect(refused).toEqual(refused.map(() => null));
  });
});
