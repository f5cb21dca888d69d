import { HISTORY_LIMIT, playKeyOf, TRACKED_TRACKS_PER_USER } from '../model/history.js';
import type { Snowflake } from '../presence/model.js';
import type { PresenceView } from '../presence/registry/registry.js';
import type { PrivacyService } from '../privacy/service.js';
import type { Store } from '../store/ports.js';
import type { WebhookService } from '../webhooks/service.js';

/**
 * Pieces are this many characters or about: a large KV or history goes out as it is written, never held
 * as one string. A single value larger than this is one piece of its own.
 */
export const EXPORT_PIECE_CHARS = 16 * 1024;

export interface AccountExportOptions {
  /** What a user reads of themselves (`@me`): their presence as they are shown it. */
  view: PresenceView;
  store: Pick<Store, 'kv' | 'history' | 'profiles' | 'accounts' | 'readTokens'>;
  webhooks: Pick<WebhookService, 'list'>;
  privacy: Pick<PrivacyService, 'settings'>;
  now?: () => number;
}

/**
 * `GET /v1/users/@me/export`: everything kept about a user as one JSON document in the API's envelope,
 * written in pieces as the store is read. What it reads is bounded by the limits on what is kept: one KV
 * (`KV_MAX_BYTES`), HISTORY_LIMIT status and track entries, TRACKED_TRACKS_PER_USER play counts, and
 * `WEBHOOKS_PER_USER` webhooks with their last deliveries.
 */
export class AccountExport {
  private readonly now: () => number;

  constructor(private readonly options: AccountExportOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * The document's pieces. The user's settings, key, webhooks, profile and KV are read before this
   * resolves, so a store out of reach fails the request before any of it is answered; history is read
   * as the pieces before it are taken.
   */
  async pieces(userId: Snowflake): Promise<AsyncIterable<string | Buffer>> {
    const { store, webhooks, privacy } = this.options;
    const exportedAt = this.now();
    const [details, settings, profiles, hooks, kv, tokens] = await Promise.all([
      store.accounts.details(userId),
      privacy.settings(userId),
      store.profiles.getProfiles([userId]),
      webhooks.list(userId),
      store.kv.getKv(userId),
      store.readTokens.readTokensOf(userId),
    ]);
    // What a list of them shows: never a token, nor its hash.
    const readTokens = tokens.map(({ id, label, createdAt }) => ({ id, label, created_at: createdAt }));
    const stored = profiles.get(userId);
    const profile =
      stored === undefined
        ? null
        : {
            banner: stored.profile.banner,
            accent_color: stored.profile.accent_color,
            fetched_at: stored.fetchedAt,
          };
    const presence = this.options.view.get(userId)?.jsonData() ?? 'null';
    const head =
      `{"success":true,"data":{"user_id":${JSON.stringify(userId)},"exported_at":${exportedAt}` +
      `,"api_key":${JSON.stringify(details.key === null ? null : { created_at: details.key.createdAt })}` +
      `,"read_tokens":${JSON.stringify(readTokens)}` +
      `,"history_erased_at":${JSON.stringify(details.historyErasedAt)}` +
      `,"privacy":${JSON.stringify(settings)},"profile":${JSON.stringify(profile)},"presence":`;
    return this.rest(userId, head, presence, hooks, kv.kv);
  }

  private async *rest(
    userId: Snowflake,
    head: string,
    presence: string | Buffer,
    hooks: readonly object[],
    kv: Record<string, string>,
  ): AsyncGenerator<string | Buffer> {
    const { history } = this.options.store;
    yield head;
    // A large presence is held as bytes: it goes out as views of them, a piece at a time.
    if (typeof presence === 'string') yield presence;
    else {
      for (let at = 0; at < presence.length; at += EXPORT_PIECE_CHARS) {
        yield presence.subarray(at, at + EXPORT_PIECE_CHARS);
      }
    }
    yield* joined(
      ',"webhooks":[',
      hooks.map((webhook) => JSON.stringify(webhook)),
      ']',
    );
    yield* joined(
      ',"kv":{',
      Object.entries(kv).map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`),
      '}',
    );
    const kept = await history.history(userId, HISTORY_LIMIT);
    yield* joined(
      ',"status_history":[',
      kept.status.map((entry) => JSON.stringify(entry)),
      ']',
    );
    yield* joined(
      ',"track_history":[',
      kept.tracks.map((entry) => JSON.stringify(entry)),
      ']',
    );
    const [plays, days] = await Promise.all([
      history.topTracks(userId, 1, TRACKED_TRACKS_PER_USER),
      history.playDays(userId),
    ]);
    yield* joined(
      ',"play_counts":[',
      plays.map((play) => JSON.stringify({ ...play, plays_by_day: days.get(playKeyOf(play) ?? '') ?? {} })),
      ']',
    );
    const stats = await history.stats(userId);
    yield `,"stats":${JSON.stringify({ last_seen: stats.lastSeen, plays_day: stats.playsDay, plays: stats.plays })}}}`;
  }
}

/** `open`, the items separated by commas, then `close`, in pieces of about EXPORT_PIECE_CHARS. */
function* joined(open: string, items: readonly string[], close: string): Generator<string> {
  let piece = open;
  for (const [index, item] of items.entries()) {
    const text = index === 0 ? item : `,${item}`;
    if (piece.length > 0 && piece.length + text.length > EXPORT_PIECE_CHARS) {
      yield piece;
      piece = '';
    }
    piece += text;
  }
  yield piece + close;
}
