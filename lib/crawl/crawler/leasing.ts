/**
 * The crawler's lease pump (docs/design.md §5): hands each worker its next request. Workers that ask while a lease
 * call is under way wait for the next call, which leases for all of them at once (frontier `leaseMany`, at most
 * {@link MAX_LEASE_BATCH}): under load one script call serves several workers instead of one each. A busy crawler
 * also leases ahead ({@link LEASE_AHEAD_MS}): a worker then takes a request leased earlier without a call, and the
 * buffer is refilled once half empty. Those left without a request are told when more may be due.
 */
import type { Lease } from '../../frontier-model.ts';
import type { CrawlerFrontier } from '../../ports.ts';

/**
 * Most requests one lease call takes (for the workers waiting at once and those leased ahead). Lease calls are made
 * one at a time, so this and the call's round trip bound how fast a process can lease; it is set well above what one
 * task needs on the web even over a slow Redis (bench/PROFILE.md).
 */
export const MAX_LEASE_BATCH = 32;

/**
 * How far ahead a busy crawler leases: about as many requests as its workers take in this many ms (at most
 * {@link MAX_LEASE_BATCH}, at most its concurrency), so one lease call serves several pages. A crawler taking
 * fewer than one request per this many ms leases nothing ahead. Far below the restamp threshold
 * (lib/crawl/crawler/fetch-slot.ts RESTAMP_AFTER_MS): a request leased ahead is fetched well within its throttle turn.
 */
export const LEASE_AHEAD_MS = 10;

/** What a worker gets for its next turn: a request, or when to look again (null: nothing due anywhere). */
export interface NextLease {
  lease?: Lease;
  /** When this process leased it (its `now`): a lease taken ahead waited in the buffer since. */
  leasedAt?: number;
  /**
   * With a lease: more is due now (the lease call said so, or requests wait in the buffer), so a sleeping worker
   * woken now finds work (lib/crawl/crawler/idle.ts `leased`).
   */
  more?: boolean;
  nextDueMs: number | null;
  /**
   * Without a lease: work is ready only in the domains this process excluded (at their in-flight cap). The worker
   * sleeps until woken (one of their requests ends, a lease elsewhere, the poller) or `nextDueMs` if not null; the
   * spider type is not quiet.
   */
  excludedOnly?: boolean;
}

/** What one round of lease calls brought (see {@link LeasePump}'s `#lease`). */
interface Round {
  leases: Lease[];
  nextDueMs: number | null;
  dueNow: boolean;
  excludedOnly: boolean;
}

/**
 * What the lease pump reads of its crawler each time it leases: one small view of the crawler's state (the crawler's
 * own in lib/crawl/crawler/crawler.ts, a plain object in the tests).
 */
export interface LeaseState {
  /** The crawler stops: nothing is leased ahead, and requests a lease call brought beyond the waiting workers go back. */
  readonly stopping: boolean;
  /** Delivery is down (lib/crawl/crawler/gate.ts): nothing is leased ahead (a page fetched now could not be published). */
  readonly deliveryDown: boolean;
  /** Fetch slots of the process now: the most requests leased ahead. */
  readonly slots: number;
  /** Domains to lease nothing of now (their per-domain in-flight cap is reached; lib/crawl/crawler/domain-inflight.ts). */
  readonly fullDomains: readonly string[];
  /** Requests of a domain in flight in this process now (for the cap: whether a domain leased from has room left). */
  inFlight(domain: string): number;
}

export interface LeasePumpOptions {
  frontier: Pick<CrawlerFrontier, 'leaseMany' | 'release'>;
  /** Spider types to lease for, in turn. */
  spiderTypes: string[];
  /** How long a spider type that had no work at all is not asked again (ms). */
  scoutPollMs: number;
  /** Egress IP for IP-scoped throttles. */
  ip?: string;
  now: () => number;
  /** The most requests of one domain a lease call takes (the per-domain in-flight cap; 0: no limit). */
  perDomain?: number;
  state: LeaseState;
}

