import { ApplicationCommandOptionType } from 'discord-api-types/v10';
import { WEBHOOK_EVENTS, type WebhookView } from '../../model/webhook.js';
import { type Command, text } from './command.js';

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

export const webhooksListCommand: Command = {
  name: 'webhooks list',
  description: 'list your webhooks and how their last delivery went',
  personal: true,
  async run({ userId, webhooks, answer, spell }) {
    const listed = await webhooks.list(userId);
    if (listed.length === 0) {
      return answer(
        `You have no webhooks. ${spell('webhooks add')} adds one, as \`POST /v1/users/@me/webhooks\` does with your API key.`,
      );
    }
    return answer(
      [
        `Your webhooks (${listed.length} of ${webhooks.maxPerUser}):`,
        ...listed.map(line),
        `${spell('webhooks remove')} removes one.`,
      ].join('\n'),
    );
  },
};

/**
 * `webhooks add`: checked as `POST /v1/users/@me/webhooks` checks its body, by the same service; the
 * signing secret is shown this once, to the user alone.
 */
export const webhooksAddCommand: Command = {
  name: 'webhooks add',
  description: 'add a webhook: Presently POSTs your changes to the URL, signed',
  options: [
    {
      type: ApplicationCommandOptionType.String,
      name: 'url',
      description: 'where to send them: https://…',
      required: true,
      max_length: 2048,
    },
    {
      type: ApplicationCommandOptionType.String,
      name: 'events',
      description: `which changes, separated by commas: ${WEBHOOK_EVENTS.join(', ')} (default: all)`,
      max_length: 100,
    },
  ],
  personal: true,
  async run({ userId, webhooks, answer }, options) {
    const words = text(options, 'events')
      .split(/[\s,]+/)
      .filter((word) => word !== '');
    const events = words.length === 0 ? [...WEBHOOK_EVENTS] : words;
    const outcome = await webhooks.create(userId, { url: text(options, 'url'), events });
    if (!outcome.ok) return answer(`Not added: ${outcome.rejection.message}.`);
    const { id, url, secret } = outcome.webhook;
    return answer(
      [
        `Added \`${id}\` for <${shownUrl(url)}> — ${outcome.webhook.events.join(', ')}.`,
        'Its signing secret, shown this once (check `Presently-Signature` with it):',
        `\`${secret}\``,
      ].join('\n'),
    );
  },
};

export const webhooksRemoveCommand: Command = {
  name: 'webhooks remove',
  description: 'remove one of your webhooks',
  options: [
    {
      type: ApplicationCommandOptionType.String,
      name: 'id',
      description: 'its id, wh_…, as the list shows it',
      required: true,
      max_length: 40,
    },
  ],
  personal: true,
  async run({ userId, webhooks, answer }, options) {
    const id = text(options, 'id');
    const outcome = await webhooks.remove(userId, id);
    return answer(outcome === 'removed' ? `Removed \`${id}\`.` : 'You have no webhook with that id.');
  },
};
