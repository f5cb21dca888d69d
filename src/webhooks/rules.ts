import { WEBHOOK_EVENTS, type WebhookEvent } from '../model/webhook.js';

/** The body of `POST /v1/users/@me/webhooks`, at most. */
export const WEBHOOK_BODY_LIMIT = 8 * 1024;
/** Webhooks one user may have, unless WEBHOOKS_PER_USER says otherwise. */
export const DEFAULT_WEBHOOKS_PER_USER = 5;
export const WEBHOOKS_PER_USER_MAX = 100;
/** Deliveries kept, and shown, per webhook. */
export const DELIVERIES_KEPT = 20;

/** Why a webhook was not added, in the API's error codes. */
export type WebhookRejection =
  | { code: 'invalid_webhook'; message: string }
  | { code: 'invalid_webhook_url'; message: string }
  | { code: 'webhook_limit_exceeded'; message: string };

/** What a new webhook asks for, once its shape is checked (the URL is checked by target.ts). */
export interface WebhookRequest {
  url: string;
  events: WebhookEvent[];
}

const invalid = (message: string): WebhookRejection => ({ code: 'invalid_webhook', message });

/** `{url, events}`, `events` one or more of WEBHOOK_EVENTS, each once; nothing else. */
export function parseWebhookRequest(body: unknown): WebhookRequest | WebhookRejection {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return invalid('the body must be a JSON object: {"url": "https://…", "events": ["presence"]}');
  }
  const unknown = Object.keys(body).find((name) => name !== 'url' && name !== 'events');
  if (unknown !== undefined) return invalid(`unknown field ${JSON.stringify(unknown.slice(0, 40))}`);
  const { url, events } = body as { url?: unknown; events?: unknown };
  if (typeof url !== 'string') return invalid('`url` must be a string');
  const known = WEBHOOK_EVENTS.join(', ');
  if (!Array.isArray(events) || events.length === 0) {
    return invalid(`\`events\` must be a list of one or more of ${known}`);
  }
  const chosen = new Set<WebhookEvent>();
  for (const event of events) {
    if (!(WEBHOOK_EVENTS as readonly unknown[]).includes(event)) {
      return invalid(`${String(JSON.stringify(event)).slice(0, 40)} is not an event: use ${known}`);
    }
    chosen.add(event as WebhookEvent);
  }
  // Listed in a fixed order, whatever order they were asked in.
  return { url, events: WEBHOOK_EVENTS.filter((event) => chosen.has(event)) };
}