/**
 * The longest a spider type that keeps having no work at all goes unasked (ms): after each empty answer in a row its
 * pause doubles from `scoutPollMs` up to this (or `scoutPollMs` when that is longer), so an idle process serving
 * several types makes few lease calls that tell it nothing. New work of such a type is picked up within this.
 */
export const QUIET_MAX_MS = 500;

export class LeasePump {
  readonly #o: LeasePumpOptions;
  /** Workers waiting for their next request, served in order by one lease call at a time. */
  readonly #waiting: { resolve: (r: NextLease) => void; reject: (e: unknown) => void }[] = [];
  #leasing = false;
  /** Requests leased ahead of the workers (oldest first), with when they were leased. */
  readonly #ready: { lease: Lease; at: number }[] = [];
  /** Moving average of the ms between two requests handed to workers, and when the last one was. */
  #takeIntervalMs = 1000;
  #lastTakenAt = 0;
  #turn = 0;
  /** The last lease call's answer: more was due now. */
  #dueNow = false;
  /** Spider types whose frontier had no work at all, until when they are not asked again (epoch ms). */
  readonly #quietUntil = new Map<string, number>();
  /** Their current pause (ms), doubling while they stay empty ({@link QUIET_MAX_MS}). */
  readonly #quietFor = new Map<string, number>();

  constructor(options: LeasePumpOptions) {
    this.#o = options;
  }

  /** The requests leased ahead and not started, taken out of the buffer (for the caller to release). */
  drain(): Lease[] {
    return this.#ready.splice(0).map((r) => r.lease);
  }

