import { Readable } from 'node:stream';
import type { Snowflake } from '../presence/model.js';
import type { PresenceSnapshot } from '../presence/registry/snapshot.js';
import { isSnowflake } from '../presence/snowflake.js';
import { ApiError } from './errors.js';

/** Distinct ids one bulk read may ask for. */
export const MAX_BULK_IDS = 50;

/** How long a bad item may be when the refusal quotes it. */
const QUOTED_ITEM_CHARS = 40;
const ANSWER_HEAD = '{"success":true,"data":{';
const ANSWER_TAIL = '}}';

/**
 * The distinct ids of `?ids=a,b,c`, at most `max` of them, in the order first asked (`ids` given twice adds
 * to the list). Anything else is a 400 `invalid_query` saying what is wrong, found before any presence is
 * looked up.
 */
export function bulkIdsOf(query: unknown, max = MAX_BULK_IDS): Snowflake[] {
  const given = (query as { ids?: string | string[] } | null)?.ids;
  const list = Array.isArray(given) ? given.join(',') : (given ?? '');
  if (list === '') {
    throw new ApiError('invalid_query', `ids is required: 1–${max} Discord user ids, comma-separated`);
  }
  const ids = new Set<Snowflake>();
  let position = 0;
  for (const item of list.split(',')) {
    position++;
    if (item === '') {
      throw new ApiError('invalid_query', `ids has an empty item at position ${position}: a comma too many`);
    }
    if (!isSnowflake(item)) {
      const quoted = JSON.stringify(item.slice(0, QUOTED_ITEM_CHARS));
      throw new ApiError('invalid_query', `ids item ${position}, ${quoted}, is not a Discord user id`);
    }
    ids.add(item);
    if (ids.size > max) {
      throw new ApiError('invalid_query', `ids names more than ${max} distinct users; ask in batches`);
    }
  }
  return [...ids];
}

/** A bulk read's answer, before it is sent: its bytes as the pieces they are held in. */
export interface BulkAnswer {
  /** The envelope in ASCII text, or, when a presence is held as bytes, every piece in order. */
  body: string | (string | Buffer)[];
  /** In bytes. */
  length: number;
}

/**
 * `{"success":true,"data":{"<id>":presence,…}}` of the presences found, in the order asked, spliced from the
 * JSON each snapshot holds: no presence is parsed or serialized again, and a large one (held as bytes) is
 * written from its own buffer rather than copied into a new one.
 */
export function bulkAnswer(found: readonly (readonly [Snowflake, PresenceSnapshot])[]): BulkAnswer {
  const pieces: (string | Buffer)[] = [];
  let text = ANSWER_HEAD;
  let length = 0;
  for (let i = 0; i < found.length; i++) {
    const [id, snapshot] = found[i] as readonly [Snowflake, PresenceSnapshot];
    text += `${i === 0 ? '' : ','}"${id}":`;
    const json = snapshot.jsonData();
    if (typeof json === 'string') {
      text += json;
      continue;
    }
    // Held text is ASCII: its length is its length in bytes.
    pieces.push(text, json);
    length += text.length + json.length;
    text = '';
  }
  text += ANSWER_TAIL;
  length += text.length;
  if (pieces.length === 0) return { body: text, length };
  pieces.push(text);
  return { body: pieces, length };
}

/** The pieces as a stream the response reads as it can send them. */
export function streamOf(pieces: readonly (string | Buffer)[]): Readable {
  return Readable.from(pieces, { objectMode: false });
}
