import type { Redis } from 'ioredis';
import { RedisWindowCounter, UNCOUNTED, type WindowCount } from './window-counter.js';

/**
 * Clients one window counts at most: one first seen once the window holds this many is let through
 * uncounted rather than letting a flood of addresses grow the process without bound.
 */
export const MAX_CLIENTS_PER_WINDOW = 1_000_000;

/** How often a node of a scale-out deployment adds its reads to the shared counts and reads them back. */
export const READ_SYNC_MS = 1_000;

/** Slots a window's table starts with, as a power of two (it doubles when half full). */
const FIRST_BITS = 10;
/** A slot's cells: the client's number (0: free), its reads this window, those not yet synced, padding. */
const CELLS = 4;
const USED = 1;
const UNSYNCED = 2;
/**
 * Clients that are not an IPv4 address (an IPv6 /64, "unknown") are numbered in 0.0.0.0/8, which is never
 * a source address, so every client has a 32-bit number.
 */
const OTHER_CLIENTS = 1 << 24;
/** The longest client that is not an IPv4 address: an IPv6 address's text. */
const MAX_OTHER_NAME = 45;
/** clientAddressOf's name for a peer whose socket is gone. */
const UNKNOWN = 'unknown';
/**
 * What a client that is neither an address nor `unknown` is counted as, all such together: the names a
 * window keeps are addresses, never text a client chose.
 */
const NOT_AN_ADDRESS = 'invalid';

export interface SharedReads {
  /** A connection that fails at once while Redis is away (ClusterLink.limiter). */
  redis: Redis;
  prefix: string;
  /** Default READ_SYNC_MS. */
  syncMs?: number;
}

export interface ReadBudgetOptions {
  /** Reads per window per client. */
  max: number;
  windowMs: number;
  /** Scale-out: the counts of every node, synchronized through Redis; absent: this process's alone. */
  shared?: SharedReads;
  /** Default MAX_CLIENTS_PER_WINDOW. */
  maxClients?: number;
}

/** The number of a dotted IPv4 address (`a.b.c.d`, each 0–255), or 0 for anything else. */
function ipv4Number(address: string): number {
  let number = 0;
  let part = -1;
  let dots = 0;
  for (let i = 0; i < address.length; i++) {
    const code = address.charCodeAt(i);
    if (code === 46) {
      if (part < 0 || dots === 3) return 0;
      number = number * 256 + part;
      part = -1;
      dots++;
    } else if (code >= 48 && code <= 57) {
      part = (part < 0 ? 0 : part * 10) + code - 48;
      if (part > 255) return 0;
    } else {
      return 0;
    }
  }
  return dots === 3 && part >= 0 ? number * 256 + part : 0;
}

/** Whether `name` can be an IPv6 client's text (hex digits, colons, a dotted IPv4 tail) or `unknown`. */
function isOtherName(name: string): boolean {
  if (name.length > MAX_OTHER_NAME) return false;
  if (name === UNKNOWN) return true;
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    const digitColonOrDot = (code >= 48 && code <= 58) || code === 46;
    const hex = (code >= 97 && code <= 102) || (code >= 65 && code <= 70);
    if (!digitColonOrDot && !hex) return false;
  }
  return true;
}

function dotted(number: number): string {
  return `${number >>> 24}.${(number >>> 16) & 255}.${(number >>> 8) & 255}.${number & 255}`;
}

/**
 * Reads per client per window, counted in this process and decided at once: a `charge` is a probe of an
 * open-addressing table in a typed array, no promise, no allocation (but for the first read of a client that
 * is not an IPv4 address, in a window). A client's count is 16 bytes in one
 * cache line, where a map of objects would spread it over several: with thousands of clients taking turns,
 * each read waits on memory once rather than several times. Windows are the clock's (for a minute, each
 * minute from :00), so every node agrees on them and a window's counts go all at once when it ends.
 *
 * With Redis (scale-out) each node still decides alone, from the cluster's total as it last read it plus
 * what it has counted since; every `syncMs` it adds what it counted to each client's shared count (a Redis
 * window counter keyed by the clock's window and the client, one pipelined charge a client) and takes the
 * totals back. A node's view of the others lags by at most two syncs (theirs, then its own), which bounds
 * what the nodes together admit past the limit. A sync that fails (Redis away) refuses nobody: its reads
 * are added again at the next one.
 */
export class ReadBudget {
  readonly max: number;
  private readonly windowMs: number;
  private readonly maxClients: number;
  /** Scale-out: each client's reads of every node, a count per client and window. */
  private readonly shared: RedisWindowCounter | null;
  private readonly timer: NodeJS.Timeout | null;
  private window = 0;
  private windowEnd = 0;
  /** The clock at the last charge. */
  private now = 0;
  private slots = new Uint32Array(CELLS << FIRST_BITS);
  /** The table has 2^bits slots. */
  private bits = FIRST_BITS;
  private size = 0;
  /** The numbers of the clients that are not IPv4 addresses, and their names by number. */
  private otherNumbers = new Map<string, number>();
  private otherNames: string[] = [''];
  /** The clients (their numbers, as int32) with reads to add to the shared counts, each once. */
  private unsynced: number[] = [];
  private syncing = false;

  constructor(options: ReadBudgetOptions) {
    this.max = options.max;
    this.windowMs = options.windowMs;
    this.maxClients = Math.min(options.maxClients ?? MAX_CLIENTS_PER_WINDOW, OTHER_CLIENTS - 1);
    const shared = options.shared;
    if (shared) {
      // A count outlives its window by one, so a node whose clock is a little behind still finds it.
      this.shared = new RedisWindowCounter(
        shared.redis,
        `${shared.prefix}rate-limit:read:`,
        2 * this.windowMs,
      );
      this.timer = setInterval(() => void this.sync(), shared.syncMs ?? READ_SYNC_MS).unref();
    } else {
      this.shared = null;
      this.timer = null;
    }
  }

