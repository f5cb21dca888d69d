import { describe, expect, it } from 'vitest';
import { ResponseReader } from '../../bench/lib/response-reader.js';

const response = (status: string, body: string, extra = '') =>
  `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe('the bench’s slow reader, following answers on one connection', () => {
  const stream = Buffer.from(
    response('200 OK', `{"data":"${'é'.repeat(5_000)}"}`) +
      response('429 Too Many Requests', '{"success":false}', 'retry-after: 60\r\n') +
      response('204 No Content', '') +
      response('200 OK', 'x'),
  );

  it('tells of each answer once its last byte is read, with its status and body size, whatever the chunks', () => {
    for (const size of [1, 2, 5, 17, 4096, stream.length]) {
      const answers: Array<[number, number]> = [];
      const reader = new ResponseReader((status, bytes) => answers.push([status, bytes]));
      for (let at = 0; at < stream.length; at += size) {
        reader.push(stream.subarray(at, at + size));
        // Nothing is told before the answer's last byte has arrived.
        if (at + size < stream.length) expect(answers.length).toBeLessThan(4);
      }
      expect({ size, answers }).toEqual({
        size,
        answers: [
          [200, 10_011],
          [429, 17],
          [204, 0],
          [200, 1],
        ],
      });
    }
  });

  it('tells of nothing while a body is still on its way', () => {
    const answers: number[] = [];
    const reader = new ResponseReader((status) => answers.push(status));
    const whole = Buffer.from(response('200 OK', 'y'.repeat(1_000)));
    reader.push(whole.subarray(0, whole.length - 1));
    expect(answers).toEqual([]);
    reader.push(whole.subarray(whole.length - 1));
    expect(answers).toEqual([200]);
  });
});
