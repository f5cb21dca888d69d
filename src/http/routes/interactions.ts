import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  type APIInteraction,
  type APIInteractionResponse,
  InteractionResponseType,
  InteractionType,
  MessageFlags,
} from 'discord-api-types/v10';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Delivery } from '../../discord/messenger.js';
import { ApiError } from '../errors.js';
import { jsonOf, takeJsonBodies } from '../json-body.js';
import { TAGS } from '../openapi.js';
import { errorResponses, RESPONSE_DESCRIPTION } from '../schemas/envelope.js';

/**
 * `POST /interactions`: Discord's HTTP interactions endpoint (the "Interactions Endpoint URL" of the
 * Developer Portal), for operators who take interactions over HTTP rather than the gateway. Discord signs
 * each request with the application's Ed25519 key over `X-Signature-Timestamp` + the raw body; anything
 * else is refused `401 invalid_signature`, which Discord checks by sending bad signatures on purpose.
 *
 * Everything that costs nothing comes first: the headers' shape and the timestamp are checked before a
 * byte of the body is read, the body's type and size (INTERACTION_BODY_LIMIT) before it is read whole; then one signature
 * check over the exact bytes received, and only a signed body is parsed. The route is in no rate limit's
 * scope: Discord sends every interaction from a few addresses, and a per-IP budget would refuse it.
 */

export const INTERACTIONS_PATH = '/interactions';

/**
 * Interactions are small, but a message command carries the message it was used on, mentions and all:
 * this leaves room for the largest Discord sends while no one makes us read more than this unsigned.
 */
export const INTERACTION_BODY_LIMIT = 128 * 1024;

/**
 * A signed request is taken this long either side of its timestamp, and its interaction id is remembered
 * as long: a captured request cannot run its command again, neither now (its id was seen) nor later (its
 * timestamp is too old), and a replay must have been captured less than this ago to be refused by id.
 */
export const REPLAY_WINDOW_MS = 5 * 60_000;

/**
 * Discord waits 3 s for the answer, counted from when it sent the request: its way here and the answer's
 * way back come out of them, so a handler that has not answered this long after the request arrived is
 * answered for (`DEFERRED`), with room for both. Past the 3 s, Discord shows the user "The application did
 * not respond" and the interaction's token no longer lets the handler answer at all; deferred, it may still
 * edit the original response or send follow-ups through Discord's REST for 15 minutes.
 */
export const DEFERRAL_DEADLINE_MS = 2_500;

/**
 * The answer given for a handler that did not answer in time or failed: "thinking…", seen only by the
 * user who used the command, which the handler may still replace.
 */
export const DEFERRED: APIInteractionResponse = {
  type: InteractionResponseType.DeferredChannelMessageWithSource,
  data: { flags: MessageFlags.Ephemeral },
};

/** Autocomplete cannot be deferred: its answer in their place is no suggestions. */
const NO_SUGGESTIONS: APIInteractionResponse = {
  type: InteractionResponseType.ApplicationCommandAutocompleteResult,
  data: { choices: [] },
};

const PONG = JSON.stringify({ type: InteractionResponseType.Pong });

/** 64 bytes in hex: an Ed25519 signature and nothing else. */
const SIGNATURE = /^[0-9a-f]{128}$/i;
/** Unix seconds, as Discord sends them; a 16th digit would be past the year 300,000,000. */
const TIMESTAMP = /^\d{1,15}$/;
/** 32 bytes in hex: an Ed25519 public key, as the Developer Portal shows it. */
const PUBLIC_KEY = /^[0-9a-f]{64}$/i;
/** A Discord id. */
const SNOWFLAKE = /^\d{1,20}$/;
/** How often ids whose timestamp has left the window are forgotten. */
const SWEEP_EVERY_MS = 10_000;

const JSON_TYPE = 'application/json; charset=utf-8';

export interface InteractionRouteOptions {
  /** INTERACTIONS_PUBLIC_KEY: the app's Ed25519 public key, 64 hex characters. */
  publicKey: string;
  /**
   * Runs an interaction (not PING). `respond` answers Discord's request with the callback (the first call wins; later calls resolve
   * {accepted:false, reason}); the handler may go on after responding (follow-ups go through Discord's REST, not here).
   */
  handle(interaction: APIInteraction, respond: (response: APIInteractionResponse) => Promise<Delivery>): void;
}

/** The application's key, from its hex form; throws on anything that is not 32 bytes of hex. */
export function interactionKeyOf(publicKey: string): KeyObject {
  if (!PUBLIC_KEY.test(publicKey)) {
    throw new Error('the interactions public key must be 64 hex characters (the Developer Portal shows it)');
  }
  const x = Buffer.from(publicKey, 'hex').toString('base64url');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
}

