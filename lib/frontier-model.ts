/**
 * The crawl frontier's data, as the ports (lib/ports.ts FrontierApi, CrawlerFrontier) name it: what a queued
 * request, a crawl reference, a lease, an ack's answer and an info answer are. lib/redis/frontier.ts implements the
 * frontier over them; the crawler and the monitors take them from here, never from the Redis side.
 */
import type { CrawlRequest } from './schemas/index.ts';

/** Crawl settings stored once per crawl: the seed request without its URL. */
export type CrawlSettings = Omit<CrawlRequest, 'url'>;

/**
 * Identifies one spider type's frontier inside one partition: the throttle scope (the spider type, or
 * `all`), the partition number, and the spider type whose queue this is. Spider types that share a
 * scope share the slot, the throttle state and the crawl records, but each has its own queue.
 */
export interface PartitionRef {
  prefix: string;
  scope: string;
  partition: number;
  spider: string;
  /** How many partitions the scope has (`FRONTIER_PARTITIONS`); absent: one. */
  count?: number;
}

/** A string naming one {@link PartitionRef}: equal exactly for refs of the same partition and spider type. */
export function partitionId(p: PartitionRef): string {
  return `${p.prefix}\u0000${p.scope}\u0000${p.partition}\u0000${p.spider}`;
}

/** One request to queue. */
export interface QueueRequest {
  url: string;
  /** Registrable domain (lib/crawl/domain.ts `registrableDomain`): the queue and throttle key. */
  domain: string;
  /** 8-byte fingerprint of the canonical request (lib/crawl/fingerprint.ts `requestFingerprint`). */
  fingerprint: Buffer;
  priority: number;
  depth: number;
  /** @default 0 */
  retries?: number;
}

/** The crawl a request belongs to. `settings` present = a seed, which registers the crawl if new. */
export interface CrawlRef {
  appid: string;
  crawlid: string;
  settings?: CrawlSettings;
}

/** One request to queue, with its crawl (what `FrontierApi.enqueue` takes). */
export type FrontierItem = { crawl: CrawlRef; request: QueueRequest };

export type EnqueueOutcome = 'queued' | 'duplicate' | 'stopped' | 'expired' | 'capped' | 'unknown_crawl';

/**
 * A leased request. `handle` identifies the lease for ack / release / retry: an opaque binary string (the
 * queue member, one char per byte; lib/redis/member.ts).
 */
export interface Lease {
  handle: string;
  partition: PartitionRef;
  url: string;
  domain: string;
  priority: number;
  depth: number;
  retries: number;
  crawl: CrawlSettings;
  /**
   * When the lease charged its domain's throttle (epoch ms, the frontier's clock: Redis's with `redisClock`): what
   * `CrawlerFrontier.restamp` (lib/ports.ts) moves when the fetch starts later. Absent on leases made by hand (tests).
   */
  hitMs?: number;
}

/**
 * What is left for the caller of `CrawlerFrontier.leaseMany` (lib/ports.ts; lib/redis/scripts/lease.lua's `left`):
 * - `more`: more is due now (`nextDueMs` is the call's now), in a ready domain the caller did not exclude and the
 *   call leased nothing of;
 * - `leased`: more is due now, but only in domains the call leased from (those that reached `perDomain` included):
 *   a caller with its own per-domain cap judges whether they are still leasable to it;
 * - `excluded`: ready work only in the domains the caller excluded, nothing it may lease until it drops one of them;
 *   `nextDueMs` is then when other work may be due (a throttle, a retry's backoff), null when none is;
 * - `none`: no domain is ready (with IP scoping: none the caller's IP may fetch now).
 */
export type LeaseLeft = 'none' | 'more' | 'leased' | 'excluded';

/** What `CrawlerFrontier.leaseMany` leased, when more may be due, and what is left (see {@link LeaseLeft}). */
export interface LeaseMany {
  leases: Lease[];
  /** Epoch ms when more may be due (null: no work at all, or none but in the excluded domains). */
  nextDueMs: number | null;
  left: LeaseLeft;
  skipped: number;
}

export interface AckResult {
  acked: boolean;
  /** True exactly when this ack left the crawl with nothing queued and nothing leased. */
  complete: boolean;
  queued: number;
  leased: number;
  done: number;
  failed: number;
  /** When children were given: each child's outcome, by spider type, in input order. */
  children?: Map<string, EnqueueOutcome[]>;
}

/** Queue info of one crawl, from counters. */
export interface CrawlInfo {
  settings: CrawlSettings;
  queued: number;
  leased: number;
  done: number;
  failed: number;
  /** Queued requests per domain and priority. */
  domains: Record<string, { priorities: Record<number, number>; total: number }>;
  /**
   * Why queued requests wait, when some do (only for one crawl asked by its crawlid; bounded reads, see
   * {@link CrawlWaits}).
   */
  waits?: CrawlWaits;
}

/**
 * Why a crawl's queued requests are not leased now, from bounded reads (info.lua): its domains (of the first 64 it
 * has counters for) parked by the domain throttle or a Retry-After hold, and its requests among the partition's 100
 * earliest waiting for a retry. Times are epoch ms, 0 for none.
 */
export interface CrawlWaits {
  throttledDomains: number;
  throttleDueMs: number;
  retrying: number;
  retryDueMs: number;
  /** Retries already made of the request due first: its next fetch is attempt `retries + 1`. */
  retries: number;
}

/** A spider type's backlog as stats and the dashboard show it (`FrontierApi.queueSummary`). */
export interface QueueSummary {
  /** Queued requests (delayed retries included, leased ones not), from a kept total. */
  queued: number;
  /** Domains with any queued request. */
  domains: number;
  /** The domains with the most queued requests, most first (ties by name), as many as asked for. */
  busiest: { domain: string; backlog: number }[];
}

export type DomainAction = 'domain-update' | 'domain-remove' | 'blacklist-update' | 'blacklist-remove';
