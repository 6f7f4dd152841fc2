/**
 * The Redis frontier's options (lib/redis/frontier.ts), and how production reads them from configuration. The data it
 * operates on (requests, crawls, leases, answers) is the core's: lib/frontier-model.ts.
 */
import type { Variables } from '../config/index.ts';

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
  /**
   * Partitions per throttle scope (`FRONTIER_PARTITIONS`): a domain belongs to one by a stable hash of its name
   * (lib/redis/keys.ts `partitionIndex`). @default 1
   */
  partitions?: number;
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
const THROTTLE_MARGIN_MS = 100;

export function frontierOptions(vars: Variables): FrontierOptions {
  return {
    prefix: vars.REDIS_KEY_PREFIX,
    hits: vars.QUEUE_HITS,
    windowSec: vars.QUEUE_WINDOW,
    moderated: vars.QUEUE_MODERATED,
    typeEnabled: vars.SCHEDULER_TYPE_ENABLED,
    partitions: vars.FRONTIER_PARTITIONS,
    ipEnabled: vars.SCHEDULER_IP_ENABLED,
    dupefilterTtlSec: vars.DUPEFILTER_TIMEOUT,
    leaseMs: vars.LEASE_TIMEOUT * 1000,
    stopTtlMs: vars.STOP_BLACKLIST_TTL * 1000,
    redisClock: true,
    throttleMarginMs: THROTTLE_MARGIN_MS,
    dupeCacheEntries: vars.DUPEFILTER_CACHE_ENTRIES,
  };
}
