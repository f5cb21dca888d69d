import { READ_TOKEN_LABEL_MAX_CHARS, READ_TOKENS_PER_USER } from '../../keys/read-token.js';
import { epochMs } from './presence.js';

/** What the read token routes take and answer, as JSON Schema for the OpenAPI document. */

const readTokenId = {
  type: 'string',
  pattern: '^rt_[A-Za-z0-9_-]{16}$',
  description: 'names the token in the list and when it is removed; tells nothing of the token',
  examples: ['rt_Vb1xWm0aR3kTq9Zc'],
} as const;

const label = {
  type: ['string', 'null'],
  minLength: 1,
  maxLength: READ_TOKEN_LABEL_MAX_CHARS,
  description: `what the token is for, as its owner wrote it: plain text, 1–${READ_TOKEN_LABEL_MAX_CHARS} characters; null without one`,
  examples: ['README card'],
} as const;

export const readTokenRequestSchema = {
  type: 'object',
  properties: { label },
  additionalProperties: false,
  description: 'optional: an empty body makes a token without a label',
  examples: [{ label: 'README card' }],
} as const;

export const createdReadTokenSchema = {
  type: 'object',
  properties: {
    id: readTokenId,
    token: {
      type: 'string',
      pattern: '^prt_[A-Za-z0-9_-]{43}$',
      description:
        'reads you while you are private, as `Authorization: Bearer prt_…` or `?token=prt_…`; shown this once only',
    },
    label,
    created_at: epochMs,
  },
  required: ['id', 'token', 'label', 'created_at'],
  additionalProperties: false,
} as const;

export const readTokenListSchema = {
  type: 'object',
  properties: {
    read_tokens: {
      type: 'array',
      description: 'oldest first; never the tokens themselves',
      items: {
        type: 'object',
        properties: { id: readTokenId, label, created_at: epochMs },
        required: ['id', 'label', 'created_at'],
        additionalProperties: false,
      },
      maxItems: READ_TOKENS_PER_USER,
    },
    limit: {
      type: 'integer',
      description: 'how many tokens one user may hold',
      examples: [READ_TOKENS_PER_USER],
    },
  },
  required: ['read_tokens', 'limit'],
  additionalProperties: false,
} as const;
