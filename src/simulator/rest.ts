import { createHash } from 'node:crypto';
import type {
  APIGatewayBotInfo,
  APIMessage,
  APIUser,
  RESTPostAPIChannelMessageJSONBody,
  RESTPostAPICurrentUserCreateDMChannelJSONBody,
} from 'discord-api-types/v10';
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import { isSnowflake, type SimChannel, type SimulatorState } from './state.js';

/** Discord's REST v10, the part a bot like Presently uses. Registered under `/api/v10`. */

/** Discord's JSON error codes used here. */
export const RestErrorCodes = {
  General: 0,
  UnknownChannel: 10003,
  UnknownGuild: 10004,
  UnknownMessage: 10008,
  UnknownUser: 10013,
  UnknownWebhook: 10015,
  UnknownInteraction: 10062,
  RequestEntityTooLarge: 40005,
  InteractionAlreadyAcknowledged: 40060,
  MissingAccess: 50001,
  CannotSendEmptyMessage: 50006,
  CannotSendMessagesToThisUser: 50007,
  InvalidRecipients: 50033,
  InvalidFormBody: 50035,
} as const;

export const MAX_MESSAGE_LENGTH = 2000;

export interface RateLimitOptions {
  /** Requests per window per bucket. */
  limit: number;
  windowMs: number;
}

export interface RestContext {
  token: string;
  state: SimulatorState;
  gatewayUrl(): string;
  shardCount: number;
  maxConcurrency: number;
  /** The bot's daily session starts now: the window's total, what is left of it, and when it resets. */
  sessionStarts(): { total: number; remaining: number; resetAfterMs: number };
  rateLimit: RateLimitOptions;
  /** Records a message the bot posts (and echoes it on the gateway); answered once its readers are done. */
  postMessage(channel: SimChannel, body: RESTPostAPIChannelMessageJSONBody): Promise<APIMessage>;
  /** More routes under the same prefix, behind the same authentication and buckets. */
  routes?: FastifyPluginCallback;
}

export interface FormError {
  code: string;
  message: string;
}

/** A 400's `errors`: nested like the body it refuses, each field's own errors under `_errors`. */
export interface FormErrors {
  [field: string]: FormErrors | FormError[] | undefined;
}

export interface DiscordError {
  message: string;
  code: number;
  errors?: FormErrors;
  /** 429 only: seconds. */
  retry_after?: number;
  global?: boolean;
}

export function sendError(reply: FastifyReply, status: number, error: DiscordError): FastifyReply {
  return reply.code(status).type('application/json').send(error);
}

function invalidFormBody(field: string, code: string, message: string): DiscordError {
  return {
    message: 'Invalid Form Body',
    code: RestErrorCodes.InvalidFormBody,
    errors: { [field]: { _errors: [{ code, message }] } },
  };
}

/** Routes that need no token. */
const PUBLIC_ROUTES = new Set(['GET /gateway']);
/** Routes a token in the path authenticates (an interaction's), not the bot's. */
const TOKEN_ROUTE = /^\/(?:interactions|webhooks)\//;

