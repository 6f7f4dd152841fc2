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
import { PartialBatchError } from '../errors.ts';
import type { CrawlerFrontier, FrontierApi } from '../ports.ts';
import type { RedisClient } from './client.ts';
import { decodeCounters, mergeInfos } from './crawl-info.ts';
import { DupeCache } from './dupe-cache.ts';
import type {
  AckResult,
  CrawlInfo,
  CrawlRef,
  CrawlSettings,
  DomainAction,
  EnqueueOutcome,
  FrontierItem,
  FrontierOptions,
  Lease,
  LeaseMany,
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

/** Spider types and partitions whose partitions and KEYS a frontier remembers. */
const MEMO_MAX = 1000;

/** At most this many counters of stopped crawls are settled per sweep-finished.lua call (~5 ms of Redis). */
const SETTLE_BUDGET = 5000;

export class Frontier implements FrontierApi, CrawlerFrontier {
  readonly #redis: RedisClient;
  readonly #o: Required<FrontierOptions>;
  readonly #knownSpiders = new Set<string>();
  /** Fingerprints known to be in each crawl's dupefilter (lib/redis/dupe-cache.ts); acks leave them out. */
  readonly #dupes: DupeCache;

  /** ARGV[2..5] of every frontier script (includes/frontier.lua): fixed for a frontier. */
  readonly #commonTail: readonly (string | number)[];

  constructor(redis: RedisClient, options: FrontierOptions) {
    this.#redis = redis;
    const o = { bound: 100, redisClock: false, throttleMarginMs: 0, dupeCacheEntries: 0, ...options };
    this.#o = o;
    this.#dupes = new DupeCache(o.dupeCacheEntries);
    const moderated = `${o.moderated ? 1 : 0}${o.throttleMarginMs > 0 ? `:${Math.round(o.throttleMarginMs)}` : ''}`;
    this.#commonTail = [o.hits, o.windowSec, moderated, o.ipEnabled ? 1 : 0];
  }

  /** The partitions of each spider type, and each partition's KEYS, built once (they are fixed for a frontier). */
  readonly #partitions = new Map<string, PartitionRef[]>();
  readonly #keyLists = new Map<string, string[]>();

  /** The partition holding a spider type's requests for a domain (one partition per scope today). */
  partitionFor(spider: string, _domain?: string): PartitionRef {
    return this.partitionsOf(spider)[0] as PartitionRef;
  }

  /** Every partition of a spider type (periodic jobs and info visit them all). */
  partitionsOf(spider: string): PartitionRef[] {
    let ps = this.#partitions.get(spider);
    if (ps === undefined) {
      ps = spiderPartitions(this.#o.prefix, spider, this.#o.typeEnabled);
      if (this.#partitions.size < MEMO_MAX) this.#partitions.set(spider, ps);
    }
    return ps;
  }

  /** A partition's fixed KEYS ({@link partitionKeyList}), remembered. */
  #keys(p: PartitionRef): string[] {
    const id = `${p.prefix}\u0000${p.scope}\u0000${p.partition}\u0000${p.spider}`;
    let keys = this.#keyLists.get(id);
    if (keys === undefined) {
      keys = partitionKeyList(p);
      if (this.#keyLists.size < MEMO_MAX) this.#keyLists.set(id, keys);
    }
    return keys;
  }

  /** Spider types that ever had work queued (a registry, not a keyspace scan). */
  async spiders(): Promise<string[]> {
    return (await this.#redis.smembers(spidersKey(this.#o.prefix))).sort();
  }

  #common(now: number): (string | number)[] {
    return [this.#o.redisClock ? 'T' : now, ...this.#commonTail];
  }

  #run<T>(name: string, p: PartitionRef, extraKeys: string[], args: (string | number | Buffer)[], now: number) {
    const s: LuaScript = script(name);
    const keys = extraKeys.length > 0 ? [...this.#keys(p), ...extraKeys] : this.#keys(p);
    return runScript<T>(this.#redis, s, keys, [...this.#common(now), ...args]);
  }

  /** {@link #run} with bulk replies as Buffers (replies that carry members, which are binary). */
  #runBuffer<T>(name: string, p: PartitionRef, args: (string | number | Buffer)[], now: number) {
    return runScriptBuffer<T>(this.#redis, script(name), this.#keys(p), [...this.#common(now), ...args]);
  }

  /** Adds a spider type to the registry of types that ever had work (once per process and type). */
  async #register(spider: string): Promise<void> {
    if (this.#knownSpiders.has(spider)) return;
    await this.#redis.sadd(spidersKey(this.#o.prefix), spider);
    this.#knownSpiders.add(spider);
  }

  /**
   * Queues a batch for one spider type in one round trip per partition. Outcomes are in input order.
   * Children carry a crawl without `settings`; they are refused (`unknown_crawl`) when the crawl has ended.
   */
  async enqueue(spider: string, items: readonly FrontierItem[], now = Date.now()): Promise<EnqueueOutcome[]> {
    if (items.length === 0) return [];
    await this.#register(spider);
    const out: EnqueueOutcome[] = new Array(items.length);
    const keyOf = crawlKeys(spider);
    for (const { p, idx: whole } of byPartition(items, (item) => this.partitionFor(spider, item.request.domain)))
      for (let from = 0; from < whole.length; from += MAX_FOLDED_CHILDREN) {
        // Bounded script calls: a sitemap's 50,000 URLs are 350,000 arguments, more than a call's stack can spread.
        const idx = whole.slice(from, from + MAX_FOLDED_CHILDREN);
        const batch = enqueueArgs(p, spider, items, idx, keyOf);
        const codes = await this.#run<number[]>(
          'enqueue',
          p,
          batch.dupeKeys,
          [this.#o.dupefilterTtlSec, ...batch.args],
          now,
        );
        idx.forEach((i, k) => {
          out[i] = outcomeOf(codes[k]);
        });
      }
    return out;
  }

  /** Leases the next due request of a spider type (see the module doc). */
  async lease(spider: string, options: { ip?: string; now?: number } = {}): Promise<LeaseResult> {
    const r = await this.leaseMany(spider, 1, options);
    const [lease] = r.leases;
    return lease
      ? { leased: true, lease, skipped: r.skipped }
      : { leased: false, nextDueMs: r.nextDueMs, skipped: r.skipped };
  }

  /**
   * Leases up to `max` due requests of a spider type in one script call, in the order single leases would have
   * taken them (a crawler leases for all of its workers that wait at once). `nextDueMs`: when more may be due
   * (epoch ms; null: no work at all; now when all `max` were leased).
   */
  async leaseMany(spider: string, max: number, options: { ip?: string; now?: number } = {}): Promise<LeaseMany> {
    const now = options.now ?? Date.now();
    const p = this.partitionFor(spider);
    const want = Math.max(1, Math.floor(max));
    const r = await this.#runBuffer<(number | Buffer)[]>(
      'lease',
      p,
      [this.#o.leaseMs, options.ip ?? '', this.#o.bound, want],
      now,
    );
    if (r[0] === 1) {
      const hitMs = Number(r[2]);
      const due = Number(r[3]);
      const leases: Lease[] = [];
      for (let i = 4; i + 1 < r.length; i += 2) {
        const member = r[i] as Buffer;
        leases.push({
          handle: memberHandle(member),
          partition: p,
          ...parseMember(member),
          crawl: JSON.parse((r[i + 1] as Buffer).toString('utf8')) as CrawlSettings,
          hitMs,
        });
      }
      return { leases, nextDueMs: due < 0 ? null : due, skipped: Number(r[1] ?? 0) };
    }
    const due = Number(r[1]);
    return { leases: [], nextDueMs: due < 0 ? null : due, skipped: Number(r[2] ?? 0) };
  }

  /**
   * Marks a leased request done (`done`: page published) or failed for good (`fail`), after queuing `children`
   * (the requests its page follows, by spider type). The children are stored before the ack, never after: those
   * of the lease's own partition in the same script call as the ack (ack-enqueue.lua: one round trip, atomic), the
   * others (hand-offs to other spider types, other partitions: other hash slots) by {@link enqueue} first.
   * `children` in the result: the outcome of each child, by spider type, in input order.
   */
  async ack(
    lease: Pick<Lease, 'handle' | 'partition'>,
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
        const out = await this.enqueue(
          own.spider,
          elsewhere.map((i) => ownItems[i] as FrontierItem),
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
    const [result] = await this.#ackGroup(
      own,
      [{ lease, outcome, children: foldedItems.length > 0 ? new Map([[own.spider, foldedItems]]) : undefined }],
      now,
    );
    if (!result) throw new Error('ack: no reply for the lease');
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
      lease: Pick<Lease, 'handle' | 'partition'>;
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
      if (this.#allOwn(it.lease.partition, it.children) && ownChildren(it) <= MAX_FOLDED_CHILDREN) together.push(i);
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
          const results = await this.#ackGroup(
            p,
            idx.map((k) => fold[k] as (typeof fold)[number]),
            now,
          );
          idx.forEach((k, j) => {
            out[together[k] as number] = results[j];
          });
        } catch (error) {
          // One script call: none of the group was stored.
          for (const k of idx) errors[together[k] as number] = error;
          failed = true;
        }
      }
    if (failed) throw new PartialBatchError(out, errors);
    return out as AckResult[];
  }

  /** One partition's share of {@link ackMany} (and {@link ack}'s own call): one script call, results in order. */
  async #ackGroup(
    p: PartitionRef,
    group: readonly {
      lease: Pick<Lease, 'handle'>;
      outcome: 'done' | 'fail';
      children?: ReadonlyMap<string, readonly FrontierItem[]>;
    }[],
    now: number,
  ): Promise<AckResult[]> {
    const kids = group.flatMap((g) => g.children?.get(p.spider) ?? []);
    const pairs: (string | number | Buffer)[] = [];
    for (const g of group) pairs.push(memberBytes(g.lease.handle), g.outcome);
    let replies: AckReply[];
    const codes: number[] = new Array(kids.length);
    if (kids.length === 0) {
      replies = await this.#run<AckReply[]>('ack', p, [], [this.#o.dupefilterTtlSec, ...pairs], now);
    } else {
      await this.#register(p.spider);
      const all = kids.map((_, i) => i);
      const keyOf = crawlKeys(p.spider);
      let batch = enqueueArgs(p, p.spider, kids, all, keyOf, this.#dupes);
      const send = () =>
        this.#run<unknown[]>(
          'ack-enqueue',
          p,
          batch.dupeKeys,
          [group.length, ...pairs, this.#o.dupefilterTtlSec, ...batch.args],
          now,
        );
      let reply = await send();
      for (let attempt = 0; reply[0] === 'stale'; attempt++) {
        // A claim no longer holds (the dupefilter was stopped, expired or replaced) and nothing was written:
        // forget those crawls and send again, in full once a second claim has gone stale meanwhile.
        for (const ci of reply.slice(1) as number[]) this.#dupes.forget(batch.dupeKeys[ci - 1] as string);
        if (attempt > 0) this.#dupes.clear();
        batch = enqueueArgs(p, p.spider, kids, all, keyOf, attempt > 0 ? undefined : this.#dupes);
        reply = await send();
      }
      replies = reply.slice(0, group.length) as AckReply[];
      const sentCodes = (reply[group.length] ?? []) as number[];
      const tokens = (reply[group.length + 1] ?? []) as (string | number)[];
      // Children left out were in their crawl's dupefilter: duplicates, unless the crawl was refused meanwhile.
      for (let k = 0; k < kids.length; k++) {
        const t = tokens[(batch.crawlOf[k] as number) - 1];
        codes[k] = typeof t === 'number' ? t : 0;
      }
      const known = new Map<number, Buffer[]>();
      batch.sent.forEach((k, j) => {
        const code = sentCodes[j] as number;
        codes[k] = code;
        if (code !== 0 && code !== 1) return;
        const ci = batch.crawlOf[k] as number;
        let fps = known.get(ci);
        if (fps === undefined) {
          fps = [];
          known.set(ci, fps);
        }
        fps.push((kids[k] as FrontierItem).request.fingerprint);
      });
      for (const [ci, fps] of known) {
        const t = tokens[ci - 1];
        if (typeof t === 'string') this.#dupes.add(batch.dupeKeys[ci - 1] as string, t, fps);
      }
    }
    let c = 0;
    return group.map((g, j) => {
      const result = ackResult(replies[j] ?? []);
      if (g.children) {
        // As ack() reports them: by spider type, those that had children.
        const own = g.children.get(p.spider) ?? [];
        result.children = new Map(own.length > 0 ? [[p.spider, own.map((_, n) => outcomeOf(codes[c + n]))]] : []);
        c += own.length;
      }
      return result;
    });
  }

  /** Whether every child goes to the lease's own spider type and partition (so it can be folded into the ack). */
  #allOwn(own: PartitionRef, children: ReadonlyMap<string, readonly FrontierItem[]> | undefined): boolean {
    for (const [spider, kids] of children ?? []) {
      if (kids.length === 0) continue;
      if (spider !== own.spider) return false;
      for (const k of kids) if (!samePartition(this.partitionFor(own.spider, k.request.domain), own)) return false;
    }
    return true;
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
    const r = await this.#run<[number, number?]>(
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
      n += await this.#run<number>(
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

/** ack.lua's reply for one lease (ack-enqueue.lua's too, one per lease, then the children's codes). */
type AckReply = [number?, number?, number?, number?, number?];

/**
 * Most children one ack-enqueue call of {@link Frontier.ackMany} queues (more pages' go in further calls): a Kafka
 * batch of link-heavy pages would otherwise hold Redis for one long script.
 */
export const MAX_FOLDED_CHILDREN = 2000;

/** How many children of an ack go to its lease's own spider type. */
function ownChildren(it: {
  lease: Pick<Lease, 'partition'>;
  children?: ReadonlyMap<string, readonly FrontierItem[]>;
}): number {
  return it.children?.get(it.lease.partition.spider)?.length ?? 0;
}

/** `idx` cut into runs (in order) whose children add up to at most {@link MAX_FOLDED_CHILDREN}, one item at least. */
function byChildren(idx: readonly number[], childrenOf: (i: number) => number): number[][] {
  const runs: number[][] = [];
  let run: number[] = [];
  let n = 0;
  for (const i of idx) {
    const c = childrenOf(i);
    if (run.length > 0 && n + c > MAX_FOLDED_CHILDREN) {
      runs.push(run);
      run = [];
      n = 0;
    }
    run.push(i);
    n += c;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** `items`' indexes grouped by their partition (one script call each), in first-seen order. */
function byPartition<T>(
  items: readonly T[],
  partitionOf: (item: T) => PartitionRef,
): { p: PartitionRef; idx: number[] }[] {
  const groups = new Map<string, { p: PartitionRef; idx: number[] }>();
  items.forEach((item, i) => {
    const p = partitionOf(item);
    const id = `${p.prefix}\u0000${p.scope}\u0000${p.partition}\u0000${p.spider}`;
    const g = groups.get(id) ?? { p, idx: [] };
    g.idx.push(i);
    groups.set(id, g);
  });
  return [...groups.values()];
}

function ackResult(r: AckReply): AckResult {
  const [code = -1, queued = 0, leased = 0, done = 0, failed = 0] = r;
  return { acked: code >= 1, complete: code === 2, queued, leased, done, failed };
}

export type { FrontierItem } from './frontier-types.ts';

/** enqueue.lua's code for a request → its outcome. */
function outcomeOf(code: number | undefined): EnqueueOutcome {
  return OUTCOMES[String(code)] ?? 'unknown_crawl';
}

function samePartition(a: PartitionRef, b: PartitionRef): boolean {
  return a.prefix === b.prefix && a.scope === b.scope && a.partition === b.partition && a.spider === b.spider;
}

/** A memo of crawl keys for one spider type: one SHA-1 per crawl, not per request (few crawls per batch). */
function crawlKeys(spider: string): (crawl: CrawlRef) => string {
  const keys = new Map<string, string>();
  return (crawl) => {
    const id = `${crawl.appid}\n${crawl.crawlid}`;
    let ck = keys.get(id);
    if (ck === undefined) {
      ck = crawlKey(crawl.appid, crawl.crawlid, spider);
      keys.set(id, ck);
    }
    return ck;
  };
}

/**
 * The dupefilter KEYS and the ARGV of the requests `idx` of `items` (all in partition `p`), as enqueue.lua takes
 * them after its TTL (includes/enqueue.lua): spider type, the crawls, the requests. With a `cache`, a crawl sent
 * without settings claims the token it knows for its dupefilter, and its requests cached under that token are left
 * out (`sent` lists the positions in `idx` that went; `crawlOf` gives each position's crawl index).
 */
function enqueueArgs(
  p: PartitionRef,
  spider: string,
  items: readonly FrontierItem[],
  idx: readonly number[],
  keyOf: (crawl: CrawlRef) => string,
  cache?: DupeCache,
): { dupeKeys: string[]; args: (string | number | Buffer)[]; sent: number[]; crawlOf: number[] } {
  const crawlIndex = new Map<string, number>();
  const crawlArgs: (string | number)[] = [];
  const dupeKeys: string[] = [];
  const reqArgs: (string | number | Buffer)[] = [];
  const sent: number[] = [];
  const crawlOf: number[] = new Array(idx.length);
  // A crawl with a seed in the batch claims nothing: the seed may start it afresh (a claim would not hold).
  const seeded = new Set<string>();
  if (cache !== undefined)
    for (const i of idx)
      if ((items[i] as FrontierItem).crawl.settings) seeded.add(keyOf((items[i] as FrontierItem).crawl));
  for (let k = 0; k < idx.length; k++) {
    const { crawl, request } = items[idx[k] as number] as FrontierItem;
    const ck = keyOf(crawl);
    let ci = crawlIndex.get(ck);
    if (ci === undefined) {
      ci = crawlIndex.size + 1;
      crawlIndex.set(ck, ci);
      const dk = dupefilterKey(p, ck);
      dupeKeys.push(dk);
      const s = crawl.settings;
      const claim = cache !== undefined && !seeded.has(ck) ? cache.claim(dk) : '';
      crawlArgs.push(ck, crawl.appid, s ? JSON.stringify(s) : '', s?.expires ?? 0, s?.domain_max_pages ?? 0, claim);
    } else if (crawl.settings && crawlArgs[(ci - 1) * 6 + 2] === '') {
      // A seed after a child of the same crawl in one batch: the seed's settings register the crawl.
      crawlArgs[(ci - 1) * 6 + 2] = JSON.stringify(crawl.settings);
      crawlArgs[(ci - 1) * 6 + 3] = crawl.settings.expires ?? 0;
      crawlArgs[(ci - 1) * 6 + 4] = crawl.settings.domain_max_pages ?? 0;
    }
    crawlOf[k] = ci;
    if (request.fingerprint.length !== 8) throw new Error('request fingerprints are 8 bytes');
    const claim = crawlArgs[(ci - 1) * 6 + 5] as string;
    if (claim !== '' && cache?.has(dupeKeys[ci - 1] as string, claim, request.fingerprint)) continue;
    sent.push(k);
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
  return { dupeKeys, args: [spider, crawlIndex.size, ...crawlArgs, sent.length, ...reqArgs], sent, crawlOf };
}
