import type { Command } from './command.js';

/** Discord's upload limit for a bot's message in a server without boosts. */
export const EXPORT_FILE_MAX_BYTES = 10 * 1024 * 1024;

/**
 * `export`: everything kept about the user, as `GET /v1/users/@me/export` answers it, in a file only they
 * see. An export larger than Discord takes is not sent in part: the user is sent to the API instead.
 */
export const exportCommand: Command = {
  name: 'export',
  description: 'everything Presently keeps about you, as a JSON file (shown to you alone)',
  personal: true,
  async run({ userId, exports, form, answer, spell }) {
    if (exports === undefined || form === 'prefix') {
      return answer(
        `${spell('export')} sends you the file; \`GET /v1/users/@me/export\` with your API key downloads it.`,
      );
    }
    const parts: Buffer[] = [];
    let bytes = 0;
    for await (const piece of await exports.pieces(userId)) {
      const part = typeof piece === 'string' ? Buffer.from(piece) : piece;
      bytes += part.length;
      if (bytes > EXPORT_FILE_MAX_BYTES) {
        return answer(
          `Your export is larger than Discord takes in a message (${EXPORT_FILE_MAX_BYTES / 1024 / 1024} MiB): download it with \`GET /v1/users/@me/export\` and your API key.`,
        );
      }
      parts.push(part);
    }
    return answer({
      content: 'Everything Presently keeps about you:',
      file: { name: `presently-${userId}.json`, data: Buffer.concat(parts) },
    });
  },
};