export function restRoutes(context: RestContext): FastifyPluginCallback {
  return (app: FastifyInstance, _options, done) => {
    const limiter = new RateLimiter(context.rateLimit);

    app.addHook('onRequest', async (request, reply) => {
      const route = routeOf(request);
      if (route === null || PUBLIC_ROUTES.has(`${request.method} ${route}`)) return;
      const byToken = TOKEN_ROUTE.test(route);
      if (!byToken && request.headers.authorization !== `Bot ${context.token}`) {
        return sendError(reply, 401, { message: '401: Unauthorized', code: RestErrorCodes.General });
      }
      const params = request.params as Record<string, string | undefined>;
      // Buckets are per route and per major parameter: the channel, or the interaction and its token.
      const major = route.startsWith('/channels/')
        ? (params.id ?? '')
        : byToken
          ? `${params.id}/${params.token}`
          : '';
      const limit = limiter.take(`${request.method} ${route}`, major, Date.now());
      reply.headers(limit.headers);
      if (limit.retryAfterMs > 0) {
        return sendError(reply, 429, {
          message: 'You are being rate limited.',
          retry_after: limit.retryAfterMs / 1000,
          global: false,
          code: RestErrorCodes.General,
        });
      }
    });

    app.get('/gateway', async () => ({ url: context.gatewayUrl() }));

    app.get('/gateway/bot', async (): Promise<APIGatewayBotInfo> => {
      const starts = context.sessionStarts();
      return {
        url: context.gatewayUrl(),
        shards: context.shardCount,
        session_start_limit: {
          total: starts.total,
          remaining: starts.remaining,
          reset_after: starts.resetAfterMs,
          max_concurrency: context.maxConcurrency,
        },
      };
    });

    app.get('/users/@me', async () => {
      const bot = context.state.botUser;
      return {
        ...userWithProfile(context.state, bot),
        mfa_enabled: false,
        locale: 'en-US',
        premium_type: 0,
        email: null,
        verified: true,
      };
    });

    app.get<{ Params: { id: string } }>('/users/:id', async (request, reply) => {
      const { id } = request.params;
      if (!isSnowflake(id)) {
        return sendError(
          reply,
          400,
          invalidFormBody('user_id', 'NUMBER_TYPE_COERCE', `Value "${id}" is not snowflake.`),
        );
      }
      const user = context.state.users.get(id);
      if (!user) return sendError(reply, 404, { message: 'Unknown User', code: RestErrorCodes.UnknownUser });
      return userWithProfile(context.state, user);
    });

    app.post('/users/@me/channels', async (request, reply) => {
      const body = request.body as Partial<RESTPostAPICurrentUserCreateDMChannelJSONBody> | undefined;
      const recipient = body?.recipient_id;
      if (typeof recipient !== 'string' || !isSnowflake(recipient)) {
        return sendError(
          reply,
          400,
          invalidFormBody(
            'recipient_id',
            'NUMBER_TYPE_COERCE',
            `Value "${String(recipient)}" is not snowflake.`,
          ),
        );
      }
      if (!context.state.users.has(recipient) || recipient === context.state.botUserId) {
        return sendError(reply, 400, {
          message: 'Invalid Recipient(s)',
          code: RestErrorCodes.InvalidRecipients,
        });
      }
      return context.state.channelPayload(context.state.dmChannelFor(recipient));
    });

    app.get<{ Params: { id: string } }>('/channels/:id', async (request, reply) => {
      const channel = context.state.channels.get(request.params.id);
      if (!channel)
        return sendError(reply, 404, { message: 'Unknown Channel', code: RestErrorCodes.UnknownChannel });
      return context.state.channelPayload(channel);
    });

    app.post<{ Params: { id: string } }>('/channels/:id/messages', async (request, reply) => {
      const channel = context.state.channels.get(request.params.id);
      if (!channel)
        return sendError(reply, 404, { message: 'Unknown Channel', code: RestErrorCodes.UnknownChannel });
      const body = request.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return sendError(reply, 400, { message: '400: Bad Request', code: RestErrorCodes.General });
      }
      const refusal = context.state.messageRefusals.get(channel.id)?.shift();
      if (refusal) {
        return sendError(reply, refusal.status, { message: refusal.message, code: refusal.code });
      }
      if (channel.recipientId !== null && context.state.closedDms.has(channel.recipientId)) {
        return sendError(reply, 403, {
          message: 'Cannot send messages to this user',
          code: RestErrorCodes.CannotSendMessagesToThisUser,
        });
      }
      const message = body as RESTPostAPIChannelMessageJSONBody;
      if (message.content !== undefined && typeof message.content !== 'string') {
        return sendError(
          reply,
          400,
          invalidFormBody('content', 'STRING_TYPE_CONVERT', 'Could not interpret as string.'),
        );
      }
      if (message.content !== undefined && [...message.content].length > MAX_MESSAGE_LENGTH) {
        return sendError(
          reply,
          400,
          invalidFormBody(
            'content',
            'BASE_TYPE_MAX_LENGTH',
            `Must be ${MAX_MESSAGE_LENGTH} or fewer in length.`,
          ),
        );
      }
      const empty =
        !message.content &&
        !message.embeds?.length &&
        !message.components?.length &&
        !message.sticker_ids?.length &&
        !message.attachments?.length &&
        !message.poll;
      if (empty) {
        return sendError(reply, 400, {
          message: 'Cannot send an empty message',
          code: RestErrorCodes.CannotSendEmptyMessage,
        });
      }
      return context.postMessage(channel, message);
    });

    if (context.routes) app.register(context.routes);
    done();
  };
}

/** `GET /users/:id`: the gateway's user plus the profile fields only REST has. */
function userWithProfile(state: SimulatorState, user: APIUser): APIUser & { banner_color: string | null } {
  const profile = state.profileOf(user.id);
  return {
    ...user,
    banner: profile.banner,
    accent_color: profile.accent_color,
    banner_color:
      profile.accent_color === null ? null : `#${profile.accent_color.toString(16).padStart(6, '0')}`,
  };
}

/** The matched route's template relative to the plugin prefix, e.g. `/users/:id`; null when none matched. */
export function routeOf(request: FastifyRequest, prefix = '/api/v10'): string | null {
  const url = request.routeOptions.url;
  if (url === undefined || !url.startsWith(prefix)) return null;
  return url.slice(prefix.length) || '/';
}

interface Bucket {
  count: number;
  resetAt: number;
}

/**
 * Fixed-window buckets keyed like Discord's: route and major parameter. Answers with the X-RateLimit-*
 * headers @discordjs/rest reads to pace itself; past the limit, a 429 with Retry-After.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly options: RateLimitOptions) {}

  take(route: string, major: string, now: number): { headers: Record<string, string>; retryAfterMs: number } {
    const key = `${route}:${major}`;
    let bucket = this.buckets.get(key);
    if (!bucket || bucket.resetAt <= now) {
      bucket = { count: 0, resetAt: now + this.options.windowMs };
      this.buckets.set(key, bucket);
    }
    const limited = bucket.count >= this.options.limit;
    if (!limited) bucket.count++;
    const resetAfter = (bucket.resetAt - now) / 1000;
    const headers: Record<string, string> = {
      'x-ratelimit-limit': String(this.options.limit),
      'x-ratelimit-remaining': String(Math.max(0, this.options.limit - bucket.count)),
      'x-ratelimit-reset': (bucket.resetAt / 1000).toFixed(3),
      'x-ratelimit-reset-after': resetAfter.toFixed(3),
      'x-ratelimit-bucket': createHash('sha1').update(route).digest('hex').slice(0, 32),
    };
    if (limited) {
      headers['retry-after'] = String(Math.ceil(resetAfter));
      headers['x-ratelimit-scope'] = 'user';
    }
    if (this.buckets.size > 10_000) this.sweep(now);
    return { headers, retryAfterMs: limited ? bucket.resetAt - now : 0 };
  }

  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) if (bucket.resetAt <= now) this.buckets.delete(key);
  }
}
