/**
 * The narrow interfaces the core takes from whoever runs it (docs/style.md §4: the caller owns connections):
 * a log, the stats, reply and robots.txt stores, a message sink, and the frontier operations each part uses. Entry points
 * (functions/, localstack/) back them with Powertools, Redis and kafkajs; unit tests with in-memory fakes
 * (test/helpers/fakes.ts and the modules it puts together). Nothing here opens a connection.
 */

import type {
  AckResult,
  CrawlInfo,
  CrawlSettings,
  DomainAction,
  EnqueueOutcome,
  FrontierItem,
  Lease,
  LeaseMany,
  PartitionRef,
  QueueSummary,
} from './frontier-model.ts';
import type { CrawlKey, FailureNote, MinuteCount, StatsCounts, StatsIncrement } from './stats-model.ts';

/** Structured log lines; the adapters back it with Powertools Logger, tests with an array. */
export interface Log {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A log that drops everything (tests that do not look at logs). */
export const silentLog: Log = { info() {}, warn() {}, error() {} };

/** One message to produce. */
export interface OutMessage {
  key?: string | Buffer | null;
  value: string | Buffer;
  headers?: Record<string, string>;
}

/** Produces a batch of messages to one or more topics in one call (docs/design.md §4). */
export interface MessageSink {
  /** Sends every message, acks=all; resolves only when all are stored. Throws when Kafka is unreachable. */
  send(batch: { topic: string; messages: OutMessage[] }[]): Promise<void>;
}

/** Time-bucketed counters and heartbeats (lib/redis/stats.ts is the Redis one). */
export interface StatsStore {
  increment(increments: StatsIncrement[], nowMs: number): Promise<void>;
  read(names: string[], nowMs: number): Promise<Record<string, StatsCounts>>;
  names(namePrefix: string): Promise<string[]>;
  /** Records a heartbeat; with `report`, stores it too (it expires with the beat). */
  beat(kind: string, id: string, nowMs: number, ttlMs: number, report?: string): Promise<void>;
  live(kind: string, nowMs: number, ttlMs: number): Promise<string[]>;
  /** The last report of each of these ids of `kind` that has one (pass the live ids: it never lists). */
  reports(kind: string, ids: readonly string[]): Promise<Record<string, string>>;
  /** Drops a heartbeat at once: a process that stops cleanly is no longer live (lib/redis/stats.ts forgetMember). */
  forget(kind: string, id: string): Promise<void>;
  /** The last 15 minutes of `names`, per minute, summed (lib/redis/stats.ts readMinutes). */
  minutes(names: string[], nowMs: number): Promise<MinuteCount[]>;
  /** Records a failed page of a crawl, for the dashboard (lib/redis/failure-log.ts). */
  noteFailure(crawl: CrawlKey, note: FailureNote): Promise<void>;
  /** The latest `n` failed pages of each crawl, newest first, in the order asked. */
  failures(crawls: readonly CrawlKey[], n: number): Promise<FailureNote[][]>;
}

/**
 * Replies stored under their request uuid, for REST (`POST /feed` waits for one, `POST /poll` reads one). Each is
 * stored with its appid and a stamp of the store's own clock, so `/feed` takes only the reply of its own app that
 * came after its request: never an older reply to the same uuid, never another app's (docs/contract.md).
 */
export interface ReplyStore {
  /** Stores a reply under its request uuid and appid for `ttlSec`, stamped with the store's clock. */
  put(uuid: string, reply: string, ttlSec: number, appid: string): Promise<void>;
  /** The store's clock now (opaque, increasing): a reply stored after this call is stamped at or after it. */
  mark(uuid: string): Promise<number>;
  /**
   * Reads and deletes a stored reply (a reply is returned once): with `only`, the reply of that appid stamped at or
   * after `after` ({@link mark}), else the newest of any appid (`POST /poll`, which knows only the uuid).
   */
  take(uuid: string, only?: { appid: string; after: number }): Promise<string | undefined>;
}

/**
 * The fleet-wide robots.txt cache (lib/redis/robots-store.ts is the Redis one): one value per origin, which expires on
 * its own. lib/crawl/fetch/robots.ts decides what a value holds and how long it is trusted.
 */
export interface RobotsStore {
  /** The value stored for `origin`; undefined when there is none (never stored, or expired). */
  get(origin: string): Promise<string | undefined>;
  /** Stores `value` for `origin`, replacing any, for `ttlMs`. */
  set(origin: string, value: string, ttlMs: number): Promise<void>;
}

/**
 * One hash tag whose crawl state was lost: a process had seen its state marker (lib/redis/state-marker.ts), and the
 * marker is now gone or holds another epoch, so the slot was emptied since (a node replaced, a flush).
 */
export interface SlotLoss {
  /** The hash tag: a frontier partition's (`{<prefix>:f:<scope>:<n>}`) or the stats slot's (`{<prefix>:stats}`). */
  tag: string;
  /** The epoch the process had seen. */
  epoch: string;
  /** The epoch found instead; absent when there was no marker. */
  found?: string;
  /** When it was detected (epoch ms). */
  at: number;
  /** What was lost and why it is known, for a person. */
  reason: string;
}

/** What the store knows of lost state: every loss noted, and the operator's acknowledgement. */
export interface StateLossRecord {
  losses: SlotLoss[];
  /** When an operator acknowledged (epoch ms); losses detected later are not acknowledged. */
  ackedAt?: number;
  /** The losses not acknowledged yet: health is RED while there is one. */
  open: SlotLoss[];
}

/** The state markers and the loss record (lib/redis/state-marker.ts is the Redis one). */
export interface StateStore {
  /** The marker of each tag, in order (undefined: none). One GET per tag, each in its own slot. */
  markers(tags: readonly string[]): Promise<(string | undefined)[]>;
  /** Notes a loss; false when that loss (tag and lost epoch) was noted already, by this or another process. */
  note(loss: SlotLoss): Promise<boolean>;
  /** The loss record; undefined when nothing was ever lost (or the record expired after an acknowledgement). */
  record(): Promise<StateLossRecord | undefined>;
  /** Acknowledges every loss noted so far: the record is kept a while for `info`, health is GREEN again. */
  ack(nowMs: number): Promise<StateLossRecord | undefined>;
}

/**
 * The frontier operations the monitors use (lib/redis/frontier.ts implements them over its Lua scripts and says what
 * each means across workers; test/helpers/fake-frontier.ts has the in-memory fake, held to the same answers by
 * test/integration/frontier-contract.test.ts). `now` is epoch ms; the Redis frontier uses Redis's clock unless told
 * otherwise.
 */
export interface FrontierApi {
  /** Queues requests (a request is accepted at most once per crawl); one outcome per item, in order. */
  enqueue(spider: string, items: readonly FrontierItem[], now?: number): Promise<EnqueueOutcome[]>;
  /** Purges a crawl's queued requests and refuses its requests for a while: how many were purged, its settings. */
  stop(
    spider: string,
    appid: string,
    crawlid: string,
    now?: number,
  ): Promise<{ purged: number; settings: CrawlSettings | undefined }>;
  /** One crawl's counters, settings and queued requests per domain and priority; undefined when unknown. */
  crawlInfo(spider: string, appid: string, crawlid: string, now?: number): Promise<CrawlInfo | undefined>;
  /** Every known crawl of an app, by crawlid. */
  appInfo(spider: string, appid: string, now?: number): Promise<Record<string, CrawlInfo>>;
  /** A domain throttle override or blacklist change, for every spider type (and `alsoSpiders`). */
  configureDomain(
    action: DomainAction,
    domain: string,
    limits?: { hits?: number; window?: number; scale?: number },
    now?: number,
    alsoSpiders?: Iterable<string>,
  ): Promise<void>;
  /** The spider types that ever had work. */
  spiders(): Promise<string[]>;
  /**
   * Queued requests and domains of a spider type, from kept counters, with the `top` busiest domains (0: none;
   * O(domains) in bounded pages when asked for).
   */
  queueSummary(spider: string, top?: number, now?: number): Promise<QueueSummary>;
  /** Crawls whose expiry has passed (at most `limit`). */
  dueCrawls(spider: string, now?: number, limit?: number): Promise<CrawlSettings[]>;
  /** Returns expired leases to their queues (one retry counted each, at most `limit` a script call): how many. */
  reclaim(spider: string, now?: number, limit?: number): Promise<number>;
  /** Drops the records of crawls completed a dupefilter TTL ago (at most `limit` a script call): how many. */
  sweepFinished(spider: string, now?: number, limit?: number): Promise<number>;
}

/**
 * The URL Frontier API's crawls (lib/redis/url-frontier/store.ts) as the Kafka side sees them: their backlog for info,
 * stats, the dashboard and the metrics; stop; and the domain blacklist and throttle overrides, which apply to
 * its queues too.
 */
export interface UrlFrontierView {
  /** URLs not yet completed (scheduled or held) per crawl ID, per queue key; one crawl or all. O(queues). */
  backlog(crawl?: string): Promise<Record<string, Record<string, number>>>;
  /** URLs not yet completed over every crawl, from a kept total: O(1), for the stats run (lib/redis/url-frontier/store.ts). */
  backlogTotal(): Promise<number>;
  /** Deletes a crawl and all its URLs. @returns how many URLs were deleted */
  deleteCrawl(crawl: string): Promise<number>;
  /** Applies a domain throttle override or blacklist change to the queues whose domain it names. */
  configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number },
  ): Promise<void>;
}

