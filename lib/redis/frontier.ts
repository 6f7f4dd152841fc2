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
 * - **retry**: back in the queue at `priority - 10`, `retries + 1`, not before a backoff delay.
 * - **empty**: nothing is due now; `lease` says when the next domain or retry becomes due.
 * - **done** (a crawl): nothing queued and nothing leased; `ack` reports the moment it happens, once.
 *   The crawl's records stay (info answers, late children are accepted) until `sweepFinished` drops them
 *   a dupefilter TTL later, unless new work arrived meanwhile.
 * - A crawl is identified by spider type, appid and crawlid (keys.ts `crawlKey`).
 */
import type { RedisClient } from './client.ts';
import { decodeCounters, mergeInfos } from './crawl-info.ts';
import type {
  AckResult,
  CrawlInfo,
  CrawlRef,
  CrawlSettings,
  DomainAction,
  EnqueueOutcome,
  FrontierOptions,
  Lease,
  LeaseResult,
  QueueRequest,
} from './frontier-types.ts';
import {
  crawlKey,
  dupefilterKey,
  type PartitionRef,
  partitionKeyList,
  partitionKeys,
  spiderPartitions,
  spidersKey,
} from './keys.ts';
import { memberBytes, memberHandle, memberTail, parseMember } from './member.ts';
import { type LuaScript, runScript, runScriptBuffer, script } from './scripts.ts';

/** enqueue.lua's code per request → its outcome. */
const OUTCOMES: Record<string, EnqueueOutcome> = {
  '1': 'queued',
  '0': 'duplicate',
  '-1': 'stopped',
  '-2': 'expired',
  '-3': 'capped',
  '-4': 'unknown_crawl',
};

/** At most this many counters of stopped crawls are settled per sweep-finished.lua call (~5 ms of Redis). */
const SETTLE_BUDGET = 5000;

export class Frontier {
  readonly #redis: RedisClient;
  readonly #o: Required<FrontierOptions>;
  readonly #knownSpiders = new Set<string>();

  constructor(redis: RedisClient, options: FrontierOptions) {
    this.#redis = redis;
    this.#o = { bound: 100, redisClock: false, throttleMarginMs: 0, ...options };
  }

