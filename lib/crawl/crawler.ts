/**
 * The crawl loop (docs/design.md §5): N concurrent workers per process lease requests from the frontier, fetch,
 * extract and filter links, publish the page, and only then ack it together with its children. Retryable failures go
 * back with a growing delay; after the last retry, and for failures that retrying cannot fix, a
 * `success:false` page is published (nothing an application asked for disappears without a trace).
 *
 * Waiting: when nothing is due, a worker sleeps until the frontier says the next domain is due (capped,
 * so new work is noticed within a second) — no busy polling.
 *
 * Shutdown: `stop()` stops leasing, lets in-flight work finish until the deadline, then aborts what is
 * left and releases those leases back to the queue, so nothing is lost.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { failureCause, PartialBatchError } from '../errors.ts';
import { batchingSink } from '../kafka/batching-sink.ts';
import { type PerAppSender, perAppSenderFor } from '../kafka/per-app.ts';
import { clusterTopics, crawledAppTopic, isTopicSafeAppid, outboundAppTopic } from '../kafka/topics.ts';
import type { CrawlerFrontier, Log, MessageSink, OutMessage, StatsStore } from '../ports.ts';
import type { AckResult, Lease } from '../redis/frontier-types.ts';
import type { StatsIncrement } from '../redis/stats.ts';
import type { BodyStore } from './body-store.ts';
import { type ChildBatch, childRequests, type DroppedFollow } from './children.ts';
import { extractPageLinks } from './extract.ts';
import { type CrawlFailure, decideFailure, type FailurePolicy, RETRY_STATUSES } from './failure.ts';
import { buildPage, failedPage } from './page.ts';
import { pageMessage } from './page-message.ts';
import type { RobotsCache } from './robots.ts';
import { followOf, mergeAttrs, putData, runSpider, splitRequestUrl } from './spider-run.ts';
import { type SandboxResult, SpiderBudgetError, withBudget } from './spider-sandbox.ts';
import {
  FetchError,
  type Fetcher,
  type FetchResult,
  type FollowRequest,
  type Link,
  type PageItem,
  type Spider,
  type SpiderRequest,
} from './types.ts';

export interface CrawlerOptions {
  frontier: CrawlerFrontier;
  fetcher: Fetcher;
  /** Undefined when robots.txt is not obeyed. `checkNow`, where given, is asked first (no promise per page). */
  robots?: Pick<RobotsCache, 'check'> & Partial<Pick<RobotsCache, 'checkNow'>>;
  sink: MessageSink;
  stats: StatsStore;
  spiders: ReadonlyMap<string, Spider>;
  /** Spider types to lease for, in turn. */
  spiderTypes: string[];
  topicPrefix: string;
  /** @default false */
  appidTopics?: boolean;
  /** Page bodies base64 (`KAFKA_BASE_64_ENCODE`). @default false */
  base64?: boolean;
  /** Largest page message; bigger bodies go to `bodyStore`. @default 1000000 */
  maxMessageBytes?: number;
  bodyStore?: BodyStore;
  /** Requests fetched and processed at once. @default 16 */
  concurrency?: number;
  /**
   * Pages being published and acked in the background at once, beyond `concurrency`: a worker takes its next
   * request as soon as its page is processed, not when Kafka and Redis have stored it (a produce waits its linger
   * and the broker), unless this many deliveries are pending. Bounds the pages held in memory (each delivering
   * page holds its message, at most `maxMessageBytes`, and its children). @default concurrency ×
   * {@link DELIVERIES_PER_FETCH}
   */
  maxDelivering?: number;
  /**
   * Where plugin spiders' code runs (lib/crawl/spider-sandbox.ts): the spider types it serves and how to run a page
   * there. Spider types not in `spiders` run on this event loop. @default none: every spider runs here
   */
  sandbox?: {
    spiders: ReadonlySet<string>;
    run(spider: string, request: SpiderRequest, response: FetchResult, links: Link[]): Promise<SandboxResult>;
  };
  /**
   * Time budget of a spider's async parse on this event loop (ms): past it the page is a failed try and its slot
   * is free (the sandbox enforces the same budget for plugins, synchronous code included). @default 30000
   */
  parseTimeoutMs?: number;
  /** @default 3 */
  retryTimes?: number;
  /** @default 2000 */
  retryBaseDelayMs?: number;
  /** Default User-Agent. */
  userAgent: string;
  /** Egress IP for IP-scoped throttles. */
  ip?: string;
  /** host:pid, for heartbeats and machine stats. */
  nodeId: string;
  host: string;
  log: Log;
  /** @default Date.now */
  now?: () => number;
  /** Longest idle sleep before looking again (ms). @default 1000 */
  idlePollMs?: number;
  /**
   * How often one worker per process (the scout) looks for new work while idle (ms); when it leases
   * something it wakes the others. Bounds the pickup latency of new work at one lease call per this
   * interval per idle process. @default 50
   */
  scoutPollMs?: number;
  /**
   * How long a page message waits for others to be produced with it (ms; 0: one produce per page). The workers'
   * pages go out in one produce request per linger (lib/kafka/batching-sink.ts), each acked only once its batch
   * is stored. @default 5
   */
  produceLingerMs?: number;
  /**
   * Page counters (`crawler:<spider>:<status>`, `machine:<host>:<status>`) are summed in process and written to
   * the stats store once per this many ms, and at stop (so a SIGTERM loses none): one Redis call a second instead
   * of one per page. 0 writes each page's at once. @default 1000
   */
  statsFlushMs?: number;
}