/** What the crawler holds of a lease when it gives it back (ack, release, retry). */
export type LeaseHandle = Pick<Lease, 'handle' | 'partition'>;

/**
 * The frontier operations the crawler uses: lease, then ack (with the page's children), retry or release
 * (lib/redis/frontier.ts says what each means across workers). Children are a page's follow requests by spider type.
 */
export interface CrawlerFrontier {
  /**
   * Leases up to `max` due requests of a spider type, charging each domain's throttle; none of the domains in
   * `exclude` (the caller's per-domain in-flight cap is reached) and at most `perDomain` of any one. The answer's
   * `left` says whether more is due now, or ready work is left only in the `exclude` domains (then `nextDueMs` is
   * the next time other work may be due): lib/frontier-model.ts LeaseLeft.
   */
  leaseMany(
    spider: string,
    max: number,
    options?: { ip?: string; now?: number; exclude?: readonly string[]; perDomain?: number },
  ): Promise<LeaseMany>;
  /** The page was published (or failed for good): the request is done, its children queued first. */
  ack(
    lease: LeaseHandle,
    outcome?: 'done' | 'fail',
    now?: number,
    children?: ReadonlyMap<string, readonly FrontierItem[]>,
  ): Promise<AckResult>;
  /** Several acks at once, each as if alone, in order (a PartialBatchError says which were stored). */
  ackMany(
    items: readonly {
      lease: LeaseHandle;
      outcome: 'done' | 'fail';
      children?: ReadonlyMap<string, readonly FrontierItem[]>;
    }[],
    now?: number,
  ): Promise<AckResult[]>;
  /** Back in the queue one retry later, not before `delayMs`; `holdDomainMs` holds the whole domain. */
  retry(
    lease: LeaseHandle,
    delayMs: number,
    now?: number,
    holdDomainMs?: number,
  ): Promise<{ retried: boolean; handle: string | undefined }>;
  /** Gives back unfetched leases in their place: how many. */
  release(leases: LeaseHandle[], now?: number): Promise<number>;
  /** Moves the deadline of leases still held to now + the lease duration: how many were extended. */
  extend(leases: LeaseHandle[], now?: number): Promise<number>;
  /** Moves a late fetch's throttle hit to now: how long to wait for its turn, or null when it went back. */
  restamp(
    lease: Pick<Lease, 'handle' | 'partition' | 'hitMs'>,
    options: { ip?: string; maxWaitMs: number; now?: number },
  ): Promise<{ waitMs: number } | null>;
  /** A domain's robots.txt Crawl-delay (ms; 0 or undefined clears it). */
  setCrawlDelay(partition: PartitionRef, domain: string, delayMs: number | undefined): Promise<void>;
  /**
   * Where a leased request's domain keeps its throttle and Crawl-delay, as an opaque name: leases with the same name
   * and domain share them (the crawler remembers per name and domain which Crawl-delay it told).
   */
  throttleScope(lease: LeaseHandle): string;
}