  /** The next request for a worker, or when to look again. Rejects when the lease call fails. */
  next(): Promise<NextLease> {
    const ready = this.#ready.shift();
    if (ready) {
      this.#taken();
      if (!this.#leasing && this.#refill() > 0) void this.#rounds();
      const more = this.#ready.length > 0 || this.#dueNow;
      return Promise.resolve({ lease: ready.lease, leasedAt: ready.at, more, nextDueMs: null });
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      if (!this.#leasing) void this.#rounds();
    });
  }

  /** Notes that a worker took a request (for {@link #refill}). */
  #taken(): void {
    const now = this.#o.now();
    const gap = Math.min(Math.max(now - this.#lastTakenAt, 0), 1000);
    this.#lastTakenAt = now;
    this.#takeIntervalMs += (gap - this.#takeIntervalMs) / 8;
  }

  /**
   * How many requests to lease ahead now: none while the buffer is more than half full (few calls, several leases
   * each), else up to those the workers take in {@link LEASE_AHEAD_MS} at their recent pace.
   */
  #refill(): number {
    const state = this.#o.state;
    if (state.stopping || state.deliveryDown) return 0;
    const pace = Math.floor(LEASE_AHEAD_MS / Math.max(this.#takeIntervalMs, 0.1));
    const target = Math.min(pace, MAX_LEASE_BATCH, state.slots);
    return this.#ready.length <= target >> 1 ? target - this.#ready.length : 0;
  }

  async #rounds(): Promise<void> {
    this.#leasing = true;
    try {
      for (;;) {
        const refill = this.#refill();
        if (this.#waiting.length === 0 && refill === 0) return;
        const want = Math.min(this.#waiting.length + refill, MAX_LEASE_BATCH);
        const at = this.#o.now();
        let r: Round;
        try {
          r = await this.#lease(want);
        } catch (error) {
          for (const w of this.#waiting.splice(0)) w.reject(error);
          return;
        }
        this.#dueNow = r.dueNow;
        const served = this.#waiting.splice(0, r.leases.length);
        const extra = r.leases.slice(served.length);
        // Requests left for the buffer are more work now too.
        const more = r.dueNow || (extra.length > 0 && !this.#o.state.stopping);
        served.forEach((w, i) => {
          this.#taken();
          w.resolve({ lease: r.leases[i], leasedAt: at, more, nextDueMs: null });
        });
        if (this.#o.state.stopping) {
          if (extra.length > 0) await this.#o.frontier.release(extra).catch(() => 0);
        } else for (const lease of extra) this.#ready.push({ lease, at });
        // Fewer were due than asked for: the others sleep until more may be, and nothing is leased ahead.
        if (r.leases.length < want) {
          const idle = { nextDueMs: r.nextDueMs, ...(r.excludedOnly ? { excludedOnly: true } : {}) };
          for (const w of this.#waiting.splice(0)) w.resolve(idle);
          return;
        }
      }
    } finally {
      this.#leasing = false;
    }
  }

  /**
   * Leases up to `want` requests from the spider types in turn, starting at a rotating one, until `want` are
   * leased or every type was asked; `nextDueMs`: the earliest time more may be due (null: no type has work, or
   * none but in the excluded domains); `dueNow`: a type said more is due now (or the batch filled before every
   * type was asked); `excludedOnly`: none did, and some type has ready work only in the excluded domains.
   * A type whose frontier had no work at all (not one whose work is only in the excluded domains: those become
   * leasable when one of their requests ends, which wakes a worker) is not asked again by any worker of this
   * process for `scoutPollMs`, doubling while it stays empty up to {@link QUIET_MAX_MS} (its work is still picked
   * up within that, as the scout picks up new work): a crawler serving several types, most of them idle, would
   * otherwise make an empty lease call per idle type for every page.
   */
  async #lease(want: number): Promise<Round> {
    const types = this.#o.spiderTypes;
    const first = this.#turn++;
    const leases: Lease[] = [];
    let nextDueMs: number | null = null;
    let dueNow = false;
    let excludedOnly = false;
    const exclude = this.#o.state.fullDomains;
    let i = 0;
    for (; i < types.length && leases.length < want; i++) {
      const spider = types[(first + i) % types.length] as string;
      const now = this.#o.now();
      const quiet = this.#quietUntil.get(spider);
      if (quiet !== undefined && quiet > now) continue;
      const r = await this.#o.frontier.leaseMany(spider, want - leases.length, {
        ip: this.#o.ip,
        now,
        ...(exclude.length > 0 ? { exclude } : {}),
        ...(this.#o.perDomain ? { perDomain: this.#o.perDomain } : {}),
      });
      leases.push(...r.leases);
      // More of the domains just leased from is due only while they have room under the cap once these start.
      const more = r.left === 'more' || (r.left === 'leased' && this.#room(r.leases));
      if (more) dueNow = true;
      else if (r.left === 'excluded' || r.left === 'leased') excludedOnly = true;
      if (r.nextDueMs === null && r.leases.length === 0 && r.left !== 'excluded') {
        const scout = this.#o.scoutPollMs;
        const pause = Math.min(this.#quietFor.get(spider) ?? scout, Math.max(scout, QUIET_MAX_MS));
        this.#quietUntil.set(spider, now + pause);
        this.#quietFor.set(spider, pause * 2);
      } else {
        this.#quietUntil.delete(spider);
        this.#quietFor.delete(spider);
        // 'leased' without room: its "now" is for domains at the cap; the worker sleeps until one of theirs ends.
        const due = r.left === 'leased' && !more ? null : r.nextDueMs;
        if (due !== null) nextDueMs = nextDueMs === null ? due : Math.min(nextDueMs, due);
      }
    }
    // The batch filled before every type was asked: the others may have work now.
    if (i < types.length) dueNow = true;
    return { leases, nextDueMs, dueNow, excludedOnly: excludedOnly && !dueNow };
  }

  /** True when some domain of `leases` stays under the per-domain cap once they are all in flight. */
  #room(leases: readonly Lease[]): boolean {
    const cap = this.#o.perDomain ?? 0;
    if (cap <= 0) return true;
    const batch = new Map<string, number>();
    for (const l of leases) batch.set(l.domain, (batch.get(l.domain) ?? 0) + 1);
    for (const [domain, n] of batch) if (this.#o.state.inFlight(domain) + n < cap) return true;
    return false;
  }
}