/** What a worker gets for its next turn: a request, or when to look again (null: nothing due anywhere). */
interface NextLease {
  lease?: Lease;
  /** When this process leased it (its `now`): a lease taken ahead waited in the buffer since. */
  leasedAt?: number;
  nextDueMs: number | null;
}

/** Most requests one lease call takes (for the workers waiting at once and those leased ahead). */
export const MAX_LEASE_BATCH = 8;

/**
 * How far ahead a busy crawler leases: about as many requests as its workers take in this many ms (at most
 * {@link MAX_LEASE_BATCH}, at most its concurrency), so one lease call serves several pages. A crawler taking
 * fewer than one request per this many ms leases nothing ahead. Far below {@link RESTAMP_AFTER_MS}: a request
 * leased ahead is fetched well within its throttle turn.
 */
export const LEASE_AHEAD_MS = 10;

/** A page processed and ready to deliver. */
interface Processed {
  page: PageItem;
  response: FetchResult;
  children: ChildBatch;
}

/** An ack waiting for the next flush (crawler #flushAcks). */
interface PendingAck {
  lease: Lease;
  outcome: 'done' | 'fail';
  children: ChildBatch | undefined;
  resolve: (r: AckResult) => void;
  reject: (e: unknown) => void;
}

interface InFlight {
  lease: Lease;
  /** When this process got the lease (its `now`): how late the fetch starts is measured from here. */
  leasedAt: number;
  abort: AbortController;
  /** Past the fetch (publishing, acking): left to finish at the shutdown deadline rather than released. */
  fetched: boolean;
  /** Called once when the request's page is processed (or it ended before): its worker may take the next one. */
  freed: () => void;
}

/** The exception of a request given up because crawlers kept stopping while working on it. */
export const RECLAIMED_TOO_OFTEN =
  'given up without fetching: crawlers stopped or stalled while working on this request until its retries ran out (its leases expired and were reclaimed)';

/** How long leasing stops after a first delivery failure on infrastructure, before one probe request (ms). */
export const MIN_DELIVERY_BACKOFF_MS = 500;
/** The longest leasing stops between two probes while delivery stays down (ms). */
export const MAX_DELIVERY_BACKOFF_MS = 5000;

/** The longest robots.txt Crawl-delay obeyed (a site asking for more gets this): one page a minute. */
export const MAX_CRAWL_DELAY_MS = 60_000;

/**
 * Deliveries (publish, then ack) a process lets wait per fetch slot by default ({@link CrawlerOptions.maxDelivering}).
 * A delivery waits the produce linger, the broker and the ack's Redis call (5-10 ms here), while a worker processes a
 * page in well under a millisecond of CPU: with one delivery per slot (concurrency 16), a worker on the crawl bench
 * was bound by that wait, not by its CPU, at 3,600 plain pages/s using 0.7 of a core. With 4 per slot (one worker,
 * 20,000 pages, two runs each; bench/PROFILE.md): plain pages 3,591 / 3,728 → 5,329 / 5,929 pages/s and worker CPU
 * 0.194 / 0.188 → 0.177 / 0.161 ms per page (bigger produce requests and acks), article pages 3,180 / 3,212 → 3,786 /
 * 3,510 pages/s at the same CPU; 8 per slot gained nothing more. Peak RSS stayed 277-304 MiB.
 */
export const DELIVERIES_PER_FETCH = 4;

/** {@link CrawlerOptions.produceLingerMs}'s default. */
export const DEFAULT_PRODUCE_LINGER_MS = 5;

/** Room left in a produced batch for the record batch's own header. */
const BATCH_OVERHEAD_BYTES = 1024;

/**
 * Where a crawler's messages go: `inner` itself when `lingerMs` is 0, else a batching sink over it whose batches
 * wait at most `lingerMs` and, like each page message, fit the broker's `maxMessageBytes` (with room for the record
 * batch's own header). Exported for the bench's publish floor (bench/lib/floor.ts), which publishes as a worker does.
 */
export function crawlerSink(inner: MessageSink, lingerMs: number, maxMessageBytes: number): MessageSink {
  if (lingerMs <= 0) return inner;
  return batchingSink(inner, { lingerMs, maxBytes: Math.max(1, maxMessageBytes - BATCH_OVERHEAD_BYTES) });
}

/** Distinct counter names kept in process while the stats store cannot be written. */
const MAX_PENDING_COUNTERS = 10_000;

/** Domains whose Crawl-delay a crawler process remembers having told the frontier. */
const CRAWL_DELAY_MEMORY = 10_000;

/**
 * A fetch that starts more than this after its lease (robots.txt read first, a busy event loop) first moves its
 * throttle hit to then (frontier `restamp`, one script call). Below it, the throttle's margin (THROTTLE_MARGIN_MS,
 * 100 ms) absorbs the lateness.
 */
export const RESTAMP_AFTER_MS = 50;

/** The longest a fetch waits for its domain's next turn after a restamp; past it the request goes back to its queue. */
export const MAX_RESTAMP_WAIT_MS = 10_000;

export class Crawler {
  readonly #o: Required<Omit<CrawlerOptions, 'robots' | 'bodyStore' | 'ip' | 'sandbox'>> &
    Pick<CrawlerOptions, 'robots' | 'bodyStore' | 'ip' | 'sandbox'>;
  readonly #inFlight = new Set<InFlight>();
  /** Crawl-delay last told to the frontier, per partition and domain (insertion order: oldest first). */
  readonly #toldCrawlDelay = new Map<string, number>();
  #stopping = false;
  /** Aborted by {@link stop}: wakes idle workers at once. */
  #workers: Promise<void>[] = [];
  #turn = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  /** Pages published since start (for progress and tests). */
  pages = 0;
  /** Fetches that started late enough to move their throttle hit (frontier `restamp`) since start. */
  restamps = 0;