  /**
   * Counts `reads` against `client` (a clientKey) and returns what it has read this window, these included:
   * more than `max` is over budget.
   */
  charge(client: string, reads: number): number {
    const now = Date.now();
    this.now = now;
    if (now >= this.windowEnd) this.startWindow(now);
    let number = ipv4Number(client);
    if (number < OTHER_CLIENTS) {
      const name = isOtherName(client) ? client : NOT_AN_ADDRESS;
      number = this.otherNumbers.get(name) ?? 0;
      if (number === 0) {
        if (this.size >= this.maxClients) return reads;
        number = this.otherNames.length;
        this.otherNumbers.set(name, number);
        this.otherNames.push(name);
      }
    }
    let at = this.find(number);
    if (at < 0) {
      if (this.size >= this.maxClients) return reads;
      at = this.add(number);
    }
    const slots = this.slots;
    const used = (slots[at + USED] as number) + reads;
    slots[at + USED] = used;
    if (this.shared !== null) {
      if (slots[at + UNSYNCED] === 0) this.unsynced.push(number | 0);
      slots[at + UNSYNCED] = (slots[at + UNSYNCED] as number) + reads;
    }
    return used;
  }

  /**
   * Whole seconds from the last charge until its window ends and every budget is whole again (at least 1):
   * what that charge's answer says, without reading the clock again.
   */
  secondsLeft(): number {
    return Math.max(1, Math.ceil((this.windowEnd - this.now) / 1000));
  }

  /** Clients counted in the current window. */
  get clients(): number {
    return this.size;
  }

  /** Adds this node's reads to the shared counts and takes the totals back; the timer calls it. */
  async sync(): Promise<void> {
    const shared = this.shared;
    if (shared === null || this.syncing || this.unsynced.length === 0) return;
    this.syncing = true;
    const numbers = this.unsynced.map((number) => number >>> 0);
    this.unsynced = [];
    const window = this.window;
    const sent = numbers.map((number): [string, number] => {
      const at = this.find(number);
      const reads = this.slots[at + UNSYNCED] as number;
      this.slots[at + UNSYNCED] = 0;
      return [`${window}:${this.nameOf(number)}`, reads];
    });
    let totals: WindowCount[];
    try {
      totals = await shared.chargeAll(sent);
    } finally {
      this.syncing = false;
    }
    // The window's counts are gone; the next window starts from nothing.
    if (window !== this.window) return;
    for (let i = 0; i < numbers.length; i++) {
      const number = numbers[i] as number;
      const at = this.find(number);
      const unsynced = this.slots[at + UNSYNCED] as number;
      const total = totals[i] ?? UNCOUNTED;
      if (total !== UNCOUNTED) {
        this.slots[at + USED] = Math.max(this.slots[at + USED] as number, total.count + unsynced);
        continue;
      }
      // Redis away: counted again at the next sync, refused by nobody meanwhile.
      if (unsynced === 0) this.unsynced.push(number | 0);
      this.slots[at + UNSYNCED] = unsynced + (sent[i] as [string, number])[1];
    }
  }

  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  private nameOf(number: number): string {
    return number < OTHER_CLIENTS ? (this.otherNames[number] as string) : dotted(number);
  }

  /**
   * The slot client `number` is looked for from: the top bits of a Fibonacci hash, so addresses that differ
   * in any part (a subnet's clients, or networks alike but for their first byte) land apart.
   */
  private home(number: number): number {
    return Math.imul(number, 0x9e3779b1) >>> (32 - this.bits);
  }

  /** Where the cells of client `number` begin, or -1. */
  private find(number: number): number {
    const slots = this.slots;
    const mask = (1 << this.bits) - 1;
    for (let slot = this.home(number); ; slot = (slot + 1) & mask) {
      const held = slots[slot * CELLS];
      if (held === number) return slot * CELLS;
      if (held === 0) return -1;
    }
  }

  /** Gives client `number` a slot (doubling the table when half full); returns where its cells begin. */
  private add(number: number): number {
    if (2 * (this.size + 1) > 1 << this.bits) this.grow();
    const slots = this.slots;
    const mask = (1 << this.bits) - 1;
    let slot = this.home(number);
    while (slots[slot * CELLS] !== 0) slot = (slot + 1) & mask;
    slots[slot * CELLS] = number;
    this.size++;
    return slot * CELLS;
  }

  private grow(): void {
    const old = this.slots;
    this.bits++;
    this.slots = new Uint32Array(CELLS << this.bits);
    this.size = 0;
    for (let at = 0; at < old.length; at += CELLS) {
      const number = old[at] as number;
      if (number === 0) continue;
      const to = this.add(number);
      this.slots[to + USED] = old[at + USED] as number;
      this.slots[to + UNSYNCED] = old[at + UNSYNCED] as number;
    }
  }

  private startWindow(now: number): void {
    this.window = Math.floor(now / this.windowMs);
    this.windowEnd = (this.window + 1) * this.windowMs;
    // Sized for as many clients as the last window had, so a steady load does not grow it again.
    let bits = FIRST_BITS;
    while (1 << bits < 2 * this.size) bits++;
    this.bits = bits;
    this.slots = new Uint32Array(CELLS << bits);
    this.size = 0;
    this.otherNumbers = new Map();
    this.otherNames = [''];
    this.unsynced = [];
  }
}
