/**
 * The crawl frontier: per-domain priority queues with cluster-wide politeness throttling, in Redis.
 * The monitors and the crawler fleet only call this. docs/design.md §3 has the rules; keys.ts the sharding.
 *
 * ## What the operations mean across workers
 * - **enqueue**: a request is accepted at most once per crawl (canonical-URL fingerprint); accepted means
 *   it will be leased eventually unless its crawl is stopped or expires first. Idempotent under redelivery.
 * - **lease**: hands one request to one worker; no other worker sees it until the lease is acked,
 *   released, retried, or its deadline passes (then `reclaim` returns it to the queue). The domain's
 *   throttle is charged at lease time, and only when something is leased.
 * - **ack**: the page was published (or failed for good); the request is done. Acking an expired lease
 *   whose request was reclaimed but not yet leased again still counts (no second fetch).
 * - **release**: give back unfetched leases; they keep their place (FIFO among equal priority).
 * - **extend**: a crawler still working on its leases (a slow site, a delivery waiting on Kafka or a kept ack) moves
 *   their deadline on, so only the leases of crawlers that died or stalled are reclaimed.
 * - **retry**: back in the queue at `priority - 10`, `retries + 1`, not before a backoff delay.
 * - **empty**: nothing is due now; `lease` says when the next domain or retry becomes due.
 * - **done** (a crawl): nothing queued and nothing leased; `ack` reports the moment it happens, once.
 *   The crawl's records stay (info answers, late children are accepted) until `sweepFinished` drops them
 *   a dupefilter TTL later, unless new work arrived meanwhile.
 * - A crawl is identified by spider type, appid and crawlid (keys.ts `crawlKey`).
 */
import { PartialBatchError } from '../errors.ts';
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
} from '../frontier-model.ts';
import type { CrawlerFrontier, FrontierApi, LeaseHandle } from '../ports.ts';
import { ackGroup, allOwn, byChildren, MAX_FOLDED_CHILDREN, ownChildren } from './ack-fold.ts';
import type { RedisClient } from './client.ts';
import { DupeCache } from './dupe-cache.ts';
import { crawlKeys, enqueueArgs, outcomeOf } from './enqueue-args.ts';
import {
  backlog,
  configureDomain,
  crawlInfos,
  dueCrawls,
  queueSummary,
  RECLAIM_PAGE,
  SWEEP_CRAWLS,
  stopCrawl,
  sweepFinished,
} from './frontier-admin.ts';
import { byPartition, FrontierCalls, samePartition } from './frontier-calls.ts';
import type { FrontierOptions } from './frontier-options.ts';
import { crawlKey, partitionKeys, partitionTag } from './keys.ts';
import { leaseMany } from './lease-call.ts';
import { memberBytes, memberHandle } from './member.ts';
import { PartitionCountGuard } from './partition-count.ts';
import { crawlWide, unknownHere, withSeedSettings } from './partition-sums.ts';

/**
 * A lease as ack takes it: its handle and partition, and its crawl's settings (with several partitions, the crawl is
 * registered with them where a child goes, and its completion is judged over every partition; lib/redis/partition-sums.ts).
 */
type AckLease = Pick<Lease, 'handle' | 'partition'> & { crawl?: CrawlSettings };

export class Frontier implements FrontierApi, CrawlerFrontier {
  /** Every script call goes through this (lib/redis/frontier-calls.ts): KEYS, common ARGV, the spider registry. */
  readonly #calls: FrontierCalls;
  /** Fingerprints known to be in each crawl's dupefilter (lib/redis/dupe-cache.ts); acks leave them out. */
  readonly #dupes: DupeCache;
  /** Refuses the frontier to a process whose partition count is not the frontier's (lib/redis/partition-count.ts). */
  readonly #count: PartitionCountGuard;

  constructor(redis: RedisClient, options: FrontierOptions) {
    this.#calls = new FrontierCalls(redis, options);
    this.#dupes = new DupeCache(this.#calls.options.dupeCacheEntries);
    this.#count = new PartitionCountGuard(redis, options.prefix, options.partitions ?? 1);
  }

