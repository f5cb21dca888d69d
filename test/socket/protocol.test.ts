import { describe, expect, it } from 'vitest';
import { type ClientCommand, Close, parseClientFrame } from '../../src/socket/protocol.js';

const ID = '94490510688792576';
const ID2 = '218486934151479296';
const MAX_SNOWFLAKE = '18446744073709551615';
const CAP = 5;

const parse = (frame: unknown, cap = CAP, subscribeToAll = true): ClientCommand =>
  parseClientFrame(typeof frame === 'string' ? frame : JSON.stringify(frame), {
    maxIds: cap,
    subscribeToAll,
  });

const closes = (close: (typeof Close)[keyof typeof Close]): ClientCommand => ({ op: 'close', close });

describe('parseClientFrame: valid frames', () => {
  it('op 3 is a heartbeat, whatever else it carries', () => {
    expect(parse({ op: 3 })).toEqual({ op: 'heartbeat' });
    expect(parse({ op: 3, d: null })).toEqual({ op: 'heartbeat' });
    expect(parse({ op: 3, d: 'anything', extra: [1] })).toEqual({ op: 'heartbeat' });
  });

  it('subscribe_to_id: one id, and it is the single subscription', () => {
    expect(parse({ op: 2, d: { subscribe_to_id: ID } })).toEqual({
      op: 'subscribe',
      ids: [ID],
      all: false,
      single: ID,
    });
  });

  it('subscribe_to_ids: the ids, no single', () => {
    expect(parse({ op: 2, d: { subscribe_to_ids: [ID, ID2] } })).toEqual({
      op: 'subscribe',
      ids: [ID, ID2],
      all: false,
      single: undefined,
    });
  });

  it('subscribe_to_ids may be empty', () => {
    expect(parse({ op: 2, d: { subscribe_to_ids: [] } })).toEqual({
      op: 'subscribe',
      ids: [],
      all: false,
      single: undefined,
    });
  });

  it('subscribe_to_all: true', () => {
    expect(parse({ op: 2, d: { subscribe_to_all: true } })).toEqual({
      op: 'subscribe',
      ids: [],
      all: true,
      single: undefined,
    });
  });

  it('_id and _ids together add up; with _all the answer is a map, not a single presence', () => {
    expect(parse({ op: 2, d: { subscribe_to_id: ID, subscribe_to_ids: [ID2] } })).toEqual({
      op: 'subscribe',
      ids: [ID, ID2],
      all: false,
      single: undefined,
    });
    expect(parse({ op: 2, d: { subscribe_to_id: ID, subscribe_to_all: true } })).toEqual({
      op: 'subscribe',
      ids: [ID],
      all: true,
      single: undefined,
    });
  });

  it('subscribe_to_all: false next to an id is allowed and means nothing', () => {
    expect(parse({ op: 2, d: { subscribe_to_id: ID, subscribe_to_all: false } })).toEqual({
      op: 'subscribe',
      ids: [ID],
      all: false,
      single: ID,
    });
  });

  it('accepts the smallest and the largest 64-bit snowflake', () => {
    expect(parse({ op: 2, d: { subscribe_to_ids: ['0', MAX_SNOWFLAKE] } })).toMatchObject({
      op: 'subscribe',
      ids: ['0', MAX_SNOWFLAKE],
    });
  });

  it('exactly as many ids as the cap is fine', () => {
    const ids = Array.from({ length: CAP }, (_, i) => `${1000 + i}`);
    expect(parse({ op: 2, d: { subscribe_to_ids: ids } })).toMatchObject({ op: 'subscribe', ids });
  });

  it('unknown fields inside d are ignored', () => {
    expect(parse({ op: 2, d: { subscribe_to_id: ID, foo: 'bar' }, extra: true })).toMatchObject({
      op: 'subscribe',
      ids: [ID],
    });
  });

  it('op 4: unsubscribe_from_id, _ids, _all', () => {
    expect(parse({ op: 4, d: { unsubscribe_from_id: ID } })).toEqual({
      op: 'unsubscribe',
      ids: [ID],
      all: false,
    });
    expect(parse({ op: 4, d: { unsubscribe_from_ids: [ID, ID2] } })).toEqual({
      op: 'unsubscribe',
      ids: [ID, ID2],
      all: false,
    });
    expect(parse({ op: 4, d: { unsubscribe_from_all: true } })).toEqual({
      op: 'unsubscribe',
      ids: [],
      all: true,
    });
  });

  it('the frame may be surrounded by white space', () => {
    expect(parse(`  \n{"op":3}\t `)).toEqual({ op: 'heartbeat' });
  });
});

