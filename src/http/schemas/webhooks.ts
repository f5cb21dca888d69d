import { WEBHOOK_EVENTS } from '../../model/webhook.js';
import { DELIVERIES_KEPT } from '../../webhooks/rules.js';
import { WEBHOOK_URL_MAX_LENGTH } from '../../webhooks/target.js';
import { epochMs, nullableEpochMs } from './presence.js';

/** What the webhook routes take and answer, as JSON Schema for the OpenAPI document. */

const webhookId = {
  type: 'string',
  pattern: '^wh_[A-Za-z0-9_-]{16}$',
  examples: ['wh_3kTq9ZcVb1xWm0aR'],
} as const;

const events = {
  type: 'array',
  items: { type: 'string', enum: [...WEBHOOK_EVENTS] },
  minItems: 1,
  uniqueItems: true,
  description:
    '`presence`: every change of the presence (as a socket gets it); `now_playing`: the track changed, or music started or stopped; `kv`: the KV was written',
} as const;

const url = {
  type: 'string',
  maxLength: WEBHOOK_URL_MAX_LENGTH,
  description: 'where deliveries are POSTed: `https://`, to a public address',
  examples: ['https://example.com/hooks/presently'],
} as const;

export const webhookRequestSchema = {
  type: 'object',
  properties: { url, events },
  required: ['url', 'events'],
  additionalProperties: false,
  examples: [{ url: 'https://example.com/hooks/presently', events: ['presence', 'kv'] }],
} as const;

export const createdWebhookSchema = {
  type: 'object',
  properties: {
    id: webhookId,
    url,
    events,
    secret: {
      type: 'string',
      pattern: '^whsec_[A-Za-z0-9_-]{43}$',
      description: 'signs every delivery (`Presently-Signature`); shown this once only',
    },
    created_at: epochMs,
  },
  required: ['id', 'url', 'events', 'secret', 'created_at'],
  additionalProperties: false,
} as const;

const deliverySchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'the delivery id, sent as `Presently-Delivery` with every attempt' },
    type: { type: 'string', enum: [...WEBHOOK_EVENTS] },
    status: {
      type: 'string',
      enum: ['delivered', 'retrying', 'failed'],
      description: '`retrying`: the last attempt failed and another is due at `next_attempt_at`',
    },
    attempts: { type: 'integer', minimum: 1 },
    at: { ...epochMs, description: 'when the last attempt was made' },
    response_code: { type: ['integer', 'null'], description: "the receiver's HTTP status, if it answered" },
    error: { type: ['string', 'null'], description: 'why the last attempt failed' },
    next_attempt_at: nullableEpochMs,
  },
  required: ['id', 'type', 'status', 'attempts', 'at', 'response_code', 'error', 'next_attempt_at'],
  additionalProperties: false,
} as const;

export const webhookListSchema = {
  type: 'object',
  properties: {
    webhooks: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: webhookId,
          url,
          events,
          created_at: epochMs,
          disabled_at: {
            ...nullableEpochMs,
            description: 'when deliveries stopped for good (see `disabled_reason`); null while it delivers',
          },
          disabled_reason: { type: ['string', 'null'] },
          deliveries: {
            type: 'array',
            maxItems: DELIVERIES_KEPT,
            description: `the last ${DELIVERIES_KEPT} deliveries, newest first`,
            items: deliverySchema,
          },
        },
        required: ['id', 'url', 'events', 'created_at', 'disabled_at', 'disabled_reason', 'deliveries'],
        additionalProperties: false,
      },
    },
    limit: { type: 'integer', minimum: 1, description: 'webhooks a user may have (`WEBHOOKS_PER_USER`)' },
  },
  required: ['webhooks', 'limit'],
  additionalProperties: false,
} as const;