  /** The partition holding a spider type's requests for a domain (one partition per scope today). */
  partitionFor(spider: string, _domain?: string): PartitionRef {
    return spiderPartitions(this.#o.prefix, spider, this.#o.typeEnabled)[0] as PartitionRef;
  }

  /** Every partition of a spider type (periodic jobs and info visit them all). */
  partitionsOf(spider: string): PartitionRef[] {
    return spiderPartitions(this.#o.prefix, spider, this.#o.typeEnabled);
  }

  /** Spider types that ever had work queued (a registry, not a keyspace scan). */
  async spiders(): Promise<string[]> {
    return (await this.#redis.smembers(spidersKey(this.#o.prefix))).sort();
  }

  #common(now: number): (string | number)[] {
    const o = this.#o;
    const moderated = `${o.moderated ? 1 : 0}${o.throttleMarginMs > 0 ? `:${Math.round(o.throttleMarginMs)}` : ''}`;
    return [o.redisClock ? 'T' : now, o.hits, o.windowSec, moderated, o.ipEnabled ? 1 : 0];
  }

  #run<T>(name: string, p: PartitionRef, extraKeys: string[], args: (string | number | Buffer)[], now: number) {
    const s: LuaScript = script(name);
    return runScript<T>(this.#redis, s, [...partitionKeyList(p), ...extraKeys], [...this.#common(now), ...args]);
  }

  /** {@link #run} with bulk replies as Buffers (replies that carry members, which are binary). */
  #runBuffer<T>(name: string, p: PartitionRef, args: (string | number | Buffer)[], now: number) {
    return runScriptBuffer<T>(this.#redis, script(name), partitionKeyList(p), [...this.#common(now), ...args]);
  }

  /**
   * Queues a batch for one spider type in one round trip per partition. Outcomes are in input order.
   * Children carry a crawl without `settings`; they are refused (`unknown_crawl`) when the crawl has ended.
   */
  async enqueue(
    spider: string,
    items: { crawl: CrawlRef; request: QueueRequest }[],
    now = Date.now(),
  ): Promise<EnqueueOutcome[]> {
    if (items.length === 0) return [];
    if (!this.#knownSpiders.has(spider)) {
      await this.#redis.sadd(spidersKey(this.#o.prefix), spider);
      this.#knownSpiders.add(spider);
    }
    const byPartition = new Map<string, { p: PartitionRef; idx: number[] }>();
    items.forEach((item, i) => {
      const p = this.partitionFor(spider, item.request.domain);
      const id = `${p.scope}:${p.partition}`;
      const group = byPartition.get(id) ?? { p, idx: [] };
      group.idx.push(i);
      byPartition.set(id, group);
    });
    const out: EnqueueOutcome[] = new Array(items.length);
    // One SHA-1 per crawl, not per request (a batch is usually many requests of few crawls).
    const keys = new Map<string, string>();
    const keyOf = (crawl: CrawlRef) => {
      const id = `${crawl.appid}\n${crawl.crawlid}`;
      let ck = keys.get(id);
      if (ck === undefined) {
        ck = crawlKey(crawl.appid, crawl.crawlid, spider);
        keys.set(id, ck);
      }
      return ck;
    };
    for (const { p, idx } of byPartition.values()) {
      const crawlIndex = new Map<string, number>();
      const crawlArgs: (string | number)[] = [];
      const dupeKeys: string[] = [];
      const reqArgs: (string | number | Buffer)[] = [];
      for (const i of idx) {
        const { crawl, request } = items[i] as { crawl: CrawlRef; request: QueueRequest };
        const ck = keyOf(crawl);
        let ci = crawlIndex.get(ck);
        if (ci === undefined) {
          ci = crawlIndex.size + 1;
          crawlIndex.set(ck, ci);
          dupeKeys.push(dupefilterKey(p, ck));
          const s = crawl.settings;
          crawlArgs.push(ck, crawl.appid, s ? JSON.stringify(s) : '', s?.expires ?? 0, s?.domain_max_pages ?? 0);
        } else if (crawl.settings && crawlArgs[(ci - 1) * 5 + 2] === '') {
          // A seed after a child of the same crawl in one batch: the seed's settings register the crawl.
          crawlArgs[(ci - 1) * 5 + 2] = JSON.stringify(crawl.settings);
          crawlArgs[(ci - 1) * 5 + 3] = crawl.settings.expires ?? 0;
          crawlArgs[(ci - 1) * 5 + 4] = crawl.settings.domain_max_pages ?? 0;
        }
        if (request.fingerprint.length !== 8) throw new Error('request fingerprints are 8 bytes');
        reqArgs.push(
          ci,
          request.fingerprint,
          request.domain,
          request.priority,
          request.depth,
          request.retries ?? 0,
          memberTail(request.url, request.domain),
        );
      }
      const codes = await this.#run<number[]>(
        'enqueue',
        p,
        dupeKeys,
        [this.#o.dupefilterTtlSec, spider, crawlIndex.size, ...crawlArgs, idx.length, ...reqArgs],
        now,
      );
      idx.forEach((i, k) => {
        out[i] = OUTCOMES[String(codes[k])] ?? 'unknown_crawl';
      });
    }
    return out;
  }

  /** Leases the next due request of a spider type (see the module doc). */
  async lease(spider: string, options: { ip?: string; now?: number } = {}): Promise<LeaseResult> {
    const now = options.now ?? Date.now();
    const p = this.partitionFor(spider);
    const r = await this.#runBuffer<[number, Buffer | number, Buffer?, number?]>(
      'lease',
      p,
      [this.#o.leaseMs, options.ip ?? '', this.#o.bound],
      now,
    );
    if (r[0] === 1) {
      const member = r[1] as Buffer;
      return {
        leased: true,
        skipped: Number(r[3] ?? 0),
        lease: {
          handle: memberHandle(member),
          partition: p,
          ...parseMember(member),
          crawl: JSON.parse((r[2] as Buffer).toString('utf8')) as CrawlSettings,
        },
      };
    }
    const due = Number(r[1]);
    return { leased: false, nextDueMs: due < 0 ? null : due, skipped: Number(r[2] ?? 0) };
  }

  /** Marks a leased request done (`done`: page published) or failed for good (`fail`). */
  async ack(lease: Pick<Lease, 'handle' | 'partition'>, outcome: 'done' | 'fail' = 'done', now = Date.now()) {
    const r = await this.#run<number[]>(
      'ack',
      lease.partition,
      [],
      [memberBytes(lease.handle), outcome, this.#o.dupefilterTtlSec],
      now,
    );
    const [code = -1, queued = 0, leased = 0, done = 0, failed = 0] = r;
    return { acked: code >= 1, complete: code === 2, queued, leased, done, failed } satisfies AckResult;
  }

  /** Gives leases back unfetched. @returns how many went back to their queues */
  async release(leases: Pick<Lease, 'handle' | 'partition'>[], now = Date.now()): Promise<number> {
    let n = 0;
    const byPartition = new Map<string, { p: PartitionRef; handles: string[] }>();
    for (const l of leases) {
      const id = `${l.partition.scope}:${l.partition.partition}:${l.partition.spider}`;
      const g = byPartition.get(id) ?? { p: l.partition, handles: [] };
      g.handles.push(l.handle);
      byPartition.set(id, g);
    }
    for (const { p, handles } of byPartition.values()) {
      n += await this.#run<number>('release', p, [], handles.map(memberBytes), now);
    }
    return n;
  }

  /**
   * Requeues a leased request at `priority - 10`, `retries + 1`, leasable after `delayMs`. `holdDomainMs` > 0
   * (a Retry-After): no crawler leases anything of the request's domain for that long (cluster-wide; the longer
   * of it and an existing hold wins).
   */
  async retry(lease: Pick<Lease, 'handle' | 'partition'>, delayMs: number, now = Date.now(), holdDomainMs = 0) {
    const r = await this.#runBuffer<[number, Buffer?]>(
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
    if (delayMs && delayMs > 0) await this.#redis.hset(key, field, Math.round(delayMs));
    else await this.#redis.hdel(key, field);
  }

  /** Returns expired leases of one spider type to their queues. @returns how many */
  async reclaim(spider: string, now = Date.now(), limit = 1000): Promise<number> {
    let total = 0;
    for (const p of this.partitionsOf(spider)) {
      for (;;) {
        const [n, more] = await this.#run<[number, number]>('reclaim', p, [], [limit], now);
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
   * the next {@link sweepFinished} or {@link backlog}.
   */
  async stop(spider: string, appid: string, crawlid: string, now = Date.now()) {
    const ck = crawlKey(appid, crawlid, spider);
    let purged = 0;
    let settings: CrawlSettings | undefined;
    for (const p of this.partitionsOf(spider)) {
      const [n, s] = await this.#run<[number, string]>('stop', p, [dupefilterKey(p, ck)], [ck, this.#o.stopTtlMs], now);
      purged += Number(n);
      if (s) settings ??= JSON.parse(s) as CrawlSettings;
    }
    return { purged, settings };
  }

  /**
   * Drops the records of crawls that completed at least the dupefilter TTL ago and got no work since
   * (settings, ref, app index entry, counters), so finished crawls do not stay in Redis forever, and the
   * per-domain counters of stopped crawls (stop leaves their deletion to this). Called by the scheduled
   * expire function. Afterwards such a crawl is unknown: late children are refused, a new
   * seed starts it afresh. With `SCHEDULER_TYPE_ENABLED=false` the spider types of a scope share their
   * crawl records, so this sweeps the scope's finished crawls whatever their spider type.
   * @returns how many completed crawls were dropped
   */
  async sweepFinished(spider: string, now = Date.now(), limit = 1000): Promise<number> {
    let total = 0;
    for (const p of this.partitionsOf(spider)) total += await this.#sweep(p, 'all', now, limit);
    return total;
  }

  /** Runs sweep-finished.lua until it has nothing left to do; each call does bounded work. */
  async #sweep(p: PartitionRef, mode: 'all' | 'stopped', now: number, limit = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const [n, more] = await this.#run<[number, number]>('sweep-finished', p, [], [limit, mode, SETTLE_BUDGET], now);
      total += n;
      if (more !== 1) return total;
    }
  }

  /** Crawls of a spider type whose `expires` has passed (the expiry index; O(log n + due)). */
  async dueCrawls(spider: string, now = Date.now(), limit = 1000): Promise<CrawlSettings[]> {
    const out: CrawlSettings[] = [];
    for (const p of this.partitionsOf(spider)) {
      const flat = await this.#run<string[]>('expiry-due', p, [], [limit, spider], now);
      for (let i = 1; i < flat.length; i += 2) if (flat[i]) out.push(JSON.parse(flat[i] as string) as CrawlSettings);
    }
    return out;
  }

  /** Info for one crawl (undefined when it has nothing registered). Summed over partitions. */
  async crawlInfo(spider: string, appid: string, crawlid: string, now = Date.now()): Promise<CrawlInfo | undefined> {
    const infos = await this.#info(spider, 'crawl', crawlKey(appid, crawlid, spider), now);
    return mergeInfos(infos)[0];
  }

  /** Info for every crawl of an app under a spider type, keyed by crawlid. */
  async appInfo(spider: string, appid: string, now = Date.now()): Promise<Record<string, CrawlInfo>> {
    const infos = mergeInfos(await this.#info(spider, 'app', appid, now));
    return Object.fromEntries(infos.map((i) => [i.settings.crawlid, i]));
  }

  async #info(spider: string, mode: 'crawl' | 'app', id: string, now: number): Promise<CrawlInfo[]> {
    const out: CrawlInfo[] = [];
    for (const p of this.partitionsOf(spider)) {
      const rows = await this.#run<[string, number, number, number, number, number, string][]>(
        'info',
        p,
        [],
        [mode, id, spider],
        now,
      );
      for (const [settings, queued, leased, done, failed, base, counters] of rows) {
        const domains = decodeCounters(counters, base);
        out.push({ settings: JSON.parse(settings) as CrawlSettings, queued, leased, done, failed, domains });
      }
    }
    return out;
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
    const spiders = new Set([...(await this.spiders()), ...this.#knownSpiders, ...alsoSpiders]);
    for (const spider of spiders) {
      for (const p of this.partitionsOf(spider)) {
        await this.#run(
          'domain-config',
          p,
          [],
          [action, domain, limits.hits ?? 0, limits.window ?? 0, limits.scale ?? 1],
          now,
        );
      }
    }
  }

  /** Queued requests per domain of a spider type (O(domains)). */
  async backlog(spider: string, now = Date.now()): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const p of this.partitionsOf(spider)) {
      // Stopped crawls' requests leave the backlog when their counters are settled: do that first.
      await this.#sweep(p, 'stopped', now);
      const h = await this.#redis.hgetall(partitionKeys(p).domainCounts);
      for (const [d, n] of Object.entries(h)) out[d] = (out[d] ?? 0) + Number(n);
    }
    return out;
  }
}