  constructor(options: CrawlerOptions) {
    this.#o = {
      appidTopics: false,
      base64: false,
      maxMessageBytes: 1_000_000,
      concurrency: 16,
      maxDelivering: (options.concurrency ?? 16) * DELIVERIES_PER_FETCH,
      retryTimes: 3,
      retryBaseDelayMs: 2000,
      parseTimeoutMs: 30_000,
      now: Date.now,
      idlePollMs: 1000,
      scoutPollMs: 50,
      produceLingerMs: DEFAULT_PRODUCE_LINGER_MS,
      statsFlushMs: 1000,
      ...options,
    };
    this.#sink = crawlerSink(this.#o.sink, this.#o.produceLingerMs, this.#o.maxMessageBytes);
    this.#perApp = perAppSenderFor(this.#o.sink, { log: this.#o.log });
  }

  /** Per-app copies, best effort: a missing topic is remembered and skipped (lib/kafka/per-app.ts). */
  readonly #perApp: PerAppSender;

  /** Where every message of this crawler goes: the configured sink, batched unless `produceLingerMs` is 0. */
  readonly #sink: MessageSink;

  /** Starts the workers (returns at once). */
  start(): void {
    const beat = () =>
      void Promise.all(
        this.#o.spiderTypes.map((s) => this.#o.stats.beat('crawler', `${s}|${this.#o.nodeId}`, this.#o.now(), 300_000)),
      ).catch((e: Error) => this.#o.log.warn('heartbeat failed', { error: e.message }));
    beat();
    this.#heartbeat = setInterval(beat, 10_000);
    this.#heartbeat.unref();
    for (let i = 0; i < this.#o.concurrency; i++) this.#workers.push(this.#work(i === 0));
  }

  /**
   * Stops leasing; in-flight requests may finish until `deadlineMs`, then those still being fetched are
   * aborted and released (those already fetched are published and acked). Resolves when every worker has ended.
   */
  async stop(deadlineMs = 25_000): Promise<{ released: number }> {
    this.#stopping = true;
    this.#wakeAll();
    clearInterval(this.#heartbeat);
    // Leased ahead and never started: back to the queue at once (a lease call under way releases its own).
    const ahead = this.#ready.splice(0).map((r) => r.lease);
    if (ahead.length > 0) await this.#o.frontier.release(ahead).catch(() => 0);
    // Workers end once their request is processed; the deliveries they left run on until stored.
    const all = Promise.all(this.#workers).then(() => Promise.all(this.#delivering));
    const deadline = new AbortController();
    const timedOut = await Promise.race([
      all.then(() => false),
      sleep(deadlineMs, true, { signal: deadline.signal }).catch(() => false),
    ]);
    deadline.abort();
    let released = 0;
    if (timedOut) {
      // Requests still being fetched go back to the queue; those already fetched are being published and
      // acked, which is quick, and releasing them would have another crawler fetch them a second time.
      const left = [...this.#inFlight].filter((f) => !f.fetched);
      for (const f of left) f.abort.abort();
      released = await this.#o.frontier.release(left.map((f) => f.lease)).catch(() => 0);
      await all;
    }
    await this.flushStats();
    return { released };
  }

  /** Idle workers' wake-up functions. */
  readonly #idle = new Set<() => void>();

  /** Wakes every idle worker: work has appeared, or stop() was called. */
  #wakeAll(): void {
    for (const wake of [...this.#idle]) wake();
  }

  /** Sleeps up to `ms`, or until {@link #wakeAll}. */
  #nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#idle.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#idle.add(wake);
    });
  }

  async #work(scout: boolean): Promise<void> {
    const idleMs = scout ? Math.min(this.#o.scoutPollMs, this.#o.idlePollMs) : this.#o.idlePollMs;
    while (!this.#stopping) {
      let waitMs = idleMs;
      const gate = this.#gate();
      if (gate > 0) {
        // Delivery is down: nothing is leased (a page fetched now could not be published) until a probe gets through.
        await this.#nap(gate);
        continue;
      }
      const probe = this.#down !== undefined;
      try {
        const r = await this.#next();
        if (r.lease && this.#stopping) {
          // Leased while stop() began: not started, so it goes straight back.
          await this.#o.frontier.release([r.lease]).catch(() => undefined);
          break;
        }
        if (r.lease) {
          this.#wakeAll();
          await this.#handle(r.lease, r.leasedAt ?? this.#o.now(), probe);
          continue;
        }
        if (probe) this.#probing = false;
        if (r.nextDueMs !== null) waitMs = Math.max(5, Math.min(idleMs, r.nextDueMs - this.#o.now()));
      } catch (error) {
        if (probe) this.#probing = false;
        this.#o.log.error('crawl loop error; backing off', { error: (error as Error).message });
        waitMs = this.#o.idlePollMs;
      }
      if (!this.#stopping) await this.#nap(waitMs);
    }
  }

  /**
   * Set while delivery (Kafka, or the ack's Redis) fails on infrastructure: leasing stops, so a crawler whose sink is
   * down does not fetch pages it cannot publish (each would be fetched again elsewhere). One probe request at a time
   * goes through once `retryAt` has passed; its delivery reopens the gate, or closes it for twice as long (at most
   * {@link MAX_DELIVERY_BACKOFF_MS}).
   */
  #down: { since: number; retryAt: number; backoffMs: number } | undefined;
  /** A probe request is under way while delivery is down. */
  #probing = false;
  /** Times delivery went down and leasing stopped, since start (for tests and logs). */
  gateClosings = 0;

  /** How long a worker waits before leasing (0: lease now; it may be the probe). */
  #gate(): number {
    const down = this.#down;
    if (down === undefined) return 0;
    const now = this.#o.now();
    if (this.#probing || now < down.retryAt) return Math.max(5, Math.min(this.#o.idlePollMs, down.retryAt - now));
    this.#probing = true;
    return 0;
  }

  /** A delivery failed on infrastructure: close the gate (or keep it closed, longer). */
  #deliveryFailed(error: unknown): void {
    const now = this.#o.now();
    const was = this.#down;
    const backoffMs = was ? Math.min(was.backoffMs * 2, MAX_DELIVERY_BACKOFF_MS) : MIN_DELIVERY_BACKOFF_MS;
    this.#down = { since: was?.since ?? now, retryAt: now + backoffMs, backoffMs };
    this.#probing = false;
    if (was) return;
    this.gateClosings++;
    this.#o.log.warn('delivery failing; leasing stops until a probe gets through', {
      error: (error as Error)?.message ?? String(error),
    });
    // Requests leased ahead and not started go back at once for crawlers that can deliver.
    const ahead = this.#ready.splice(0).map((r) => r.lease);
    if (ahead.length > 0) void this.#o.frontier.release(ahead).catch(() => 0);
  }

  /** A page was stored: the gate opens if it was closed. */
  #deliveryWorked(): void {
    const was = this.#down;
    if (was === undefined) return;
    this.#down = undefined;
    this.#probing = false;
    this.#o.log.info('delivery works again; leasing resumes', { downMs: this.#o.now() - was.since });
    this.#wakeAll();
  }

  /** Workers waiting for their next request, served in order by one lease call at a time. */
  readonly #waiting: { resolve: (r: NextLease) => void; reject: (e: unknown) => void }[] = [];
  #leasing = false;
  /** Requests leased ahead of the workers (oldest first), with when they were leased. */
  readonly #ready: { lease: Lease; at: number }[] = [];
  /** Moving average of the ms between two requests handed to workers, and when the last one was. */
  #takeIntervalMs = 1000;
  #lastTakenAt = 0;

  /**
   * The next request for a worker. Workers that ask while a lease call is under way wait for the next call, which
   * leases for all of them at once (frontier `leaseMany`, at most {@link MAX_LEASE_BATCH}): under load one script
   * call serves several workers instead of one each. A busy crawler also leases ahead ({@link LEASE_AHEAD_MS}):
   * a worker then takes a request leased earlier without a call, and the buffer is refilled once half empty.
   * Those left without a request are told when more may be due.
   */
  #next(): Promise<NextLease> {
    const ready = this.#ready.shift();
    if (ready) {
      this.#taken();
      if (!this.#leasing && this.#refill() > 0) void this.#leaseRounds();
      return Promise.resolve({ lease: ready.lease, leasedAt: ready.at, nextDueMs: null });
    }
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      if (!this.#leasing) void this.#leaseRounds();
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
    if (this.#stopping || this.#down !== undefined) return 0;
    const pace = Math.floor(LEASE_AHEAD_MS / Math.max(this.#takeIntervalMs, 0.1));
    const target = Math.min(pace, MAX_LEASE_BATCH, this.#o.concurrency);
    return this.#ready.length <= target >> 1 ? target - this.#ready.length : 0;
  }

  async #leaseRounds(): Promise<void> {
    this.#leasing = true;
    try {
      for (;;) {
        const refill = this.#refill();
        if (this.#waiting.length === 0 && refill === 0) return;
        const want = Math.min(this.#waiting.length + refill, MAX_LEASE_BATCH);
        const at = this.#o.now();
        let r: { leases: Lease[]; nextDueMs: number | null };
        try {
          r = await this.#lease(want);
        } catch (error) {
          for (const w of this.#waiting.splice(0)) w.reject(error);
          return;
        }
        const served = this.#waiting.splice(0, r.leases.length);
        served.forEach((w, i) => {
          this.#taken();
          w.resolve({ lease: r.leases[i], leasedAt: at, nextDueMs: null });
        });
        const extra = r.leases.slice(served.length);
        if (this.#stopping) {
          if (extra.length > 0) await this.#o.frontier.release(extra).catch(() => 0);
        } else for (const lease of extra) this.#ready.push({ lease, at });
        // Fewer were due than asked for: the others sleep until more may be, and nothing is leased ahead.
        if (r.leases.length < want) {
          for (const w of this.#waiting.splice(0)) w.resolve({ nextDueMs: r.nextDueMs });
          return;
        }
      }
    } finally {
      this.#leasing = false;
    }
  }

  /**
   * Leases up to `want` requests from the spider types in turn, starting at a rotating one, until `want` are
   * leased or every type was asked; `nextDueMs`: the earliest time more may be due (null: no type has work).
   * A type whose frontier had no work at all is not asked again by any worker of this process for
   * `scoutPollMs` (its work is still picked up within that, as the scout picks up new work): a crawler serving
   * several types, most of them idle, would otherwise make an empty lease call per idle type for every page.
   */
  async #lease(want: number): Promise<{ leases: Lease[]; nextDueMs: number | null }> {
    const types = this.#o.spiderTypes;
    const first = this.#turn++;
    const leases: Lease[] = [];
    let nextDueMs: number | null = null;
    for (let i = 0; i < types.length && leases.length < want; i++) {
      const spider = types[(first + i) % types.length] as string;
      const now = this.#o.now();
      const quiet = this.#quietUntil.get(spider);
      if (quiet !== undefined && quiet > now) continue;
      const r = await this.#o.frontier.leaseMany(spider, want - leases.length, { ip: this.#o.ip, now });
      leases.push(...r.leases);
      if (r.leases.length > 0) this.#quietUntil.delete(spider);
      if (r.nextDueMs === null) {
        if (r.leases.length === 0) this.#quietUntil.set(spider, now + this.#o.scoutPollMs);
      } else {
        if (r.leases.length === 0) this.#quietUntil.delete(spider);
        nextDueMs = nextDueMs === null ? r.nextDueMs : Math.min(nextDueMs, r.nextDueMs);
      }
    }
    return { leases, nextDueMs };
  }

  /** Spider types whose frontier had no work at all, until when they are not asked again (epoch ms). */
  readonly #quietUntil = new Map<string, number>();

  /** Requests whose page is being delivered (published, acked) after their worker moved on. */
  readonly #delivering = new Set<Promise<void>>();

  /** Workers waiting for a delivery to finish (more than `maxDelivering` pending), first come first woken. */
  readonly #deliveryWaiters: (() => void)[] = [];

  /**
   * Crawls one leased request, returning as soon as its page is processed: the delivery (publish, ack) goes on
   * in the background, so the worker fetches its next page meanwhile. When `maxDelivering` deliveries are
   * pending it waits for one to finish first.
   */
  async #handle(lease: Lease, leasedAt: number, probe = false): Promise<void> {
    let freed!: () => void;
    const free = new Promise<void>((resolve) => {
      freed = resolve;
    });
    const whole = this.#handleAll(lease, leasedAt, freed);
    await Promise.race([whole, free]);
    const done = whole
      .catch((error: unknown) => {
        // #handleAll settles every failure itself; anything escaping it must not end the process.
        this.#o.log.error('delivery failed', { url: lease.url, error: (error as Error).message });
      })
      .finally(() => {
        this.#delivering.delete(done);
        this.#deliveryWaiters.shift()?.();
        // A probe that never reached the sink (its fetch failed and was retried): the next worker probes instead.
        if (probe) this.#probing = false;
      });
    this.#delivering.add(done);
    // Woken one at a time as deliveries finish: O(1) per page, where racing every pending delivery was O(n).
    while (this.#delivering.size > this.#o.maxDelivering)
      await new Promise<void>((resolve) => this.#deliveryWaiters.push(resolve));
  }

  async #handleAll(lease: Lease, leasedAt: number, freed: () => void): Promise<void> {
    const flight: InFlight = { lease, leasedAt, abort: new AbortController(), fetched: false, freed };
    this.#inFlight.add(flight);
    const req = this.#request(lease);
    try {
      await this.#crawl(lease, req, flight);
    } catch (error) {
      if (flight.abort.signal.aborted) return; // released by stop()
      // Publishing or acking failed. Infrastructure: released, uncounted. Poison (the message refused for
      // good, a script error): one small give-up page instead, and if even that fails, released.
      let last = error;
      const decision = decideFailure({ kind: 'error', error, stage: 'deliver' }, this.#policy(lease));
      if (decision.action === 'give_up') {
        try {
          await this.#deliver(lease, failedPage(req, decision.exception), 'error');
          return;
        } catch (again) {
          last = again;
        }
      }
      this.#o.log.error('request failed on infrastructure; releasing it', {
        url: lease.url,
        error: (last as Error).message,
      });
      if (failureCause(last) === 'infrastructure') this.#deliveryFailed(last);
      await this.#o.frontier.release([lease]).catch(() => undefined);
    } finally {
      this.#inFlight.delete(flight);
      freed();
    }
  }

  #request(lease: Lease): SpiderRequest {
    // The queued URL may carry the attrs its parent gave it (spider-run.ts); nothing past here sees the fragment.
    const { url, attrs } = splitRequestUrl(lease.url);
    const req: SpiderRequest = {
      url,
      depth: lease.depth,
      priority: lease.priority,
      retries: lease.retries,
      crawl: lease.crawl,
      spider: lease.partition?.spider ?? lease.crawl.spiderid,
    };
    const merged = mergeAttrs(lease.crawl.attrs, attrs);
    if (merged !== undefined) req.attrs = merged;
    return req;
  }

  #policy(lease: Lease): FailurePolicy {
    return { retries: lease.retries, retryTimes: this.#o.retryTimes, baseDelayMs: this.#o.retryBaseDelayMs };
  }

  /**
   * Processes the page (robots, fetch, extract), then acts: a page is delivered, a failure goes through
   * {@link decideFailure}. Anything thrown while processing is a failure of this page, never of the loop.
   */
  async #crawl(lease: Lease, req: SpiderRequest, flight: InFlight): Promise<void> {
    // Only reclaim takes retries past the limit (retry stops at it): crawlers stopped or stalled while working
    // on this request, again and again. It may be what kills them, so it is given up without fetching it.
    if (lease.retries > this.#o.retryTimes) {
      flight.fetched = true;
      await this.#deliver(lease, failedPage(req, RECLAIMED_TOO_OFTEN), 'error');
      return;
    }
    let outcome: Processed | CrawlFailure | 'requeued';
    try {
      outcome = await this.#process(lease, req, flight);
    } catch (error) {
      if (flight.abort.signal.aborted) throw error;
      outcome =
        error instanceof SpiderBudgetError
          ? { kind: 'budget', reason: error.message }
          : { kind: 'error', error, stage: 'process' };
    }
    flight.fetched = true;
    flight.freed();
    // Its domain's next turn was too far off: restamp put the request back in its queue, unfetched and uncounted.
    if (outcome === 'requeued') return;
    if ('kind' in outcome) {
      await this.#fail(lease, req, outcome);
      return;
    }
    await this.#deliver(lease, outcome.page, String(outcome.response.status), outcome);
  }

  async #process(lease: Lease, req: SpiderRequest, flight: InFlight): Promise<Processed | CrawlFailure | 'requeued'> {
    const o = this.#o;
    const signal = flight.abort.signal;
    const ua = lease.crawl.useragent ?? o.userAgent;
    if (o.robots) {
      // The robots.txt lookup is shared by every request to the origin, so it is not aborted, only not
      // waited for: a shutdown deadline must not wait on a slow robots.txt.
      const verdict = o.robots.checkNow?.(req.url, ua) ?? (await abortable(o.robots.check(req.url, ua), signal));
      if (!verdict.allowed) return { kind: 'robots', reason: verdict.reason ?? 'robots.txt disallows this URL' };
      const told = this.#crawlDelay(lease, verdict.crawlDelayMs);
      if (told !== undefined) await told;
    }
    // Most fetches start on time: no call, no await.
    if (lease.hitMs !== undefined && o.now() - flight.leasedAt > RESTAMP_AFTER_MS) {
      if (!(await this.#onTurn(lease, signal))) return 'requeued';
    }
    let response: FetchResult;
    try {
      response = await o.fetcher.fetch(
        { url: req.url, userAgent: ua, headers: lease.crawl.headers, cookie: lease.crawl.cookie },
        signal,
      );
    } catch (error) {
      if (!signal.aborted && error instanceof FetchError) return { kind: 'fetch', error };
      throw error;
    }
    if (RETRY_STATUSES.has(response.status)) {
      return { kind: 'status', response, retryAfterMs: retryAfterMs(response.headers['retry-after']?.[0], o.now()) };
    }
    const spiderid = req.spider ?? lease.crawl.spiderid;
    const spider = o.spiders.get(spiderid);
    if (o.sandbox?.spiders.has(spiderid)) return this.#processSandboxed(lease, req, response, spiderid, spider);
    // A page whose links its spider does not use (the link spider's at maxdepth) is not parsed at all.
    const extracted =
      response.text && isHtml(response) && wantsLinks(spider, req)
        ? extractPageLinks(response.text, response.url)
        : { links: [] as Link[] };
    const page = buildPage({ ...req, spiderid }, response, extracted.links, {
      base64: o.base64,
      success: true,
      retryTimes: lease.retries,
    });
    if (extracted.stopped !== undefined) page.links_stopped = extracted.stopped;
    // A spider that throws fails this page only: 'process' stage, poison, a success:false page (failure.ts). An
    // async parse has a time budget: one that never settles costs its slot that long, then a failed try.
    const result = await withBudget(
      runSpider(spider, req, response, extracted.links),
      o.parseTimeoutMs,
      () => `spider "${spiderid}": parse did not finish within ${o.parseTimeoutMs} ms (CRAWLER_PARSE_TIMEOUT_MS)`,
    );
    putData(page, result.data);
    if (spider?.attrs) page.attrs = spider.attrs(req);
    return { page, response, children: this.#children(lease, req, spider, spiderid, followOf(result)) };
  }

  /**
   * {@link #process} for a plugin spider: its code runs in the spider sandbox's thread under a time and memory budget
   * (lib/crawl/spider-sandbox.ts). Links are extracted here, on this thread, as for every page (bounded by
   * extract.ts); the spider's `wantsLinks` is asked in the thread, so a page it does not spider carries none.
   */
  async #processSandboxed(
    lease: Lease,
    req: SpiderRequest,
    response: FetchResult,
    spiderid: string,
    spider: Spider | undefined,
  ): Promise<Processed> {
    const o = this.#o;
    const sandbox = o.sandbox as NonNullable<CrawlerOptions['sandbox']>;
    const extracted =
      response.text && isHtml(response) ? extractPageLinks(response.text, response.url) : { links: [] as Link[] };
    const result = await sandbox.run(spiderid, req, response, extracted.links);
    const page = buildPage({ ...req, spiderid }, response, result.wantsLinks ? extracted.links : [], {
      base64: o.base64,
      success: true,
      retryTimes: lease.retries,
    });
    if (result.wantsLinks && extracted.stopped !== undefined) page.links_stopped = extracted.stopped;
    if (result.dataTruncated) {
      page.data = null;
      page.data_truncated = true;
    } else if (result.dataJson !== undefined) page.data = JSON.parse(result.dataJson) as unknown;
    if (result.attrs !== undefined) page.attrs = result.attrs;
    if (result.followDropped > 0)
      o.log.warn('follow entries over the per-page bound dropped', {
        url: req.url,
        spider: spiderid,
        dropped: result.followDropped,
      });
    return { page, response, children: this.#children(lease, req, spider, spiderid, result.follow) };
  }

  /** A page's children from its spider's follow entries; entries that cannot be queued are logged and dropped. */
  #children(
    lease: Lease,
    req: SpiderRequest,
    spider: Spider | undefined,
    spiderid: string,
    follow: FollowRequest[],
  ): ChildBatch {
    const dropped: DroppedFollow[] = [];
    const children = childRequests(lease, req, spider, follow, dropped);
    if (dropped.length > 0)
      this.#o.log.warn('follow entries dropped', { url: req.url, spider: spiderid, dropped: dropped.slice(0, 5) });
    return children;
  }

  /**
   * The lease charged its domain's throttle when it was leased. A fetch that starts more than
   * {@link RESTAMP_AFTER_MS} later (the caller checks) moves that charge to now (frontier `restamp`), and waits when
   * a later lease took the turn meanwhile, so the site never sees two fetches closer than the throttle and
   * Crawl-delay allow, however long robots.txt or a busy loop kept this one. False: the turn was more than
   * {@link MAX_RESTAMP_WAIT_MS} off (or the domain is held now), and the request went back to its queue.
   */
  async #onTurn(lease: Lease, signal: AbortSignal): Promise<boolean> {
    const o = this.#o;
    const turn = await o.frontier.restamp(lease, { ip: o.ip, maxWaitMs: MAX_RESTAMP_WAIT_MS });
    this.restamps++;
    if (turn === null) {
      o.log.info('fetch started too late for its domain turn; the request went back to its queue', { url: lease.url });
      return false;
    }
    if (turn.waitMs > 0) await sleep(turn.waitMs, undefined, { signal });
    return true;
  }

  /**
   * Tells the frontier a domain's robots.txt Crawl-delay (at most {@link MAX_CRAWL_DELAY_MS}) when it differs from
   * what this process last told it: one Redis write per domain and change, not per page. The memory of what was
   * told is bounded (oldest forgotten first; forgetting only costs one more write). Undefined: nothing to tell.
   */
  #crawlDelay(lease: Lease, delayMs: number | undefined): Promise<void> | undefined {
    const ms = delayMs === undefined ? 0 : Math.min(delayMs, MAX_CRAWL_DELAY_MS);
    const key = `${lease.partition.prefix}\u0000${lease.partition.scope}\u0000${lease.partition.partition}\u0000${lease.domain}`;
    if (this.#toldCrawlDelay.get(key) === ms) return undefined;
    return this.#tellCrawlDelay(lease, key, ms);
  }

  async #tellCrawlDelay(lease: Lease, key: string, ms: number): Promise<void> {
    await this.#o.frontier.setCrawlDelay(lease.partition, lease.domain, ms);
    this.#toldCrawlDelay.delete(key);
    this.#toldCrawlDelay.set(key, ms);
    if (this.#toldCrawlDelay.size > CRAWL_DELAY_MEMORY) {
      const oldest = this.#toldCrawlDelay.keys().next().value;
      if (oldest !== undefined) this.#toldCrawlDelay.delete(oldest);
    }
  }

  /** Acts on a failure as {@link decideFailure} says. */
  async #fail(lease: Lease, req: SpiderRequest, failure: CrawlFailure): Promise<void> {
    const o = this.#o;
    const decision = decideFailure(failure, this.#policy(lease));
    const response = failure.kind === 'status' ? failure.response : undefined;
    const status = response ? String(response.status) : failure.kind === 'robots' ? 'robots' : 'error';
    switch (decision.action) {
      case 'retry':
        await o.frontier.retry(lease, decision.delayMs, o.now(), decision.holdDomainMs ?? 0);
        await this.#count(lease, response ? status : 'retry');
        return;
      case 'give_up':
        await this.#deliver(lease, failedPage(req, decision.exception, response, o.base64), status);
        return;
      case 'release':
        o.log.error('request failed on infrastructure; releasing it', { url: lease.url, reason: decision.reason });
        await o.frontier.release([lease]);
        return;
    }
  }

  /**
   * Publishes the page (a page is never acked before Kafka stored it), then acks it together with its children
   * (stored before or atomically with the ack: frontier `ack`). Per-app copies are best effort. Children that
   * Redis refuses as poison are logged and dropped, and the page acked without them: the page is already out,
   * and failing it now would publish it twice.
   */
  async #deliver(lease: Lease, page: PageItem, status: string, processed?: Processed): Promise<void> {
    const message = await pageMessage(page, {
      maxBytes: this.#o.maxMessageBytes,
      base64: this.#o.base64,
      bodyStore: this.#o.bodyStore,
      // Lease handles are opaque (binary); a hash of one names the body uniquely and safely.
      bodyKey: () =>
        `${encodeURIComponent(page.appid)}/${encodeURIComponent(page.crawlid)}/${createHash('sha1').update(lease.handle).digest('hex')}`,
      response: processed?.response,
    });
    const { appid, crawlid, spiderid, success } = page;
    // From here on the page and its response (the body, its text: ~2× the page's size) are no longer referenced:
    // they die now, in the young generation, instead of surviving the scavenges of the store and the ack.
    return this.#store(lease, { appid, crawlid, spiderid }, success, status, message, processed?.children);
  }

  /** {@link #deliver}'s second half: the page message stored, then the ack, the completion notice and the stats. */
  async #store(
    lease: Lease,
    ids: Pick<PageItem, 'appid' | 'crawlid' | 'spiderid'>,
    success: boolean,
    status: string,
    message: OutMessage,
    children: ChildBatch | undefined,
  ): Promise<void> {
    const o = this.#o;
    const topics = clusterTopics(o.topicPrefix);
    await this.#sink.send([{ topic: topics.crawledFirehose, messages: [message] }]);
    this.#deliveryWorked();
    this.pages++;
    if (o.appidTopics) await this.#sendPerApp(crawledAppTopic(o.topicPrefix, ids.appid), ids.appid, message);
    const ack = await this.#ack(lease, success ? 'done' : 'fail', children);
    if (ack.complete) {
      const notice: OutMessage = {
        key: ids.appid,
        value: JSON.stringify({
          action: 'complete',
          appid: ids.appid,
          crawlid: ids.crawlid,
          spiderid: ids.spiderid,
          total_pages: ack.done,
          total_failed: ack.failed,
          server_time: Math.floor(o.now() / 1000),
        }),
      };
      await this.#sink.send([{ topic: topics.outboundFirehose, messages: [notice] }]);
      if (o.appidTopics) await this.#sendPerApp(outboundAppTopic(o.topicPrefix, ids.appid), ids.appid, notice);
    }
    await this.#count(lease, status);
  }

  /**
   * Acks a lease with its children, together with the other acks of the same turn of the event loop (the pages of
   * one Kafka batch are stored, and acked, at once): one frontier `ackMany`, one script call per partition instead
   * of one per page. Children refused as poison are dropped (see {@link #ackAlone}).
   */
  #ack(lease: Lease, outcome: 'done' | 'fail', children: ChildBatch | undefined): Promise<AckResult> {
    return new Promise((resolve, reject) => {
      this.#acks.push({
        lease,
        outcome,
        children: children && children.size > 0 ? children : undefined,
        resolve,
        reject,
      });
      if (this.#acks.length === 1) setImmediate(() => void this.#flushAcks());
    });
  }

  /** Acks waiting for the next {@link #flushAcks}. */
  #acks: PendingAck[] = [];

  async #flushAcks(): Promise<void> {
    const batch = this.#acks;
    this.#acks = [];
    try {
      const results = await this.#o.frontier.ackMany(batch, this.#o.now());
      batch.forEach((a, i) => {
        a.resolve(results[i] as AckResult);
      });
    } catch (error) {
      // Those stored are done; the others failed on infrastructure (rejected: released) or were refused (poison:
      // acked each alone, so only the lease at fault fails).
      const partial = error instanceof PartialBatchError ? (error as PartialBatchError<AckResult>) : undefined;
      for (const [i, a] of batch.entries()) {
        const stored = partial?.results[i];
        if (stored) {
          a.resolve(stored);
          continue;
        }
        const cause = partial ? partial.errors[i] : error;
        if (failureCause(cause) === 'infrastructure' || (batch.length === 1 && !a.children)) a.reject(cause);
        else await this.#ackAlone(a).then(a.resolve, a.reject);
      }
    }
  }

  /** Acks one lease in its own frontier call; children refused as poison are dropped and the page acked without them. */
  async #ackAlone(a: PendingAck): Promise<AckResult> {
    const o = this.#o;
    if (!a.children) return o.frontier.ack(a.lease, a.outcome, o.now());
    try {
      return await o.frontier.ack(a.lease, a.outcome, o.now(), a.children);
    } catch (error) {
      if (failureCause(error) === 'infrastructure') throw error;
      o.log.warn('children refused; the page is published without them', {
        url: a.lease.url,
        error: (error as Error).message,
      });
      return o.frontier.ack(a.lease, a.outcome, o.now());
    }
  }

  /**
   * A per-app copy: best effort (the topic may not exist, auto-create is off), as the monitors treat them. Sent on
   * its own, never in the batching sink: Kafka refuses a whole produce request when one of its topics is missing,
   * so a per-app copy batched with other pages' firehose messages would fail (and release) those pages too.
   */
  async #sendPerApp(topic: string, appid: string, message: OutMessage): Promise<void> {
    if (!isTopicSafeAppid(appid)) return;
    // Never throws; a topic found missing costs microseconds until it is looked up again (lib/kafka/per-app.ts).
    await this.#perApp.send([{ topic, messages: [message] }]);
  }

  async #count(lease: Lease, status: string): Promise<void> {
    for (const name of [`crawler:${lease.crawl.spiderid}:${status}`, `machine:${this.#o.host}:${status}`])
      this.#counts.set(name, (this.#counts.get(name) ?? 0) + 1);
    if (this.#o.statsFlushMs <= 0) {
      await this.flushStats();
      return;
    }
    if (!this.#countsTimer) {
      this.#countsTimer = setTimeout(() => void this.flushStats(), this.#o.statsFlushMs);
      this.#countsTimer.unref();
    }
  }

  /**
   * Writes the summed page counters to the stats store (stop does it too). A failed write keeps them for the next
   * one, so a Redis blip loses no count (at most {@link MAX_PENDING_COUNTERS} distinct names are kept).
   */
  async flushStats(): Promise<void> {
    if (this.#countsTimer) clearTimeout(this.#countsTimer);
    this.#countsTimer = undefined;
    if (this.#counts.size === 0) return;
    const counts = this.#counts;
    this.#counts = new Map();
    const incs: StatsIncrement[] = [...counts].map(([name, by]) => ({ name, by }));
    try {
      await this.#o.stats.increment(incs, this.#o.now());
    } catch (error) {
      for (const [name, by] of counts)
        if (this.#counts.has(name) || this.#counts.size < MAX_PENDING_COUNTERS)
          this.#counts.set(name, (this.#counts.get(name) ?? 0) + by);
      this.#o.log.warn('page counters not written; kept for the next try', { error: (error as Error).message });
    }
  }

  /** Page counters not yet written, by name. */
  #counts = new Map<string, number>();
  #countsTimer: NodeJS.Timeout | undefined;
}

/** `promise`, or the abort reason as soon as `signal` aborts (the work itself goes on). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function isHtml(r: FetchResult): boolean {
  const type = r.headers['content-type']?.[0] ?? '';
  return type === '' || /html|xml/i.test(type);
}

/** Retry-After as ms from now (seconds or an HTTP date); 0 when absent or unparsable. */
export function retryAfterMs(value: string | undefined, now: number): number {
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.min(seconds, 3600) * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.min(at - now, 3_600_000)) : 0;
}

/** Whether `spider` uses the links of this request's page ({@link Spider.wantsLinks}); a hook that throws: yes. */
function wantsLinks(spider: Spider | undefined, req: SpiderRequest): boolean {
  try {
    return spider?.wantsLinks?.(req) ?? true;
  } catch {
    return true;
  }
}
