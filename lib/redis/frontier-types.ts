/**
 * The frontier's data shapes (lib/redis/frontier.ts operates on them): what a queued request, a crawl
 * reference, a lease and an info answer are, and the frontier's options from configuration.
 */
import type { Variables } from '../config/index.ts';
import type { CrawlRequest } from '../schemas/index.ts';
import type { PartitionRef } from './keys.ts';

/** Crawl settings stored once per crawl: the seed request without its URL. */
export type CrawlSettings = Omit<CrawlRequest, 'url'>;

export interface FrontierOptions {
  /** Key prefix (`REDIS_KEY_PREFIX`). */
  prefix: string;
  /** @default 10 (`QUEUE_HITS`) */
  hits: number;
  /** @default 60 (`QUEUE_WINDOW`), seconds */
  windowSec: number;
  /** @default true (`QUEUE_MODERATED`) */
  moderated: boolean;
  /** Throttle per spider type (`SCHEDULER_TYPE_ENABLED`). @default true */
  typeEnabled: boolean;
  /** Throttle per egress IP (`SCHEDULER_IP_ENABLED`). @default false */
  ipEnabled: boolean;
  /** @default 600 (`DUPEFILTER_TIMEOUT`), seconds */
  dupefilterTtlSec: number;
  /** @default 120000 (`LEASE_TIMEOUT` × 1000), ms */
  leaseMs: number;
  /** @default 3600000 (`STOP_BLACKLIST_TTL` × 1000), ms */
  stopTtlMs: number;
  /** Work bound per lease/reclaim call (promotions, skipped stale requests). @default 100 */
  bound?: number;
  /**
   * Take the time from Redis (TIME, inside each script) instead of the caller's clock, so the throttle of every
   * crawler is measured on one clock and no host's clock skew lets an extra fetch into a window. The `now`
   * arguments of the methods are then ignored. On in production (frontierOptions); tests that move a fake clock
   * leave it off. @default false
   */
  redisClock?: boolean;
  /**
   * Added to every throttle window, in total (ms): a fetch reaches the site a varying few ms after its lease, so
   * leases spaced exactly window / hits apart could put hits + 1 arrivals into one window. 100 in production
   * (frontierOptions: 0.17% of the rate at 10 per 60 s); tests of the spacing itself leave it 0. @default 0
   */
  throttleMarginMs?: number;
  /**
   * Fingerprints a crawler keeps of what it has sent to each crawl's dupefilter, so acks leave out children
   * surely already there (lib/redis/dupe-cache.ts; at most 32 bytes each). `DUPEFILTER_CACHE_ENTRIES` in
   * production; 0 turns it off. @default 0
   */
  dupeCacheEntries?: number;
}

/** The production throttle margin ({@link FrontierOptions.throttleMarginMs}). */
export const THROTTLE_MARGIN_MS = 100;

export function frontierOptions(vars: Variables): FrontierOptions {
  return {
    prefix: vars.REDIS_KEY_PREFIX,
    hits: vars.QUEUE_HITS,
    windowSec: vars.QUEUE_WINDOW,
    moderated: vars.QUEUE_MODERATED,
    typeEnabled: vars.SCHEDULER_TYPE_ENABLED,
    ipEnabled: vars.SCHEDULER_IP_ENABLED,
    dupefilterTtlSec: vars.DUPEFILTER_TIMEOUT,
    leaseMs: vars.LEASE_TIMEOUT * 1000,
    stopTtlMs: vars.STOP_BLACKLIST_TTL * 1000,
    redisClock: true,
    throttleMarginMs: THROTTLE_MARGIN_MS,
    dupeCacheEntries: vars.DUPEFILTER_CACHE_ENTRIES,
  };
}

/** One request to queue. */
export interface QueueRequest {
  url: string;
  /** Registrable domain (lib/crawl/extract/url.ts `registrableDomain`): the queue and throttle key. */
  domain: string;
  /** 8-byte fingerprint of the canonical request (lib/crawl/extract/url.ts `requestFingerprint`). */
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

/** One request to queue, with its crawl (what `Frontier.enqueue` takes). */
export type FrontierItem = { crawl: CrawlRef; request: QueueRequest };

export type EnqueueOutcome = 'queued' | 'duplicate' | 'stopped' | 'expired' | 'capped' | 'unknown_crawl';

/**
 * A leased request. `handle` identifies the lease for ack / release / retry: an opaque binary string (the
 * queue member, one char per byte; member.ts).
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
   * {@link Frontier.restamp} moves when the fetch starts later. Absent on leases made by hand (tests).
   */
  hitMs?: number;
}

export type LeaseResult =
  | { leased: true; lease: Lease; skipped: number }
  | {
      leased: false /** epoch ms when something may be due; null: no work at all */;
      nextDueMs: number | null;
      skipped: number;
    };

/**
 * What is left for the caller of {@link Frontier.leaseMany} (lib/redis/scripts/lease.lua's `left`):
 * - `more`: more is due now (`nextDueMs` is the call's now), in a ready domain the caller did not exclude and the
 *   call leased nothing of;
 * - `leased`: more is due now, but only in domains the call leased from (those that reached `perDomain` included):
 *   a caller with its own per-domain cap judges whether they are still leasable to it;
 * - `excluded`: ready work only in the domains the caller excluded, nothing it may lease until it drops one of them;
 *   `nextDueMs` is then when other work may be due (a throttle, a retry's backoff), null when none is;
 * - `none`: no domain is ready (with IP scoping: none the caller's IP may fetch now).
 */
export type LeaseLeft = 'none' | 'more' | 'leased' | 'excluded';

/** What {@link Frontier.leaseMany} leased, when more may be due, and what is left (see {@link LeaseLeft}). */
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

/** A spider type's backlog as stats and the dashboard show it (`Frontier.queueSummary`). */
export interface QueueSummary {
  /** Queued requests (delayed retries included, leased ones not), from a kept total. */
  queued: number;
  /** Domains with any queued request. */
  domains: number;
  /** The domains with the most queued requests, most first (ties by name), as many as asked for. */
  busiest: { domain: string; backlog: number }[];
}

export type DomainAction = 'domain-update' | 'domain-remove' | 'blacklist-update' | 'blacklist-remove';