  /**
   * The partition holding a spider type's requests for a domain (`FRONTIER_PARTITIONS`; lib/redis/keys.ts). Without
   * a domain: the first partition (the only one by default; tools and tests that look at one partition's keys).
   */
  partitionFor(spider: string, domain?: string): PartitionRef {
    return domain === undefined
      ? (this.#calls.partitionsOf(spider)[0] as PartitionRef)
      : this.#calls.partitionFor(spider, domain);
  }

  /** Every partition of a spider type (periodic jobs and info visit them all). */
  partitionsOf(spider: string): PartitionRef[] {
    return this.#calls.partitionsOf(spider);
  }

  /** Spider types that ever had work queued (a registry, not a keyspace scan). */
  async spiders(): Promise<string[]> {
    return this.#calls.spiders();
  }

  /**
   * Queues a batch for one spider type in one round trip per partition. Outcomes are in input order.
   * Children carry a crawl without `settings`; they are refused (`unknown_crawl`) when the crawl has ended.
   */
  async enqueue(spider: string, items: readonly FrontierItem[], now = Date.now()): Promise<EnqueueOutcome[]> {
    await this.#count.check();
    if (items.length === 0) return [];
    if (this.#calls.partitionsOf(spider).length > 1) items = withSeedSettings(items);
    const groups = byPartition(items, (item) => this.partitionFor(spider, item.request.domain));
    // The state marker first (docs/design.md §12): a partition never holds requests without one.
    for (const { p } of groups) await this.#calls.mark(p);
    await this.#calls.register(spider);
    const out: EnqueueOutcome[] = new Array(items.length);
    const keyOf = crawlKeys(spider);
    for (const { p, idx: whole } of groups)
      for (let from = 0; from < whole.length; from += MAX_FOLDED_CHILDREN) {
        // Bounded script calls: a sitemap's 50,000 URLs are 350,000 arguments, more than a call's stack can spread.
        const idx = whole.slice(from, from + MAX_FOLDED_CHILDREN);
        const batch = enqueueArgs(p, spider, items, idx, keyOf);
        const codes = await this.#calls.run<number[]>(
          'enqueue',
          p,
          batch.dupeKeys,
          [this.#calls.options.dupefilterTtlSec, ...batch.args],
          now,
        );
        idx.forEach((i, k) => {
          out[i] = outcomeOf(codes[k]);
        });
      }
    // Several partitions: a child refused because its crawl has no record in its domain's partition yet, though
    // another partition holds the crawl, is queued again with the crawl's settings (lib/redis/partition-sums.ts).
    const again = await unknownHere(this.#calls, spider, items, out);
    if (again.size > 0) {
      const retried = await this.enqueue(spider, [...again.values()], now);
      [...again.keys()].forEach((i, k) => {
        out[i] = retried[k] as EnqueueOutcome;
      });
    }
    return out;
  }

  /**
   * Leases up to `max` due requests of a spider type in one script call, in the order single leases would have
   * taken them (a crawler leases for all of its workers that wait at once). `nextDueMs`: when more may be due
   * (epoch ms; null: no work at all); `left`: whether more is due now, or ready work is left only in the `exclude`
   * domains (lib/frontier-model.ts LeaseLeft). `exclude`: domains to lease nothing of (the caller's per-domain in-flight cap is
   * reached), `perDomain`: the most of one domain this call leases (0: no limit); the domains left keep their place
   * for every other caller.
   */
  async leaseMany(
    spider: string,
    max: number,
    options: { ip?: string; now?: number; exclude?: readonly string[]; perDomain?: number } = {},
  ): Promise<LeaseMany> {
    await this.#count.check();
    return leaseMany(this.#calls, spider, max, options);
  }

  /**
   * Marks a leased request done (`done`: page published) or failed for good (`fail`), after queuing `children`
   * (the requests its page follows, by spider type). The children are stored before the ack, never after: those
   * of the lease's own partition in the same script call as the ack (ack-enqueue.lua: one round trip, atomic), the
   * others (hand-offs to other spider types, other partitions: other hash slots) by {@link enqueue} first.
   * `children` in the result: the outcome of each child, by spider type, in input order.
   */
  async ack(
    lease: AckLease,
    outcome: 'done' | 'fail' = 'done',
    now = Date.now(),
    children?: ReadonlyMap<string, readonly FrontierItem[]>,
  ): Promise<AckResult> {
    const own = lease.partition;
    const outcomes = new Map<string, EnqueueOutcome[]>();
    /** The children folded into the ack: the lease's spider type, the lease's partition. */
    const folded: number[] = [];
    const ownItems = children?.get(own.spider) ?? [];
    for (const [spider, items] of children ?? []) {
      if (spider === own.spider || items.length === 0) continue;
      outcomes.set(spider, await this.enqueue(spider, items, now));
    }
    if (ownItems.length > 0) {
      const elsewhere: number[] = [];
      ownItems.forEach((item, i) => {
        (samePartition(this.partitionFor(own.spider, item.request.domain), own) ? folded : elsewhere).push(i);
      });
      // At most MAX_FOLDED_CHILDREN ride with the ack (one bounded script call); the earlier ones of a page with more
      // (a directory page, an HTML sitemap) are queued first, in bounded calls, so their order is kept.
      if (folded.length > MAX_FOLDED_CHILDREN) {
        for (const i of folded.splice(0, folded.length - MAX_FOLDED_CHILDREN)) elsewhere.push(i);
        elsewhere.sort((a, b) => a - b);
      }
      const codes: EnqueueOutcome[] = new Array(ownItems.length);
      if (elsewhere.length > 0) {
        // Children for another partition carry the crawl's settings, which register the crawl there if it has no
        // record yet (a stopped or expired crawl is refused there as here: stop and expiry visit every partition).
        const settings = lease.crawl;
        const out = await this.enqueue(
          own.spider,
          elsewhere.map((i) => {
            const item = ownItems[i] as FrontierItem;
            return settings === undefined || item.crawl.settings !== undefined
              ? item
              : { ...item, crawl: { ...item.crawl, settings } };
          }),
          now,
        );
        elsewhere.forEach((i, k) => {
          codes[i] = out[k] as EnqueueOutcome;
        });
      }
      outcomes.set(own.spider, codes);
    }
    // The ack itself, with the folded children: ackMany's call for a group of one.
    const foldedItems = folded.map((i) => ownItems[i] as FrontierItem);
    const [result] = await ackGroup(
      this.#calls,
      this.#dupes,
      own,
      [{ lease, outcome, children: foldedItems.length > 0 ? new Map([[own.spider, foldedItems]]) : undefined }],
      now,
    );
    if (!result) throw new Error('ack: no reply for the lease');
    Object.assign(result, await crawlWide(this.#calls, own, lease.crawl, result));
    const folds = result.children?.get(own.spider) ?? [];
    const codes = outcomes.get(own.spider) ?? [];
    folded.forEach((i, k) => {
      codes[i] = folds[k] as EnqueueOutcome;
    });
    if (children) result.children = outcomes;
    return result;
  }

  /**
   * Acks several leases (see {@link ack}), one script call per partition: a crawler acks the pages of one Kafka
   * batch together. Their children that belong in the lease's own partition are queued in that same call (all of
   * them first, in page order, then the acks: ack-enqueue.lua); a lease with children elsewhere (another spider
   * type, another partition) is acked alone by {@link ack}, which queues those first. Results in input order; each
   * as if acked alone, in that order.
   */
  async ackMany(
    items: readonly {
      lease: AckLease;
      outcome: 'done' | 'fail';
      children?: ReadonlyMap<string, readonly FrontierItem[]>;
    }[],
    now = Date.now(),
  ): Promise<AckResult[]> {
    const out: (AckResult | undefined)[] = new Array(items.length);
    const errors: unknown[] = new Array(items.length);
    let failed = false;
    const together: number[] = [];
    for (let i = 0; i < items.length; i++) {
      const it = items[i] as (typeof items)[number];
      if (allOwn(this.#calls, it.lease.partition, it.children) && ownChildren(it) <= MAX_FOLDED_CHILDREN)
        together.push(i);
      else
        try {
          out[i] = await this.ack(it.lease, it.outcome, now, it.children);
        } catch (error) {
          errors[i] = error;
          failed = true;
        }
    }
    const fold = together.map((i) => items[i] as (typeof items)[number]);
    for (const { p, idx: whole } of byPartition(fold, (it) => it.lease.partition))
      for (const idx of byChildren(whole, (k) => fold[k]?.children?.get(p.spider)?.length ?? 0)) {
        try {
          const results = await ackGroup(
            this.#calls,
            this.#dupes,
            p,
            idx.map((k) => fold[k] as (typeof fold)[number]),
            now,
          );
          for (const [j, k] of idx.entries()) {
            const result = results[j];
            out[together[k] as number] = result && (await crawlWide(this.#calls, p, fold[k]?.lease.crawl, result));
          }
        } catch (error) {
          // One script call: none of the group was stored.
          for (const k of idx) errors[together[k] as number] = error;
          failed = true;
        }
      }
    if (failed) throw new PartialBatchError(out, errors);
    return out as AckResult[];
  }

  /**
   * Moves a lease's throttle hit to now, when its fetch is about to start later than it was leased (restamp.lua):
   * the site then sees fetches spaced as the throttle and Crawl-delay say, however long the crawler took between
   * lease and fetch. `waitMs` > 0: a later lease took the turn meanwhile, fetch that much later (the hit is
   * recorded then). `null`: do not fetch; the wait would pass `maxWaitMs` (or the domain is held or throttled to 0
   * now), so the request went back to its queue with its hit taken back, or it is no longer leased (reclaimed).
   */
  async restamp(
    lease: Pick<Lease, 'handle' | 'partition' | 'hitMs'>,
    options: { ip?: string; maxWaitMs: number; now?: number },
  ): Promise<{ waitMs: number } | null> {
    const r = await this.#calls.run<[number, number?]>(
      'restamp',
      lease.partition,
      [],
      [memberBytes(lease.handle), options.ip ?? '', lease.hitMs ?? 0, Math.max(0, Math.round(options.maxWaitMs))],
      options.now ?? Date.now(),
    );
    return r[0] === 1 ? { waitMs: Number(r[1] ?? 0) } : null;
  }

  /** Gives leases back unfetched. @returns how many went back to their queues */
  async release(leases: Pick<Lease, 'handle' | 'partition'>[], now = Date.now()): Promise<number> {
    let n = 0;
    for (const { p, idx } of byPartition(leases, (l) => l.partition)) {
      n += await this.#calls.run<number>(
        'release',
        p,
        [],
        idx.map((i) => memberBytes((leases[i] as Lease).handle)),
        now,
      );
    }
    return n;
  }

  /**
   * Moves the deadline of leases this crawler still holds to `now` + the lease duration, one script call per
   * partition: reclaim then takes back only the leases of crawlers that died or stalled. Leases no longer held are
   * left alone. Returns how many were extended.
   */
  async extend(leases: Pick<Lease, 'handle' | 'partition'>[], now = Date.now()): Promise<number> {
    let n = 0;
    for (const { p, idx } of byPartition(leases, (l) => l.partition)) {
      n += await this.#calls.run<number>(
        'extend',
        p,
        [],
        [this.#calls.options.leaseMs, ...idx.map((i) => memberBytes((leases[i] as Lease).handle))],
        now,
      );
    }
    return n;
  }

  /**
   * Requeues a leased request at `priority - 10`, `retries + 1`, leasable after `delayMs`. `holdDomainMs` > 0
   * (a Retry-After): no crawler leases anything of the request's domain for that long (cluster-wide; the longer
   * of it and an existing hold wins).
   */
  async retry(lease: Pick<Lease, 'handle' | 'partition'>, delayMs: number, now = Date.now(), holdDomainMs = 0) {
    const r = await this.#calls.runBuffer<[number, Buffer?]>(
      'retry',
      lease.partition,
      [memberBytes(lease.handle), Math.max(0, delayMs), Math.max(0, Math.round(holdDomainMs))],
      now,
    );
    return { retried: r[0] === 1, handle: r[1] && memberHandle(r[1]) };
  }

  /**
   * A domain's robots.txt Crawl-delay (ms; 0 or undefined clears it): from then on its fetches are at least that
   * far apart, on top of its throttle (the stricter wins), for every crawler of the partition. One HSET/HDEL.
   */
  async setCrawlDelay(partition: PartitionRef, domain: string, delayMs: number | undefined): Promise<void> {
    const key = partitionKeys(partition).throttle;
    const field = `${domain}\u0000cd`;
    if (delayMs && delayMs > 0) await this.#calls.redis.hset(key, field, Math.round(delayMs));
    else await this.#calls.redis.hdel(key, field);
  }

  /** The throttle a lease's domain is counted in: its partition's hash tag (every spider type of the scope shares it). */
  throttleScope(lease: LeaseHandle): string {
    return partitionTag(lease.partition);
  }

  /**
   * Returns expired leases of one spider type to their queues, at most `limit` a script call, in as many calls as it
   * takes. @returns how many
   */
  async reclaim(spider: string, now = Date.now(), limit = RECLAIM_PAGE): Promise<number> {
    await this.#count.check();
    let total = 0;
    for (const p of this.partitionsOf(spider)) {
      for (;;) {
        const [n, more] = await this.#calls.run<[number, number]>('reclaim', p, [], [limit], now);
        total += n;
        if (more !== 1) break;
      }
    }
    return total;
  }

  /**
   * Stops a crawl: purges its queued requests (returns how many), refuses its later children for
   * `stopTtlMs`, and returns its settings (undefined when it was not queued here). O(log n), whatever the
   * crawl's size: the purged requests are dropped when a lease meets them, and their counters settled by
   * the next {@link sweepFinished} or {@link queueSummary}.
   */
  async stop(spider: string, appid: string, crawlid: string, now = Date.now()) {
    await this.#count.check();
    return stopCrawl(this.#calls, spider, appid, crawlid, now);
  }

  /**
   * Drops the records of crawls that completed at least the dupefilter TTL ago and got no work since
   * (settings, ref, app index entry, counters), so finished crawls do not stay in Redis forever, and the
   * per-domain counters of stopped crawls (stop leaves their deletion to this). Called by the scheduled
   * expire function. Afterwards such a crawl is unknown: late children are refused, a new
   * seed starts it afresh. With `SCHEDULER_TYPE_ENABLED=false` the spider types of a scope share their
   * crawl records, so this sweeps the scope's finished crawls whatever their spider type. At most `limit` crawls a
   * script call, in as many calls as it takes.
   * @returns how many completed crawls were dropped
   */
  async sweepFinished(spider: string, now = Date.now(), limit = SWEEP_CRAWLS): Promise<number> {
    await this.#count.check();
    return sweepFinished(this.#calls, spider, now, limit);
  }

  /** Crawls of a spider type whose `expires` has passed (the expiry index; O(log n + due)). */
  async dueCrawls(spider: string, now = Date.now(), limit = 1000): Promise<CrawlSettings[]> {
    await this.#count.check();
    return dueCrawls(this.#calls, spider, now, limit);
  }

  /** Info for one crawl (undefined when it has nothing registered). Summed over partitions. */
  async crawlInfo(spider: string, appid: string, crawlid: string, now = Date.now()): Promise<CrawlInfo | undefined> {
    await this.#count.check();
    return (await crawlInfos(this.#calls, spider, 'crawl', crawlKey(appid, crawlid, spider), now))[0];
  }

  /** Info for every crawl of an app under a spider type, keyed by crawlid. */
  async appInfo(spider: string, appid: string, now = Date.now()): Promise<Record<string, CrawlInfo>> {
    await this.#count.check();
    const infos = await crawlInfos(this.#calls, spider, 'app', appid, now);
    return Object.fromEntries(infos.map((i) => [i.settings.crawlid, i]));
  }

  /** Applies a domain throttle override or blacklist change to every spider type's partitions. */
  async configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number } = {},
    now = Date.now(),
    /** Spider types to configure even if they never had work (so a config sent before the first crawl holds). */
    alsoSpiders: Iterable<string> = [],
  ): Promise<void> {
    await this.#count.check();
    return configureDomain(this.#calls, action, domain, limits, now, alsoSpiders);
  }

  /**
   * A spider type's backlog for stats and the dashboard: queued requests and domains with any, from kept counters
   * (O(1) per partition), and the `top` domains with the most queued requests (0: none), read from the domain
   * counts a page at a time (every command bounded, O(domains) across them). Settles stopped crawls' counters first,
   * in bounded steps.
   */
  async queueSummary(spider: string, top = 0, now = Date.now()): Promise<QueueSummary> {
    await this.#count.check();
    return queueSummary(this.#calls, spider, top, now);
  }

  /**
   * Queued requests per domain of a spider type, every domain (for tools and tests; stats and the dashboard use
   * {@link queueSummary}): O(domains), read a page at a time.
   */
  async backlog(spider: string, now = Date.now()): Promise<Record<string, number>> {
    await this.#count.check();
    return backlog(this.#calls, spider, now);
  }
}
