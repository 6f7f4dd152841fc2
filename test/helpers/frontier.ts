/**
 * Builders for the frontier's integration tests: a Frontier under a fresh key prefix (removed again by
 * {@link dropTestFrontiers}), crawl references, queue requests, and lease loops. Every test drives time
 * through explicit `now` values, so nothing here sleeps.
 */

import { afterAll, afterEach } from 'vitest';
import { registrableDomain } from '../../lib/crawl/domain.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import type { CrawlRef, CrawlSettings, Lease, QueueRequest } from '../../lib/frontier-model.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import type { FrontierOptions } from '../../lib/redis/frontier-options.ts';
import {
  dupefilterKey,
  partitionCountKey,
  partitionKeyList,
  partitionKeys,
  partitionTag,
  spiderPartitions,
  spidersKey,
  stateMarkerKey,
} from '../../lib/redis/keys.ts';
import { clusterRedis, uniqueName } from './services.ts';

/** The fixed clock the frontier tests start from (epoch ms, a whole second). */
export const T0 = Date.UTC(2026, 2, 2, 12, 0, 0);

/**
 * A throttle that never holds anything back: a sliding-window log with more hits than any test leases.
 * (A moderated throttle always spaces fetches at least 1 ms apart, so it cannot be wide open.)
 */
const WIDE_OPEN = { hits: 100_000, windowSec: 1, moderated: false } as const;

/** The options of a {@link testFrontier} but its prefix (for code that takes frontier options, as the reshard does). */
export const TEST_FRONTIER_OPTIONS = {
  ...WIDE_OPEN,
  typeEnabled: true,
  ipEnabled: false,
  dupefilterTtlSec: 600,
  leaseMs: 60_000,
  stopTtlMs: 3_600_000,
} as const;

const created: { prefix: string; typeEnabled: boolean; partitions: number }[] = [];

/**
 * A Frontier under a fresh random prefix, throttle wide open unless `overrides` say otherwise.
 * Its keys are deleted by {@link dropTestFrontiers}.
 */
export function testFrontier(redis: RedisClient, overrides: Partial<FrontierOptions> = {}): Frontier {
  const options: FrontierOptions = { prefix: uniqueName(), ...TEST_FRONTIER_OPTIONS, ...overrides };
  created.push({ prefix: options.prefix, typeEnabled: options.typeEnabled, partitions: options.partitions ?? 1 });
  return new Frontier(redis, options);
}

/** Deletes the keys of every frontier made by {@link testFrontier} since the last call. */
/**
 * The cluster-mode Redis client of a frontier test file, with the file's hooks registered: every frontier
 * made by {@link testFrontier} is dropped after each test, and the client closed after the file.
 */
export function frontierTestRedis(): RedisClient {
  const redis = clusterRedis();
  afterEach(() => dropTestFrontiers(redis));
  afterAll(() => redis.disconnect());
  return redis;
}

export async function dropTestFrontiers(redis: RedisClient): Promise<void> {
  for (const { prefix, typeEnabled, partitions } of created.splice(0)) {
    await redis.del(partitionCountKey(prefix));
    for (const spider of await redis.smembers(spidersKey(prefix))) {
      for (const p of spiderPartitions(prefix, spider, typeEnabled, partitions)) {
        const crawls = await redis.hkeys(partitionKeys(p).crawlRefs);
        // One slot per partition, so one multi-key DEL is fine even in cluster mode.
        await redis.del(
          ...partitionKeyList(p),
          stateMarkerKey(partitionTag(p)),
          ...crawls.map((ck) => dupefilterKey(p, ck)),
        );
      }
    }
    await redis.del(spidersKey(prefix));
  }
}

/** A seed's crawl reference: registers the crawl (settings stored once) when it is new. */
export function seedCrawl(appid: string, crawlid: string, extra: Partial<CrawlSettings> = {}): CrawlRef {
  return {
    appid,
    crawlid,
    settings: { appid, crawlid, spiderid: 'link', priority: 1, maxdepth: 0, expires: 0, ...extra },
  };
}

/** A child's crawl reference: no settings, so it is refused once the crawl has ended. */
export function childCrawl(crawl: CrawlRef): CrawlRef {
  return { appid: crawl.appid, crawlid: crawl.crawlid };
}

/** A queue request for `url`, with its real registrable domain and fingerprint. */
export function queueRequest(url: string, priority = 1, depth = 0, retries = 0): QueueRequest {
  return { url, domain: registrableDomain(url), fingerprint: requestFingerprint(url), priority, depth, retries };
}

/** One lease, or when something may be due (epoch ms; null: no work at all). */
export type LeaseResult =
  | { leased: true; lease: Lease; skipped: number }
  | { leased: false; nextDueMs: number | null; skipped: number };

/** Leases the next due request of a spider type: {@link Frontier.leaseMany} of one, as the tests read it. */
export async function leaseOne(
  frontier: Frontier,
  spider: string,
  options: { ip?: string; now?: number } = {},
): Promise<LeaseResult> {
  const r = await frontier.leaseMany(spider, 1, options);
  const [lease] = r.leases;
  return lease
    ? { leased: true, lease, skipped: r.skipped }
    : { leased: false, nextDueMs: r.nextDueMs, skipped: r.skipped };
}

/** Leases until nothing is due at `now` (at most `max` leases), in lease order. */
export async function leaseAll(
  frontier: Frontier,
  spider: string,
  now: number,
  options: { ip?: string; max?: number } = {},
): Promise<Lease[]> {
  const out: Lease[] = [];
  const max = options.max ?? 10_000;
  while (out.length < max) {
    const r = await leaseOne(frontier, spider, { now, ip: options.ip });
    if (!r.leased) break;
    out.push(r.lease);
  }
  return out;
}

/** A lease that happened in a simulation: when, by which leaser, and what. */
export interface SimulatedLease {
  at: number;
  leaser: number;
  lease: Lease;
}

/**
 * Runs `leasers` concurrent lease loops (one per simulated crawler) over simulated time from `start`
 * for `durationMs`, in steps of `stepMs`. The loops run concurrently; a barrier keeps them on the same
 * step, as crawlers with synchronised clocks would be. Leaser i passes `ips[i]` when given.
 */
export async function simulateLeasers(
  frontier: Frontier,
  spider: string,
  options: { leasers: number; start: number; durationMs: number; stepMs: number; ips?: string[] },
): Promise<SimulatedLease[]> {
  const { leasers, start, durationMs, stepMs, ips } = options;
  const out: SimulatedLease[] = [];
  const arrive = barrier(leasers);
  await Promise.all(
    Array.from({ length: leasers }, async (_, leaser) => {
      for (let at = start; at < start + durationMs; at += stepMs) {
        const r = await leaseOne(frontier, spider, { now: at, ip: ips?.[leaser] });
        if (r.leased) out.push({ at, leaser, lease: r.lease });
        await arrive();
      }
    }),
  );
  return out.sort((a, b) => a.at - b.at);
}

/** The most leases inside any half-open window [t, t + windowMs) (a maximum starts at some lease). */
export function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (j < sorted.length && (sorted[j] as number) < (sorted[i] as number) + windowMs) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

/** A reusable barrier for `n` parties: each `arrive()` resolves once all `n` have arrived. */
function barrier(n: number): () => Promise<void> {
  let waiting = 0;
  let open: () => void = () => {};
  let gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return async () => {
    const mine = gate;
    waiting++;
    if (waiting === n) {
      waiting = 0;
      const release = open;
      gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      release();
    }
    await mine;
  };
}
