import { browserScript, EMBED_SCRIPT } from '../browser-scripts.js';
import { bodyEtag } from '../etag.js';

export interface EmbedBundle {
  body: Buffer;
  etag: string;
}

let embed: EmbedBundle | null = null;

/** embed.js and its ETag, for its route (it keeps one address, so it is revalidated by ETag). */
export async function embedBundle(): Promise<EmbedBundle> {
  if (embed === null) {
    const body = browserScript(EMBED_SCRIPT);
    embed = { body, etag: bodyEtag(body) };
  }
  return embed;
}
