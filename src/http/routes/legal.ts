import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { prefersHtml } from '../accept.js';
import { TAGS } from '../openapi.js';
import { loadPageAssets } from '../page/assets.js';
import { type InstanceFacts, privacyJson, privacyPolicy, termsJson, termsOfUse } from '../page/legal.js';
import { renderPrivacyPage, renderTermsPage } from '../page/legal-html.js';
import { errorResponses, successEnvelope } from '../schemas/envelope.js';
import { PAGE_CONTENT_SECURITY_POLICY } from './home.js';

export interface LegalRouteDeps {
  facts: InstanceFacts;
  version: string;
}

const text = { type: 'string' } as const;
const nullableText = { type: ['string', 'null'] } as const;
const sentences = { type: 'array', items: text } as const;

/** The facts of `/privacy` for a program: the configuration that decides them, and the page's sentences. */
const privacySchema = successEnvelope({
  type: 'object',
  properties: {
    operator_contact: {
      ...nullableText,
      description: 'how to reach whoever runs the instance (`OPERATOR_CONTACT`); null if not given',
    },
    command_prefix: { ...text, description: "the bot's command prefix (`COMMAND_PREFIX`)" },
    monitor: {
      type: 'string',
      enum: ['all', 'opt-in'],
      description: '`MONITOR`: everyone the bot sees, or only those who asked',
    },
    monitor_role_id: {
      ...nullableText,
      description: 'with `opt-in`: the role that opts its holders in (`MONITOR_ROLE_ID`); else null',
    },
    guild_ids: {
      type: ['array', 'null'],
      items: text,
      description: 'the only servers that count (`GUILD_IDS`); null: every server the bot is in',
    },
    allowed_user_count: {
      type: ['integer', 'null'],
      minimum: 0,
      description: 'how many users the operator allows (`ALLOWED_USER_IDS`), never who; null: no such list',
    },
    who_is_monitored: { ...sentences, description: 'who is monitored on this instance, in sentences' },
    intents: {
      type: 'array',
      description: 'the gateway intents the bot connects with',
      items: {
        type: 'object',
        properties: {
          name: { ...text, description: 'Discord’s name for it, e.g. `GUILD_PRESENCES`' },
          privileged: { type: 'boolean', description: 'one Discord reviews the apps that use' },
          why: { ...text, description: 'what the bot uses it for' },
        },
        required: ['name', 'privileged', 'why'],
        additionalProperties: false,
      },
    },
    recorded: {
      type: 'array',
      description: 'what is recorded, and how long it is kept',
      items: {
        type: 'object',
        properties: { what: text, kept: text },
        required: ['what', 'kept'],
        additionalProperties: false,
      },
    },
    retention_days: {
      type: 'integer',
      minimum: 0,
      description:
        '`RETENTION_DAYS`: days what is kept of a user no longer in any monitored server stays; 0: erased at once',
    },
    retention: { ...text, description: 'the same, in a sentence' },
    controls: {
      type: 'array',
      description: 'what a user controls, with the bot (a DM) and with the API (their key)',
      items: {
        type: 'object',
        properties: { what: text, bot: nullableText, api: nullableText },
        required: ['what', 'bot', 'api'],
        additionalProperties: false,
      },
    },
    opting_out: { ...sentences, description: 'how to stop being monitored' },
  },
  required: [
    'operator_contact',
    'command_prefix',
    'monitor',
    'monitor_role_id',
    'guild_ids',
    'allowed_user_count',
    'who_is_monitored',
    'intents',
    'recorded',
    'retention_days',
    'retention',
    'controls',
    'opting_out',
  ],
  additionalProperties: false,
});

const termsSchema = successEnvelope({
  type: 'object',
  properties: {
    operator_contact: {
      ...nullableText,
      description: 'how to reach whoever runs the instance (`OPERATOR_CONTACT`); null if not given',
    },
    rate_limits: {
      type: 'object',
      description: 'requests a minute (0: no limit)',
      properties: {
        read_per_minute: {
          type: 'integer',
          minimum: 0,
          description: 'reads per client address (`RATE_LIMIT_READ`)',
        },
        write_per_minute: {
          type: 'integer',
          minimum: 0,
          description: 'writes per API key (`RATE_LIMIT_WRITE`)',
        },
      },
      required: ['read_per_minute', 'write_per_minute'],
      additionalProperties: false,
    },
    license: { ...text, description: 'the software’s license (SPDX)' },
    terms: {
      type: 'array',
      items: {
        type: 'object',
        properties: { title: text, text },
        required: ['title', 'text'],
        additionalProperties: false,
      },
    },
  },
  required: ['operator_contact', 'rate_limits', 'license', 'terms'],
  additionalProperties: false,
});

const pageSchema = (summary: string, description: string, json: object) => ({
  tags: [TAGS.service],
  summary,
  description: `${description} One URL, two answers, chosen by \`Accept\` as for \`/\` (\`Vary: Accept\`): a browser gets the page, anything else (no \`Accept\`, \`*/*\`, JSON) its facts as JSON.`,
  response: {
    200: {
      description: 'the page (HTML), or its facts (JSON), as `Accept` prefers',
      content: {
        'text/html': { schema: { type: 'string', description: 'the page' } },
        'application/json': { schema: json },
      },
    },
    ...errorResponses([]),
  },
});

/** One page, as HTML or JSON: both made once, as the configuration they come from is fixed. */
function negotiated(page: string, json: string) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    // The page changes with the instance's configuration and version: a restart may change it.
    reply.header('vary', 'Accept').header('cache-control', 'no-cache');
    if (!prefersHtml(request.headers.accept)) {
      return reply.type('application/json; charset=utf-8').send(json);
    }
    return reply
      .header('content-security-policy', PAGE_CONTENT_SECURITY_POLICY)
      .header('referrer-policy', 'no-referrer')
      .type('text/html; charset=utf-8')
      .send(page);
  };
}

/**
 * `GET /privacy` and `GET /terms`: what this instance records and how users control it, and its terms of
 * use, from its configuration, in the landing page's style. Their stylesheet is served by the landing
 * page's routes.
 */
export const legalRoutes =
  (deps: LegalRouteDeps): FastifyPluginAsync =>
  async (app) => {
    const assets = loadPageAssets();
    const policy = privacyPolicy(deps.facts);
    const terms = termsOfUse(deps.facts);
    app.get(
      '/privacy',
      {
        schema: pageSchema(
          'Privacy on this instance',
          'What this instance records and for how long, which gateway intents its bot uses, who is monitored, and how a user controls it, from its configuration.',
          privacySchema,
        ),
      },
      negotiated(
        renderPrivacyPage(assets, policy, deps.version),
        JSON.stringify({ success: true, data: privacyJson(policy) }),
      ),
    );
    app.get(
      '/terms',
      {
        schema: pageSchema(
          'Terms of use',
          'The terms of use of this instance’s API: rate limits, abuse, no warranty, the license.',
          termsSchema,
        ),
      },
      negotiated(
        renderTermsPage(assets, terms, deps.version),
        JSON.stringify({ success: true, data: termsJson(terms) }),
      ),
    );
  };