describe('parseClientFrame: 4004 unknown_opcode', () => {
  it.each([
    ['missing op', {}],
    ['missing op with d', { d: { subscribe_to_id: ID } }],
    ['op 0 (server only)', { op: 0, d: {} }],
    ['op 1 (server only)', { op: 1, d: {} }],
    ['op 5', { op: 5, d: {} }],
    ['op -1', { op: -1 }],
    ['op 2.5', { op: 2.5, d: { subscribe_to_id: ID } }],
    ['op "2" (a string)', { op: '2', d: { subscribe_to_id: ID } }],
    ['op "3" (a string)', { op: '3' }],
    ['op null', { op: null }],
    ['op true', { op: true }],
    ['op [2]', { op: [2], d: { subscribe_to_id: ID } }],
  ])('%s', (_name, frame) => {
    expect(parse(frame)).toEqual(closes(Close.UnknownOpcode));
    expect(Close.UnknownOpcode).toEqual({ code: 4004, reason: 'unknown_opcode' });
  });
});

describe('parseClientFrame: 4005 requires_data_object', () => {
  const shapes: [string, unknown][] = [
    ['missing', undefined],
    ['null', null],
    ['an array', [ID]],
    ['an empty array', []],
    ['a string', ID],
    ['a number', 42],
    ['a boolean', true],
  ];
  it.each(shapes)('op 2 with d %s', (_name, d) => {
    expect(parse(d === undefined ? { op: 2 } : { op: 2, d })).toEqual(closes(Close.RequiresDataObject));
  });
  it.each(shapes)('op 4 with d %s', (_name, d) => {
    expect(parse(d === undefined ? { op: 4 } : { op: 4, d })).toEqual(closes(Close.RequiresDataObject));
  });
  it('is 4005 requires_data_object', () => {
    expect(Close.RequiresDataObject).toEqual({ code: 4005, reason: 'requires_data_object' });
  });
});

