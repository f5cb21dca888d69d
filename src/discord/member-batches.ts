import type { Snowflake } from '../presence/model.js';

/**
 * Discord answers at most this many members for one REQUEST_GUILD_MEMBERS by `user_ids`:
 * https://discord.com/developers/docs/events/gateway-events#request-guild-members
 */
export const MAX_USER_IDS_PER_REQUEST = 100;
/** A mass join comes as events ms apart: this gathers it, and a lone join is still asked for quickly. */
export const MEMBER_BATCH_DELAY_MS = 500;

/** Users of one guild to ask Discord for in one request. */
export interface MemberBatch {
  readonly shardId: number;
  readonly guildId: Snowflake;
  readonly userIds: ReadonlySet<Snowflake>;
}

interface Batch extends MemberBatch {
  readonly userIds: Set<Snowflake>;
  timer?: NodeJS.Timeout;
  /** Handed to `ready` already: it is waiting to be sent. */
  ready: boolean;
}

/** One guild on one shard: who is asked for, and the batch still taking ids. */
interface Guild {
  readonly shardId: number;
  readonly guildId: Snowflake;
  /** Every user in a batch of the guild not yet released: pending, waiting to be sent, or unanswered. */
  readonly asked: Set<Snowflake>;
  open?: Batch;
}

export interface MemberBatchesOptions {
  /**
   * The batch is due: full, or its delay has passed. It goes on taking ids (up to the maximum) until it is
   * `seal`ed, so a batch that waits to be sent carries the joins that came meanwhile.
   */
  ready(batch: MemberBatch): void;
}

/**
 * Gathers the users to ask Discord for, per guild, into batches of at most MAX_USER_IDS_PER_REQUEST ids:
 * a batch is due once full or once MEMBER_BATCH_DELAY_MS has passed since its first id. A user already
 * asked for in the guild (in a batch not yet sent, or sent and not answered) is not added again.
 */
export class MemberBatches {
  /** By shard and guild. */
  private readonly guilds = new Map<string, Guild>();

  constructor(private readonly options: MemberBatchesOptions) {}

  /** Asks for the user unless already asked for in the guild; returns whether they were added. */
  add(shardId: number, guildId: Snowflake, userId: Snowflake): boolean {
    const key = keyOf(shardId, guildId);
    let guild = this.guilds.get(key);
    if (!guild) {
      guild = { shardId, guildId, asked: new Set() };
      this.guilds.set(key, guild);
    }
    if (guild.asked.has(userId)) return false;
    guild.asked.add(userId);
    let batch = guild.open;
    if (!batch) {
      const opened: Batch = { shardId, guildId, userIds: new Set(), ready: false };
      opened.timer = setTimeout(() => this.due(opened), MEMBER_BATCH_DELAY_MS).unref();
      guild.open = batch = opened;
    }
    batch.userIds.add(userId);
    if (batch.userIds.size >= MAX_USER_IDS_PER_REQUEST) {
      delete guild.open;
      this.due(batch);
    }
    return true;
  }

  /** The batch is being sent: it takes no more ids. Its users stay asked for until released. */
  seal(batch: MemberBatch): void {
    const guild = this.guilds.get(keyOf(batch.shardId, batch.guildId));
    if (guild?.open === batch) delete guild.open;
    stop(batch as Batch);
  }

  /** These users' request was answered, or given up: they may be asked for again. */
  release(shardId: number, guildId: Snowflake, userIds: Iterable<Snowflake>): void {
    const key = keyOf(shardId, guildId);
    const guild = this.guilds.get(key);
    if (!guild) return;
    for (const userId of userIds) guild.asked.delete(userId);
    if (guild.asked.size === 0 && !guild.open) this.guilds.delete(key);
  }

  /** A fresh session on the shard: its batches are dropped, and nobody counts as asked for any more. */
  forgetShard(shardId: number): void {
    for (const [key, guild] of this.guilds) if (guild.shardId === shardId) this.drop(key, guild);
  }

  /** The guild is gone, or listed afresh (which answers for everyone in it). */
  forgetGuild(guildId: Snowflake): void {
    for (const [key, guild] of this.guilds) if (guild.guildId === guildId) this.drop(key, guild);
  }

  close(): void {
    for (const [key, guild] of this.guilds) this.drop(key, guild);
  }

  private due(batch: Batch): void {
    stop(batch);
    if (batch.ready) return;
    batch.ready = true;
    this.options.ready(batch);
  }

  private drop(key: string, guild: Guild): void {
    if (guild.open) stop(guild.open);
    this.guilds.delete(key);
  }
}

function stop(batch: Batch): void {
  if (batch.timer) clearTimeout(batch.timer);
  delete batch.timer;
}

function keyOf(shardId: number, guildId: Snowflake): string {
  return `${shardId}:${guildId}`;
}
