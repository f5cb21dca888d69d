import type { WebhookView } from '../../presence/webhook.js';
import type { Command } from './command.js';

/** URLs longer than this are cut in the listing, so five of them fit in a message. */
const SHOWN_URL_CHARS = 120;

function shownUrl(url: string): string {
  return url.length > SHOWN_URL_CHARS ? `${url.slice(0, SHOWN_URL_CHARS)}…` : url;
}

/** Discord shows `<t:seconds:R>` as a time relative to the reader's now ("3 minutes ago"). */
const when = (ms: number) => `<t:${Math.floor(ms / 1000)}:R>`;

function line(webhook: WebhookView): string {
  const head = `\`${webhook.id}\` <${shownUrl(webhook.url)}> — ${webhook.events.join(', ')}`;
  if (webhook.disabled_at !== null) {
    return `${head} — **disabled** ${when(webhook.disabled_at)}: ${webhook.disabled_reason ?? ''}`;
  }
  const last = webhook.deliveries[0];
  if (!last) return `${head} — nothing sent yet`;
  const said = last.error === null ? '' : ` (${last.error})`;
  return `${head} — last delivery ${last.status}${said} ${when(last.at)}`;
}

/** `?webhooks` lists the user's webhooks; `?webhooks remove <id>` removes one. */
export const webhooksCommand: Command = {
  name: 'webhooks',
  usage: 'webhooks [remove <id>]',
  description: 'list your webhooks, or remove one',
  where: 'dm',
  async run({ message, args, prefix, webhooks, reply }) {
    const userId = message.author.id;
    const [verb, id, ...rest] = args.split(/\s+/).filter((word) => word !== '');
    if (verb === 'remove' && id !== undefined && rest.length === 0) {
      const outcome = await webhooks.remove(userId, id);
      await reply(outcome === 'removed' ? `Removed \`${id}\`.` : 'You have no webhook with that id.');
      return;
    }
    if (verb !== undefined) {
      await reply(
        `Usage: \`${prefix}webhooks\` to list them, \`${prefix}webhooks remove <id>\` to remove one.`,
      );
      return;
    }
    const listed = await webhooks.list(userId);
    if (listed.length === 0) {
      await reply(
        'You have no webhooks. Add one through the API: `POST /v1/users/@me/webhooks` with your API key.',
      );
      return;
    }
    await reply(
      [
        `Your webhooks (${listed.length} of ${webhooks.maxPerUser}):`,
        ...listed.map(line),
        `Remove one with \`${prefix}webhooks remove <id>\`.`,
      ].join('\n'),
    );
  },
};
