/**
 * The narrow interfaces the core takes from whoever runs it (docs/style.md §4: the caller owns connections):
 * a log, the stats and reply stores, a message sink, and the frontier operations each part uses. Entry points
 * (functions/, localstack/) back them with Powertools, Redis and kafkajs; unit tests with in-memory fakes
 * (test/helpers/fakes.ts). Nothing here opens a connection.
 */
import type { Frontier } from './redis/frontier.ts';
import type { DomainAction } from './redis/frontier-types.ts';
import type { StatsCounts, StatsIncrement } from './redis/stats.ts';

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
  beat(kind: string, id: string, nowMs: number, ttlMs: number): Promise<void>;
  live(kind: string, nowMs: number, ttlMs: number): Promise<string[]>;
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

/** The frontier operations the monitors use. */
export type FrontierApi = Pick<
  Frontier,
  | 'enqueue'
  | 'stop'
  | 'crawlInfo'
  | 'appInfo'
  | 'configureDomain'
  | 'spiders'
  | 'backlog'
  | 'dueCrawls'
  | 'reclaim'
  | 'sweepFinished'
>;

/**
 * The URL Frontier API's crawls (lib/url-frontier/store.ts) as the Kafka side sees them: their backlog for info,
 * stats, the dashboard and the metrics; stop; and the domain blacklist and throttle overrides, which apply to
 * its queues too.
 */
export interface UrlFrontierView {
  /** URLs not yet completed (scheduled or held) per crawl ID, per queue key; one crawl or all. O(queues). */
  backlog(crawl?: string): Promise<Record<string, Record<string, number>>>;
  /** Deletes a crawl and all its URLs. @returns how many URLs were deleted */
  deleteCrawl(crawl: string): Promise<number>;
  /** Applies a domain throttle override or blacklist change to the queues whose domain it names. */
  configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number },
  ): Promise<void>;
}

/**
 * The frontier operations the crawler uses: lease, then ack (with the page's children), retry or release
 * (lib/redis/frontier.ts says what each means across workers).
 */
export type CrawlerFrontier = Pick<
  Frontier,
  'leaseMany' | 'ack' | 'ackMany' | 'retry' | 'release' | 'restamp' | 'setCrawlDelay'
>;