/** The ids of interactions taken, each until its timestamp leaves the window (then its timestamp refuses it). */
class SeenInteractions {
  private readonly until = new Map<string, number>();
  private sweptAt = 0;

  /** Whether `id` is new; if so it is remembered until `signedAt` (epoch ms) is out of the window. */
  first(id: string, signedAt: number, now: number): boolean {
    if (now - this.sweptAt >= SWEEP_EVERY_MS) {
      this.sweptAt = now;
      for (const [seen, until] of this.until) if (until < now) this.until.delete(seen);
    }
    const until = this.until.get(id);
    if (until !== undefined && until >= now) return false;
    this.until.set(id, signedAt + REPLAY_WINDOW_MS);
    return true;
  }
}

interface SignedHeaders {
  signature: string;
  timestamp: string;
}

const unsigned = (why: string) => new ApiError('invalid_signature', why);

/** The signature headers, if they have the shape Discord gives them and the timestamp is within the window. */
function signedHeadersOf(request: FastifyRequest, now: number): SignedHeaders {
  const signature = request.headers['x-signature-ed25519'];
  const timestamp = request.headers['x-signature-timestamp'];
  if (typeof signature !== 'string' || typeof timestamp !== 'string') {
    throw unsigned('the request carries no X-Signature-Ed25519 and X-Signature-Timestamp');
  }
  if (!SIGNATURE.test(signature)) throw unsigned('X-Signature-Ed25519 is not 128 hex characters');
  if (!TIMESTAMP.test(timestamp)) throw unsigned('X-Signature-Timestamp is not Unix seconds');
  if (Math.abs(now - Number(timestamp) * 1000) > REPLAY_WINDOW_MS) {
    throw unsigned(
      `X-Signature-Timestamp is more than ${REPLAY_WINDOW_MS / 60_000} minutes from now: a replay, or a clock that is wrong`,
    );
  }
  return { signature, timestamp };
}

/** Whether `signature` is the key's over the timestamp's bytes and the body's, exactly as they came. */
function signedBy(key: KeyObject, { signature, timestamp }: SignedHeaders, body: Buffer): boolean {
  try {
    return verify(null, Buffer.concat([Buffer.from(timestamp), body]), key, Buffer.from(signature, 'hex'));
  } catch {
    return false;
  }
}

/** The interaction in a signed body, if it has the little this route relies on: a type, and an id. */
function interactionOf(body: Buffer): APIInteraction | undefined {
  const parsed = jsonOf(body);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { type, id } = parsed as { type?: unknown; id?: unknown };
  if (!Number.isInteger(type)) return undefined;
  if (type !== InteractionType.Ping && !(typeof id === 'string' && SNOWFLAKE.test(id))) return undefined;
  return parsed as APIInteraction;
}

