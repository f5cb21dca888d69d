import type { HistoryReads } from '../history/reads.js';
import { recentLimit, type TopTracksPeriod, topTracksLimit } from '../model/history.js';
import type { Snowflake } from '../presence/model.js';
import { type AgentSight, type AgentViewDeps, agentSight } from './agent-view.js';

/**
 * Charges `reads` reads of the read budget to the client the call came from, as the matching REST route
 * would: null when they fit, else the refusal, in words for the agent.
 */
export type ChargeReads = (reads: number) => string | null;

export interface AgentReadsDeps extends AgentViewDeps {
  history: HistoryReads;
}

/**
 * An answer about one user or several: `json` is what the matching REST route answers under `data`, or
 * null when nobody asked for is shown; `notes` say who is not shown and why.
 */
export interface AgentAnswer {
  json: string | null;
  notes: string[];
}

/** A call refused before anything was read (the read budget is spent): the agent gets the message. */
export class AgentRefusal extends Error {
  override readonly name = 'AgentRefusal';
}

const shown = (data: unknown): AgentAnswer => ({ json: JSON.stringify(data), notes: [] });
const notShown = (sight: AgentSight & { seen: false }): AgentAnswer => ({ json: null, notes: [sight.text] });

/**
 * What the tools and the resources answer, for one call each: the call is charged first, as REST charges
 * every request; then the user is looked at as agents see them (agent-view.ts), and what is shown comes
 * from what REST serves, under the same privacy rules: the presence as rendered for everyone, history and
 * stats through HistoryReads.
 */
export class AgentReads {
  constructor(
    private readonly deps: AgentReadsDeps,
    private readonly charge: ChargeReads,
  ) {}

  presence(id: Snowflake): AgentAnswer {
    this.pay(1);
    const sight = agentSight(this.deps, id);
    return sight.seen ? { json: sight.snapshot.json, notes: [] } : notShown(sight);
  }

  /**
   * Several presences, as the bulk read answers them (one read per distinct id): `presences` by id in the
   * order asked, then the ids not shown, by why.
   */
  presences(ids: readonly Snowflake[]): AgentAnswer {
    const distinct = [...new Set(ids)];
    this.pay(distinct.length);
    const found: string[] = [];
    const notAllowed: Snowflake[] = [];
    const notMonitored: Snowflake[] = [];
    const notes: string[] = [];
    for (const id of distinct) {
      const sight = agentSight(this.deps, id);
      if (sight.seen) found.push(`${JSON.stringify(id)}:${sight.snapshot.json}`);
      else if (sight.reason === 'not_allowed') {
        notAllowed.push(id);
        notes.push(sight.text);
      } else notMonitored.push(id);
    }
    const json = `{"presences":{${found.join(',')}},"not_allowed":${JSON.stringify(notAllowed)},"not_monitored":${JSON.stringify(notMonitored)}}`;
    return { json, notes };
  }

  async history(id: Snowflake): Promise<AgentAnswer> {
    this.pay(1);
    const sight = agentSight(this.deps, id);
    return sight.seen ? shown(await this.deps.history.history(id, this.deps.view)) : notShown(sight);
  }

  async stats(id: Snowflake): Promise<AgentAnswer> {
    this.pay(1);
    const sight = agentSight(this.deps, id);
    return sight.seen ? shown(await this.deps.history.stats(id, this.deps.view)) : notShown(sight);
  }

  /** `limit` as the REST route takes it: default and bounds in recentLimit. */
  async recentTracks(id: Snowflake, limit?: number): Promise<AgentAnswer> {
    this.pay(1);
    const sight = agentSight(this.deps, id);
    if (!sight.seen) return notShown(sight);
    return shown({ recent_tracks: await this.deps.history.recent(id, this.deps.view, recentLimit(limit)) });
  }

  /** `limit` and `period` as the REST route takes them: default and bounds in topTracksLimit. */
  async topTracks(id: Snowflake, limit?: number, period?: TopTracksPeriod): Promise<AgentAnswer> {
    this.pay(1);
    const sight = agentSight(this.deps, id);
    if (!sight.seen) return notShown(sight);
    return shown({
      top_tracks: await this.deps.history.topTracks(id, this.deps.view, topTracksLimit(limit), period),
    });
  }

  private pay(reads: number): void {
    const refusal = this.charge(reads);
    if (refusal !== null) throw new AgentRefusal(refusal);
  }
}
