import { createServer, type IncomingMessage } from 'node:http';
import cors from '@fastify/cors';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import { cardImageSources, ImageCache } from '../card/images.js';
import type { InstallLinks } from '../discord/install-links.js';
import type { RecentStatuses } from '../history/recent-status.js';
import type { ReadTokenService } from '../keys/read-tokens.js';
import type { ApiKeyService } from '../keys/service.js';
import type { KvService } from '../kv/service.js';
import { readBudgetOf } from '../limits/request-budgets.js';
import { clientAddressOf } from '../net/client-address.js';
import { lingeringClose } from '../net/lingering-close.js';
import { pipelinedTurns } from '../net/pipelined-turns.js';
import { SECURITY_HEADERS } from '../net/security-headers.js';
import { ABUSE_REFUSAL_DELAY_MS } from '../net/tarpit.js';
import type { TrustFunction } from '../net/trust-proxy.js';
import { countRequests } from '../ops/http-metrics.js';
import type { Metrics } from '../ops/metrics.js';
import type { ReadinessCheck, ShardReport } from '../ops/readiness.js';
import type { MusicApps } from '../presence/normalize/music-apps.js';
import type { PresenceView } from '../presence/registry/registry.js';
import type { PrivacyService } from '../privacy/service.js';
import type { HistoryStore } from '../store/ports.js';
import type { VersionInfo } from '../version.js';
import type { WebhookService } from '../webhooks/service.js';
import { MAX_BULK_IDS } from './bulk-read.js';
import { capConnections } from './connection-cap.js';
import { ApiError, answerClientError, installErrorHandling, sendError } from './errors.js';
import { FastReads, type RequestHandler } from './fast-read.js';
import { MALFORMED_REQUEST_OPTIONS, refuseExpectations, refuseMalformed } from './malformed-requests.js';
import { notMonitored } from './not-monitored.js';
import { registerOpenApi } from './openapi.js';
import type { OwnerReads } from './owner-reads.js';
import type { InstanceFacts } from './page/legal.js';
import type { PageExample } from './page/render.js';
import {
  limitReads,
  type RateLimitSettings,
  readChargeOf,
  readLimit,
  writeBudgetsOf,
} from './rate-limits.js';
import { RefusedWrites } from './refused-writes.js';
import { type AccountRoutes, accountReadRoutes, accountWriteRoutes } from './routes/account.js';
import { avatarRoutes } from './routes/avatar.js';
import { type CardRouteDeps, cardRoutes } from './routes/card.js';
import { type DemoBotPort, demoBotRoutes } from './routes/demo-bot.js';
import { discordInviteRoutes } from './routes/discord-invite.js';
import { docsRoutes } from './routes/docs.js';
import { embedRoutes } from './routes/embed.js';
import { type EventRouteDeps, eventRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { type HistoryPrivacy, historyRoutes } from './routes/history.js';
import { homeRoutes } from './routes/home.js';
import { type InteractionRouteOptions, interactionRoutes } from './routes/interactions.js';
import { kvRoutes } from './routes/kv.js';
import { legalRoutes } from './routes/legal.js';
import { mcpRoutes } from './routes/mcp.js';
import { metricsRoutes } from './routes/metrics.js';
import { privacyReadRoutes, privacyWriteRoutes } from './routes/privacy.js';
import { readTokenReadRoutes, readTokenWriteRoutes } from './routes/read-tokens.js';
import { trackCardRoutes } from './routes/track-cards.js';
import { userRoutes } from './routes/users.js';
import { versionRoutes } from './routes/version.js';
import { webhookReadRoutes, webhookWriteRoutes } from './routes/webhooks.js';
import {
  DEFAULT_HTTP_TIMEOUTS,
  type HttpTimeouts,
  STALLED_CONNECTION_MS,
  serverOptions,
} from './timeouts.js';

export interface HttpServerOptions {
  /** What anyone may read: private users are not in it. */
  view: PresenceView;
  /** What a user reads of themselves with their key (`@me`): private users too; absent: `view`. */
  ownView?: PresenceView;
  keys: ApiKeyService;
  kv: KvService;
  history: HistoryStore;
  /** Status changes seen that history may not have stored yet (history.ts); absent: the store alone. */
  recent?: Pick<RecentStatuses, 'get'>;
  version: VersionInfo;
  logger: Logger;
  /** Requests per minute; absent: no limits (tests of other things). */
  rateLimits?: RateLimitSettings;
  /** Whose `X-Forwarded-For` is believed (`TRUST_PROXY`); absent or null: the client is the TCP peer. */
  trustProxy?: TrustFunction | null;
  /** Concurrent connections per client (`CONNECTIONS_PER_IP`); absent or 0: no cap. */
  connectionsPerIp?: number;
  /** false on an ingest node: it answers about itself (version), not about presences. Default true. */
  serveApi?: boolean;
  /** `DISCORD_CDN_URL`, where cards fetch avatars and emoji; Discord's own CDN unless told. */
  cdnUrl?: string;
  /** `DISCORD_INVITE_URL`, where `GET /discord` redirects; absent: that route answers 404. */
  inviteUrl?: string | null;
  /** The bot's name as the gateway knows it, for `user_not_monitored`; absent or null: "the bot". */
  botName?: () => string | null;
  /** Where to add the bot, for the landing page; null until it has connected. */
  installLinks?: () => InstallLinks | null;
  /** With `MONITOR=opt-in`: the bot's prefix, for `user_not_monitored` to say how to opt in; absent: not opt-in. */
  optInPrefix?: string | null;
  /** Tests give the card route its own image cache (fetch, timeouts) and clock. */
  card?: Pick<CardRouteDeps, 'images' | 'now'>;
  /** How long an abusive client waits for a refusal; absent: ABUSE_REFUSAL_DELAY_MS. */
  abuseRefusalDelayMs?: number;
  /** Slow clients are cut off after these; absent: the defaults. */
  timeouts?: HttpTimeouts;
  /** `/metrics`, `/v1/health`, `/v1/ready` and request metrics; absent: none of them (tests of other things). */
  ops?: {
    metrics: Metrics;
    metricsToken: string | null;
    readiness: readonly ReadinessCheck[];
    /** The gateway's shards, listed by `/v1/ready`; absent on a node without one. */
    shards?: () => ShardReport[];
  };
  /** Users the landing page offers as examples (demo mode); absent: none. */
  examples?: readonly PageExample[];
  /** What `/privacy` and `/terms` say of this instance (its configuration); absent: not served. */
  instance?: InstanceFacts;
  /** The webhook routes; absent: not served. */
  webhooks?: WebhookService;
  /** The privacy settings routes; absent: not served. */
  privacy?: PrivacyService;
  /** The read token routes, and what checks a token; absent: not served, and only keys read private users. */
  readTokens?: ReadTokenService;
  /** `DELETE /v1/users/@me` and `GET /v1/users/@me/export`; absent: not served. */
  account?: AccountRoutes;
  /** What history, stats and top tracks leave out, and for whom; absent: nothing. */
  historyPrivacy?: HistoryPrivacy;
  /** The music players' applications (`*_APP_IDS`): which service a hidden application's past plays are of. */
  musicApps?: MusicApps;
  /** The Server-Sent Events routes (src/sse/); absent: not served. */
  events?: Pick<EventRouteDeps, 'hub' | 'maxIds'>;
  /** Demo mode: the landing page's "try the bot" (`POST /demo/bot`); absent: not served. */
  demoBot?: DemoBotPort;
  /** `POST /interactions`, Discord's HTTP interactions endpoint (INTERACTIONS_PUBLIC_KEY); absent or null: not served. */
  interactions?: InteractionRouteOptions | null;
}

const DISCORD_CDN_URL = 'https://cdn.discordapp.com';
/** While closing, connections whose last request has been answered are closed this often. */
const CLOSE_IDLE_EVERY_MS = 50;
/**
 * Requests still in flight this long after shutdown began are cut: history and the store still have to
 * close within the 10 s a shutdown has (main.ts), however slow a client is.
 */
export const DRAIN_TIMEOUT_MS = 5_000;

/** Methods any route answers; preflight lists them so browsers may send KV and webhook writes. */
const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** The request says a body comes, and it has not all been read. */
function hasUnreadBody(request: IncomingMessage): boolean {
  const { headers } = request;
  const announced =
    headers['transfer-encoding'] !== undefined ||
    (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  return announced && !request.complete;
}

/** Presence reads answered by the fast path, everything else by Fastify. */
function withFastReads(fastReads: FastReads, fastify: RequestHandler): RequestHandler {
  return (request, response) => {
    if (!fastReads.serve(request, response)) fastify(request, response);
  };
}

export async function buildHttpServer(options: HttpServerOptions): Promise<FastifyInstance> {
  const trust = options.trustProxy ?? null;
  const clientAddress = clientAddressOf(trust);
  const fastReads = new FastReads(options.view, clientAddress, options.ops?.metrics);
  const limits: RateLimitSettings = {
    ...(options.rateLimits ?? { read: 0, write: 0 }),
    heldRefusalMs: options.abuseRefusalDelayMs ?? ABUSE_REFUSAL_DELAY_MS,
  };
  const refused =
    limits.write > 0
      ? new RefusedWrites(limits.write, {
          ...(options.ops ? { metrics: options.ops.metrics } : {}),
          delayMs: options.abuseRefusalDelayMs ?? ABUSE_REFUSAL_DELAY_MS,
        })
      : null;
  const app: FastifyInstance = Fastify({
    serverFactory: (handler) => {
      const api = refused ? refused.handler(options.keys, clientAddress, handler) : handler;
      const serve = options.serveApi === false ? handler : withFastReads(fastReads, api);
      const server = createServer(
        { ...serverOptions(options.timeouts ?? DEFAULT_HTTP_TIMEOUTS), ...MALFORMED_REQUEST_OPTIONS },
        pipelinedTurns(lingeringClose(refuseMalformed(serve))),
      );
      refuseExpectations(server);
      server.setTimeout(STALLED_CONNECTION_MS);
      capConnections(server, {
        perClient: options.connectionsPerIp ?? 0,
        isTrustedProxy: (address) => trust?.(address, 0) ?? false,
        onRefused: () => options.ops?.metrics.rateLimited('connections_per_ip'),
      });
      return server;
    },
    // request.ip: the same client address as the fast path, the limits and the socket gateway see.
    trustProxy: trust ?? false,
    loggerInstance: options.logger as FastifyBaseLogger,
    // Every line about a request says whom it came from. Made before any hook runs, so the walk of
    // X-Forwarded-For here leaves in it only what clientAddress believed when request.ip reads it.
    childLoggerFactory: (logger, bindings, childOptions, request) =>
      logger.child({ ...bindings, clientAddress: clientAddress(request) }, childOptions),
    // A line per request would cost more than the request at the read rates this service sees.
    logController: new LogController({ disableRequestLogging: true }),
    // Requests the HTTP parser refuses, before any route: answered in the envelope too.
    clientErrorHandler: answerClientError,
    // Bad URL encodings and similar: answered in the envelope like every other error.
    // Framework errors skip the hooks, CORS included, so the header is set here.
    frameworkErrors: (error, _request, reply) =>
      sendError(
        reply.header('access-control-allow-origin', '*').headers(SECURITY_HEADERS),
        new ApiError('bad_request', error.message),
      ),
    // A KV key name may be 255 characters; longer path segments are refused by the routes, not the router.
    routerOptions: { maxParamLength: 1024 },
    // A request that reaches us while we close (kept-alive, pipelined) is answered, not refused with
    // Fastify's 503 outside the envelope: the store stays open until the last connection has closed.
    return503OnClosing: false,
  });
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    fastReads.close();
    // node:http closes the connections idle when it stops listening, not those that become idle later:
    // the connection of a request in flight would stay open for the keep-alive timeout after its answer,
    // holding the shutdown up. Idle ones are closed as they appear until the server has closed.
    const server = app.server;
    if (!server.listening) {
      done();
      return;
    }
    const sweep = setInterval(() => server.closeIdleConnections(), CLOSE_IDLE_EVERY_MS).unref();
    // A request still arriving (or a client that stalls for good) is not waited for past the drain time.
    const cut = setTimeout(() => server.closeAllConnections(), DRAIN_TIMEOUT_MS).unref();
    server.once('close', () => {
      clearInterval(sweep);
      clearTimeout(cut);
    });
    done();
  });
  // Only the KV writes read a body, with parsers of their own, once the key and the budget are settled:
  // any other request's body, on any route or none, is left unread rather than parsed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  installErrorHandling(app);
  if (options.ops) countRequests(app, options.ops.metrics);
  // Before any route: the document is made of the routes registered after it.
  await registerOpenApi(app, { version: options.version.version, socket: options.serveApi !== false });
  app.addHook('onRequest', (_request, reply, done) => {
    // nosniff and a CSP that makes any answer opened as a document inert (the card sets its own).
    reply.headers(SECURITY_HEADERS);
    // Draining: a request that reached us is answered, then its connection closes (see preClose).
    if (closing) reply.header('connection', 'close');
    done();
  });
  // A body that was not read (refused before it was, or sent to a route that takes none) is not read after
  // the answer either, as keeping the connection would need: the connection closes instead, once what the
  // client was still sending has been dropped (net/lingering-close.ts).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (hasUnreadBody(request.raw)) reply.header('connection', 'close');
    done(null, payload);
  });
  // No `allowedHeaders`: the plugin then echoes Access-Control-Request-Headers, `authorization` included.
  // Not strict: an OPTIONS that is no preflight gets the CORS headers and a 204, not a plain-text 400.
  await app.register(cors, { origin: '*', methods: CORS_METHODS, maxAge: 86_400, strictPreflight: false });
  // Three budgets: every read route and every path no route serves share the per-IP one, probes and the
  // scrape have one of the same size of their own, the KV routes the per-key one.
  const readBudget = readBudgetOf(limits);
  // Counted by this node alone, and apart from reads: a client that spent its reads does not fail the
  // health checks a load balancer makes from the same address.
  const probeBudget = options.ops ? readBudgetOf({ read: limits.read, write: 0 }) : null;
  app.addHook('onClose', (_instance, done) => {
    readBudget?.close();
    probeBudget?.close();
    done();
  });
  if (readBudget) {
    fastReads.limitWith(readBudget);
    const chargeRead = readLimit(readBudget, limits);
    app.addHook('onRequest', function chargeNotFound(request, reply, done) {
      if (request.is404) chargeRead.call(this, request, reply, done);
      else done();
    });
  }
  if (options.ops) {
    // Probes and scrapers, on every role.
    const { metrics, metricsToken, readiness, shards } = options.ops;
    await app.register(async (probes) => {
      if (probeBudget) limitReads(probes, probeBudget, limits);
      await probes.register(
        healthRoutes({ readiness, draining: () => closing, ...(shards ? { shards } : {}) }),
      );
      await probes.register(metricsRoutes({ metrics, token: metricsToken }));
    });
  }
  // Who reads a private user as they do, besides `@me`: their key or one of their read tokens.
  const { historyPrivacy, readTokens } = options;
  const owner: OwnerReads | undefined = historyPrivacy && {
    ownView: options.ownView ?? options.view,
    isPrivate: (userId) => historyPrivacy.isPrivate(userId),
    keys: options.keys,
    ...(readTokens ? { tokens: readTokens } : {}),
  };
  await app.register(async (reads) => {
    if (readBudget) limitReads(reads, readBudget, limits);
    if (options.serveApi !== false) {
      const unmonitored = notMonitored({
        botName: options.botName ?? (() => null),
        inviteUrl: options.inviteUrl ?? null,
        optInPrefix: options.optInPrefix ?? null,
      });
      await reads.register(
        userRoutes({
          ...options,
          notMonitored: unmonitored,
          chargeReads: readChargeOf(readBudget, limits),
          ...(owner ? { owner } : {}),
        }),
      );
      await reads.register(
        homeRoutes({
          view: options.view,
          version: options.version.version,
          examples: options.examples ?? [],
          inviteUrl: options.inviteUrl ?? null,
          installLinks: options.installLinks ?? (() => null),
          tryBot: options.demoBot !== undefined,
          cdnUrl: options.cdnUrl ?? DISCORD_CDN_URL,
        }),
      );
      if (options.instance) {
        await reads.register(legalRoutes({ facts: options.instance, version: options.version.version }));
      }
      await reads.register(
        historyRoutes({ ...options, privacy: historyPrivacy, ...(readTokens ? { tokens: readTokens } : {}) }),
      );
      await reads.register(
        mcpRoutes({
          view: options.view,
          history: options.history,
          ...(options.recent ? { recent: options.recent } : {}),
          ...(historyPrivacy ? { privacy: historyPrivacy } : {}),
          ...(options.musicApps ? { musicApps: options.musicApps } : {}),
          notMonitored: unmonitored,
          chargeReads: readChargeOf(readBudget, limits),
          maxIds: MAX_BULK_IDS,
          version: options.version.version,
        }),
      );
      // One image cache for every card: a track's art on a track card is often the status card's.
      const cardImages =
        options.card?.images ??
        new ImageCache({
          allowedPrefixes: cardImageSources(options.cdnUrl ?? DISCORD_CDN_URL),
          logger: options.logger,
        });
      await reads.register(
        cardRoutes({
          view: options.view,
          ...(owner ? { owner } : {}),
          cdnUrl: options.cdnUrl ?? DISCORD_CDN_URL,
          ...(options.ops ? { metrics: options.ops.metrics } : {}),
          ...options.card,
          images: cardImages,
        }),
      );
      await reads.register(
        trackCardRoutes({
          view: options.view,
          ...(owner ? { owner } : {}),
          history: options.history,
          ...(historyPrivacy ? { privacy: historyPrivacy } : {}),
          ...(options.musicApps ? { musicApps: options.musicApps } : {}),
          cdnUrl: options.cdnUrl ?? DISCORD_CDN_URL,
          ...(options.ops ? { metrics: options.ops.metrics } : {}),
          ...options.card,
          images: cardImages,
        }),
      );
      await reads.register(
        avatarRoutes({
          view: options.view,
          cdnUrl: options.cdnUrl ?? DISCORD_CDN_URL,
          notMonitored: unmonitored,
        }),
      );
      await reads.register(discordInviteRoutes(options.inviteUrl ?? null));
      await reads.register(embedRoutes({ cdnUrl: options.cdnUrl ?? DISCORD_CDN_URL }));
      if (options.webhooks) {
        await reads.register(webhookReadRoutes({ keys: options.keys, webhooks: options.webhooks }));
      }
      if (options.privacy) {
        await reads.register(privacyReadRoutes({ keys: options.keys, privacy: options.privacy }));
      }
      if (options.account) {
        await reads.register(accountReadRoutes({ keys: options.keys, ...options.account }));
      }
      if (readTokens) await reads.register(readTokenReadRoutes({ keys: options.keys, tokens: readTokens }));
      if (options.events) {
        await reads.register(
          eventRoutes({
            ...options.events,
            view: options.view,
            ...(owner ? { owner } : {}),
            notMonitored: unmonitored,
            refusalDelayMs: options.abuseRefusalDelayMs ?? ABUSE_REFUSAL_DELAY_MS,
            chargeReads: readChargeOf(readBudget, limits),
          }),
        );
      }
    }
    await reads.register(versionRoutes(options.version));
    // Reads like any other GET: a page view is a few of them, and its script bundle is the largest
    // answer the service sends.
    await reads.register(docsRoutes);
  });
  // In no budget's scope: Discord sends every interaction from a few addresses; the signature is the gate.
  if (options.interactions) await app.register(interactionRoutes(options.interactions));
  if (options.demoBot) await app.register(demoBotRoutes(options.demoBot));
  if (options.serveApi !== false) {
    await app.register(async (writes) => {
      const budgets = writeBudgetsOf({ ...limits, ...(refused ? { refused } : {}) });
      await writes.register(kvRoutes({ keys: options.keys, kv: options.kv, budgets }));
      if (options.webhooks) {
        await writes.register(
          webhookWriteRoutes({ keys: options.keys, webhooks: options.webhooks, budgets }),
        );
      }
      if (options.privacy) {
        await writes.register(privacyWriteRoutes({ keys: options.keys, privacy: options.privacy, budgets }));
      }
      if (options.account) {
        await writes.register(accountWriteRoutes({ keys: options.keys, ...options.account, budgets }));
      }
      if (readTokens) {
        await writes.register(readTokenWriteRoutes({ keys: options.keys, tokens: readTokens, budgets }));
      }
    });
  }
  return app;
}