/** How the answer to Discord's request went: handed to the connection whole, or not. */
function deliveryOf(response: ServerResponse): Promise<Delivery> {
  return new Promise((resolve) => {
    const settle = () =>
      resolve(
        response.writableFinished
          ? { accepted: true }
          : { accepted: false, reason: 'the connection closed before the response was sent' },
      );
    if (response.writableFinished || response.destroyed) settle();
    else {
      response.once('finish', settle);
      response.once('close', settle);
    }
  });
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * The JSON Discord's request is answered with: the handler's first `respond`, or, when the handler
 * fails or lets DEFERRAL_DEADLINE_MS pass, the deferral (no suggestions for an autocomplete).
 */
function answerOf(
  interaction: APIInteraction,
  handle: InteractionRouteOptions['handle'],
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<string> {
  return new Promise((resolve) => {
    const about = { interactionId: interaction.id, interactionType: interaction.type };
    const autocomplete = interaction.type === InteractionType.ApplicationCommandAutocomplete;
    const fallback = JSON.stringify(autocomplete ? NO_SUGGESTIONS : DEFERRED);
    /** Why a `respond` now is too late; undefined while none has been given. */
    let answered: string | undefined;
    const answer = (body: string, why: string): Promise<Delivery> => {
      answered = why;
      clearTimeout(deadline);
      reply.raw.off('close', closed);
      resolve(body);
      return deliveryOf(reply.raw);
    };
    const deferred = (why: string) => {
      if (answered === undefined) {
        void answer(
          fallback,
          autocomplete
            ? `${why}, so Discord was answered for it with no suggestions`
            : `${why}, so Discord was answered for it (deferred): edit the original response or send a follow-up through Discord's REST instead`,
        );
      }
    };
    const deadline = setTimeout(
      () => {
        request.log.warn(about, 'interaction not answered in time: deferred');
        deferred(`the interaction was not answered within ${DEFERRAL_DEADLINE_MS} ms`);
      },
      Math.max(0, DEFERRAL_DEADLINE_MS - reply.elapsedTime),
    );
    // Discord gave up (or the connection broke): nobody is left to answer, nor any time to wait for.
    const closed = () => {
      if (answered !== undefined) return;
      request.log.warn(about, 'interaction request closed before it was answered');
      void answer(fallback, 'the request closed before the interaction was answered');
    };
    reply.raw.once('close', closed);
    const failed = (error: unknown) => {
      request.log.error({ ...about, err: error }, 'interaction handler failed');
      deferred('the interaction handler failed');
    };
    const respond = (response: APIInteractionResponse): Promise<Delivery> => {
      if (answered !== undefined) return Promise.resolve({ accepted: false, reason: answered });
      let body: string | undefined;
      try {
        body = JSON.stringify(response);
      } catch {}
      if (typeof body !== 'string' || !body.startsWith('{')) {
        return Promise.resolve({ accepted: false, reason: 'the response is not a JSON object' });
      }
      return answer(body, 'the interaction has been answered already');
    };
    try {
      const returned: unknown = handle(interaction, respond);
      if (isThenable(returned)) returned.then(undefined, failed);
    } catch (error) {
      failed(error);
    }
  });
}

const interactionBodySchema = {
  type: 'object',
  description:
    "Discord's interaction object, as Discord sends it (https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-object)",
  properties: {
    id: { type: 'string', description: 'the interaction id (a snowflake); absent from nothing but PING' },
    type: {
      type: 'integer',
      description: '1 PING, 2 application command, 3 message component, 4 autocomplete, 5 modal submit',
    },
  },
  required: ['type'],
} as const;

const callbackSchema = {
  [RESPONSE_DESCRIPTION]:
    'the interaction callback (not the envelope): `{"type": 1}` (PONG) to a PING; to anything else what the operator’s handler answers, or `{"type": 5, "data": {"flags": 64}}` (deferred, ephemeral) when it has not answered in time or failed',
  type: 'object',
  properties: {
    type: { type: 'integer', description: "Discord's interaction callback type" },
    data: { type: 'object', description: 'the callback data, as Discord defines it for the type' },
  },
  required: ['type'],
  examples: [{ type: 1 }, { type: 5, data: { flags: 64 } }],
} as const;

/** `POST /interactions`, signed by Discord with the application's key. */
export const interactionRoutes = (options: InteractionRouteOptions): FastifyPluginAsync => {
  // At start-up: a key that is no key stops the service then, not at Discord's first request.
  const key = interactionKeyOf(options.publicKey);
  const seen = new SeenInteractions();
  return async (app) => {
    takeJsonBodies(app);
    // Before the body is read: a request without the headers' shape, or outside the window, costs nothing.
    app.addHook('onRequest', async (request) => {
      signedHeadersOf(request, Date.now());
    });
    app.post(
      INTERACTIONS_PATH,
      {
        schema: {
          tags: [TAGS.service],
          summary: 'Discord interactions endpoint',
          description: `Served when the operator gives the application's public key (\`INTERACTIONS_PUBLIC_KEY\`), for Discord alone: set it as the application's Interactions Endpoint URL in the Developer Portal. Each request must carry \`X-Signature-Ed25519\` (hex), Discord's Ed25519 signature with the application's key over \`X-Signature-Timestamp\` (Unix seconds) followed by the raw body; one without it, with a timestamp more than ${REPLAY_WINDOW_MS / 60_000} minutes from now, or repeating an interaction already received is refused \`401 invalid_signature\`. A PING is answered PONG; any other interaction with its callback, within Discord's 3 s. Bodies up to ${INTERACTION_BODY_LIMIT / 1024} KiB of JSON. No rate limit applies: the signature is the gate.`,
          requestBody: { content: { 'application/json': { schema: interactionBodySchema } } },
          response: {
            200: callbackSchema,
            ...errorResponses(['invalid_signature', 'payload_too_large', 'unsupported_media_type']),
          },
        },
        bodyLimit: INTERACTION_BODY_LIMIT,
      },
      async (request, reply) => {
        const now = Date.now();
        const headers = signedHeadersOf(request, now);
        const body = request.body instanceof Buffer ? request.body : Buffer.alloc(0);
        if (!signedBy(key, headers, body)) {
          throw unsigned("X-Signature-Ed25519 is not the application's signature of this request");
        }
        const interaction = interactionOf(body);
        if (interaction === undefined) {
          throw new ApiError(
            'bad_request',
            'the body is not an interaction: a JSON object with a type and an id',
          );
        }
        reply.type(JSON_TYPE).header('cache-control', 'no-store');
        // A PING does nothing and is answered the same every time: no id of it need be remembered.
        if (interaction.type === InteractionType.Ping) return reply.send(PONG);
        if (!seen.first(interaction.id, Number(headers.timestamp) * 1000, now)) {
          throw unsigned('this interaction has been received already: a replay is not run again');
        }
        return reply.send(await answerOf(interaction, options.handle, request, reply));
      },
    );
  };
};
