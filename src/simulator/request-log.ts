import type { FastifyRequest } from 'fastify';
import { routeOf } from './rest.js';

/** One request the simulator answered; path and route are relative to apiUrl (REST) or cdnUrl (CDN). */
export interface RequestRecord {
  kind: 'rest' | 'cdn' | 'other';
  method: string;
  path: string;
  route: string | null;
  status: number;
}

/** Requests kept; past it the oldest go, many at a time, so a long bench does not grow it for ever. */
const MAX_KEPT = 50_000;
const DROPPED_AT_ONCE = 10_000;

/** What the simulated Discord was asked, for tests to read: each request answered, and counts of them. */
export class RequestLog {
  private readonly kept: RequestRecord[] = [];
  private readonly counts = new Map<string, number>();

  /** Every request answered, oldest first. */
  get requests(): readonly RequestRecord[] {
    return this.kept;
  }

  /**
   * How many requests matched `"METHOD path"`, where path is concrete (`GET /users/123`) or a route
   * (`GET /users/:id`), relative to apiUrl or cdnUrl (`GET /avatars/:id/:file`).
   */
  count(match: string): number {
    return this.counts.get(match) ?? 0;
  }

  record(request: FastifyRequest, status: number): void {
    const { method, url } = request;
    const path = url.split('?')[0] ?? url;
    let kind: RequestRecord['kind'] = 'other';
    let relative = path;
    let route: string | null = null;
    if (path.startsWith('/api/v10/') || path === '/api/v10') {
      kind = 'rest';
      relative = path.slice('/api/v10'.length) || '/';
      route = routeOf(request, '/api/v10');
    } else if (path.startsWith('/cdn/')) {
      kind = 'cdn';
      relative = path.slice('/cdn'.length);
      route = routeOf(request, '/cdn');
    }
    this.kept.push({ kind, method, path: relative, route, status });
    if (this.kept.length > MAX_KEPT) this.kept.splice(0, DROPPED_AT_ONCE);
    const keys = new Set([`${method} ${relative}`, ...(route === null ? [] : [`${method} ${route}`])]);
    for (const key of keys) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
}
