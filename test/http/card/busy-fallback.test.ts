import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rasterize } from '../../../src/card/png.js';
import { customStatusActivity } from '../../../src/simulator/activities.js';
import { insertApiKey } from '../../support/api-key.js';
import { eventually } from '../../support/eventually.js';
import { type Harness, startHarness } from '../../support/harness.js';

/**
 * A PNG card asked for while the renderer is too busy to draw it may be answered with the card drawn last,
 * but only one of the presence shown now: never one drawn before its user hid something or went private.
 */

const GUILD = '530000000000000001';
const USER = '530000000000000101';
const BLACK_SQUARE =
  '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>';

/** Fills the renderer's queue (two drawing, 256 waiting) for as long as the returned promise is pending. */
function busyRenderer(): Promise<unknown> {
  return Promise.allSettled(Array.from({ length: 300 }, () => rasterize(BLACK_SQUARE)));
}

describe('a PNG card while the renderer is busy', () => {
  let h: Harness;
  let key: string;
  const card = () => fetch(`${h.base}/v1/users/${USER}/card.png`);

  beforeAll(async () => {
    h = await startHarness({
      setup: (sim) =>
        sim.createGuild({
          id: GUILD,
          name: 'Cards',
          members: [
            {
              user: { id: USER, username: 'busy' },
              presence: {
                status: 'online',
                activities: [customStatusActivity({ text: 'drawn before', createdAt: Date.now() })],
              },
            },
          ],
        }),
    });
    await eventually(async () => expect((await fetch(`${h.base}/v1/users/${USER}`)).status).toBe(200));
    key = await insertApiKey(h.app.store, USER);
  });
  afterAll(() => h?.close());

  it('is refused, not the card drawn before, once its user hid something', async () => {
    const before = await card();
    expect(before.status).toBe(200);
    await before.arrayBuffer();
    const hidden = await fetch(`${h.base}/v1/users/@me/privacy`, {
      method: 'PATCH',
      headers: { authorization: key, 'content-type': 'application/json' },
      body: JSON.stringify({ hide_custom_status: true }),
    });
    expect(hidden.status).toBe(200);
    const busy = busyRenderer();
    const answer = await card();
    await answer.arrayBuffer();
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('1');
    await busy;
    // Once the renderer has room again, the card of the presence as it is now.
    const after = await card();
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
  });
});