describe('parseClientFrame: 4006 invalid_payload', () => {
  it('is 4006 invalid_payload', () => {
    expect(Close.InvalidPayload).toEqual({ code: 4006, reason: 'invalid_payload' });
  });

  it.each(['', ' ', 'not json', '{', '{"op":2,', "{'op':3}", '{op:3}', 'undefined', 'NaN', '{"op":3}}'])(
    'not JSON: %j',
    (text) => {
      expect(parse(text)).toEqual(closes(Close.InvalidPayload));
    },
  );

  it.each(['null', '[]', '[{"op":3}]', '"op"', '42', 'true', 'false'])(
    'JSON but not an object: %s',
    (text) => {
      expect(parse(text)).toEqual(closes(Close.InvalidPayload));
    },
  );

  const badIds = [
    '',
    'abc',
    '12a',
    ' 123',
    '123 ',
    '-1',
    '+1',
    '1.5',
    '1e5',
    '0x10',
    '123456789012345678901', // 21 digits
    '18446744073709551616', // 2^64
    '99999999999999999999',
    '１２３', // full-width digits
  ];
  it.each(badIds)('subscribe_to_id not a snowflake: %j', (id) => {
    expect(parse({ op: 2, d: { subscribe_to_id: id } })).toEqual(closes(Close.InvalidPayload));
  });
  it.each(badIds)('subscribe_to_ids holding a non-snowflake: %j', (id) => {
    expect(parse({ op: 2, d: { subscribe_to_ids: [ID, id] } })).toEqual(closes(Close.InvalidPayload));
  });
  it.each(badIds)('unsubscribe_from_id / _ids not a snowflake: %j', (id) => {
    expect(parse({ op: 4, d: { unsubscribe_from_id: id } })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 4, d: { unsubscribe_from_ids: [id] } })).toEqual(closes(Close.InvalidPayload));
  });

  const notStrings: [string, unknown][] = [
    ['a number', 94490510688792576],
    ['a small number', 1],
    ['null', null],
    ['true', true],
    ['an object', { id: ID }],
    ['an array', [ID]],
  ];
  it.each(notStrings)('subscribe_to_id %s', (_name, id) => {
    expect(parse({ op: 2, d: { subscribe_to_id: id } })).toEqual(closes(Close.InvalidPayload));
  });
  it.each(notStrings)('an id in subscribe_to_ids that is %s', (_name, id) => {
    expect(parse({ op: 2, d: { subscribe_to_ids: [ID, id] } })).toEqual(closes(Close.InvalidPayload));
  });
  it.each(notStrings)('unsubscribe_from_id %s', (_name, id) => {
    expect(parse({ op: 4, d: { unsubscribe_from_id: id } })).toEqual(closes(Close.InvalidPayload));
  });

  it.each([
    ['a string', ID],
    ['an object', { 0: ID }],
    ['null', null],
    ['a number', 1],
  ])('subscribe_to_ids / unsubscribe_from_ids not an array: %s', (_name, ids) => {
    expect(parse({ op: 2, d: { subscribe_to_ids: ids } })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 4, d: { unsubscribe_from_ids: ids } })).toEqual(closes(Close.InvalidPayload));
  });

  it.each([
    ['"true"', 'true'],
    ['1', 1],
    ['0', 0],
    ['null', null],
    ['{}', {}],
  ])('subscribe_to_all / unsubscribe_from_all not a boolean: %s', (_name, all) => {
    expect(parse({ op: 2, d: { subscribe_to_all: all } })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 2, d: { subscribe_to_id: ID, subscribe_to_all: all } })).toEqual(
      closes(Close.InvalidPayload),
    );
    expect(parse({ op: 4, d: { unsubscribe_from_all: all } })).toEqual(closes(Close.InvalidPayload));
  });

  it('op 2 with no subscription field', () => {
    expect(parse({ op: 2, d: {} })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 2, d: { foo: ID } })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 2, d: { subscribe_to_all: false } })).toEqual(closes(Close.InvalidPayload));
    // op 4's fields are not op 2's
    expect(parse({ op: 2, d: { unsubscribe_from_id: ID } })).toEqual(closes(Close.InvalidPayload));
  });

  it('op 4 with no unsubscription field', () => {
    expect(parse({ op: 4, d: {} })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 4, d: { unsubscribe_from_all: false } })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 4, d: { subscribe_to_id: ID } })).toEqual(closes(Close.InvalidPayload));
  });

  it('more ids than the cap', () => {
    const ids = Array.from({ length: CAP + 1 }, (_, i) => `${1000 + i}`);
    expect(parse({ op: 2, d: { subscribe_to_ids: ids } })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 4, d: { unsubscribe_from_ids: ids } })).toEqual(closes(Close.InvalidPayload));
    expect(parse({ op: 2, d: { subscribe_to_ids: [ID, ID2] } }, 1)).toEqual(closes(Close.InvalidPayload));
  });

  it('a valid id does not save a frame whose other field is malformed', () => {
    expect(parse({ op: 2, d: { subscribe_to_id: ID, subscribe_to_ids: 'x' } })).toEqual(
      closes(Close.InvalidPayload),
    );
    expect(parse({ op: 2, d: { subscribe_to_id: 'x', subscribe_to_ids: [ID] } })).toEqual(
      closes(Close.InvalidPayload),
    );
    expect(parse({ op: 2, d: { subscribe_to_ids: [ID], subscribe_to_all: 'yes' } })).toEqual(
      closes(Close.InvalidPayload),
    );
  });
});

describe('parseClientFrame: subscribe_to_all turned off', () => {
  it('closes 4006 with a reason saying so, and leaves every other subscription alone', () => {
    expect(parse({ op: 2, d: { subscribe_to_all: true } }, CAP, false)).toEqual(
      closes(Close.SubscribeToAllOff),
    );
    expect(Close.SubscribeToAllOff.code).toBe(4006);
    expect(Close.SubscribeToAllOff.reason).toContain('subscribe_to_all is turned off');
    expect(parse({ op: 2, d: { subscribe_to_ids: [ID], subscribe_to_all: false } }, CAP, false)).toEqual({
      op: 'subscribe',
      ids: [ID],
      all: false,
      single: undefined,
    });
    expect(parse({ op: 4, d: { unsubscribe_from_all: true } }, CAP, false)).toEqual({
      op: 'unsubscribe',
      ids: [],
      all: true,
    });
  });
});
