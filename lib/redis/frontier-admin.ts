/**
 * The frontier's crawl-wide and periodic operations, which visit every partition of a spider type: stopping a
 * crawl, sweeping finished crawls, the expiry index, info answers, domain configuration and the backlog. The
 * `Frontier` methods of the same names (lib/redis/frontier.ts) say what each means; these are their bodies.
 */
import {
  type CrawlInfo,
  type CrawlSettings,
  type DomainAction,
  type PartitionRef,
  partitionId,
  type QueueSummary,
} from '../frontier-model.ts';
import { decodeCounters, decodeWaits, mergeInfos } from './crawl-info.ts';
import type { FrontierCalls } from './frontier-calls.ts';
import { crawlKey, dupefilterKey, partitionKeys } from './keys.ts';
import { holdLiveElsewhere } from './partition-sums.ts';

/*
 * Per-call bounds of the periodic and admin scripts. No command may take 10 ms (docs/design.md §3), and a Redis on a
 * busy host runs a command several times slower than its own CPU time now and then (it is preempted, its caches are
 * cold): each bound keeps a call's work to a small fraction of that, so its slowest calls stay inside it too
 * (bench/PROFILE.md, sizes-backlog). More work is more calls, never a bigger one.
 */

/**
 * At most this many counters of stopped (or swept) crawls are settled per sweep-finished.lua call (its Lua work per
 * counter is most of a call).
 */
const SETTLE_BUDGET = 100;

/**
 * At most this many crawls one sweep-finished.lua call visits (`Frontier.sweepFinished`'s default): a completed crawl
 * dropped is a dozen commands and a JSON decode.
 */
export const SWEEP_CRAWLS = 25;

/**
 * At most this many expired leases one reclaim.lua call returns to their queues (`Frontier.reclaim`'s default): each
 * is a dozen commands (the request, its counters, its domain's schedule).
 */
export const RECLAIM_PAGE = 10;

/** `Frontier.stop`: stop.lua on every partition of the spider type. */
export async function stopCrawl(
  calls: FrontierCalls,
  spider: string,
  appid: string,
  crawlid: string,
  now: number,
): Promise<{ purged: number; settings: CrawlSettings | undefined }> {
  const ck = crawlKey(appid, crawlid, spider);
  let purged = 0;
  let settings: CrawlSettings | undefined;
  for (const p of calls.partitionsOf(spider)) {
    const [n, s] = await calls.run<[number, string]>(
      'stop',
      p,
      [dupefilterKey(p, ck)],
      [ck, calls.options.stopTtlMs],
      now,
    );
    purged += Number(n);
    if (s) settings ??= JSON.parse(s) as CrawlSettings;
  }
  return { purged, settings };
}

/** `Frontier.sweepFinished`: every partition of the spider type swept. @returns how many crawls were dropped */
export async function sweepFinished(calls: FrontierCalls, spider: string, now: number, limit: number): Promise<number> {
  let total = 0;
  for (const p of calls.partitionsOf(spider)) {
    // With several partitions, a crawl complete here but not elsewhere keeps its records (lib/redis/partition-sums.ts).
    await holdLiveElsewhere(calls, p, now, limit);
    total += await sweep(calls, p, 'all', now, limit);
  }
  return total;
}

/** Runs sweep-finished.lua until it has nothing left to do; each call does bounded work. */
async function sweep(
  calls: FrontierCalls,
  p: PartitionRef,
  mode: 'all' | 'stopped',
  now: number,
  limit = SWEEP_CRAWLS,
): Promise<number> {
  let total = 0;
  for (;;) {
    const [n, more] = await calls.run<[number, number]>('sweep-finished', p, [], [limit, mode, SETTLE_BUDGET], now);
    total += n;
    if (more !== 1) return total;
  }
}

/** `Frontier.dueCrawls`: expiry-due.lua on every partition of the spider type. */
export async function dueCrawls(
  calls: FrontierCalls,
  spider: string,
  now: number,
  limit: number,
): Promise<CrawlSettings[]> {
  const out: CrawlSettings[] = [];
  // A crawl over several partitions is in each one's expiry index: listed once.
  const seen = new Set<string>();
  for (const p of calls.partitionsOf(spider)) {
    const flat = await calls.run<string[]>('expiry-due', p, [], [limit, spider], now);
    for (let i = 1; i < flat.length; i += 2) {
      if (!flat[i]) continue;
      const settings = JSON.parse(flat[i] as string) as CrawlSettings;
      const id = `${settings.appid}\n${settings.crawlid}`;
      if (seen.has(id)) continue;
      seen.add(id);
      out.push(settings);
    }
  }
  return out;
}

/**
 * Most crawl counters (a domain at a priority) one info.lua call returns; a crawl with more is read in pages. Like
 * the bounds at the top of this file, small enough that the slowest calls stay far inside the 10 ms.
 */
const INFO_PAGE = 250;
/** Most crawls one info.lua call lists (mode `app`): each is a handful of commands and its settings. */
const INFO_CRAWLS = 50;

/** A crawl as info.lua lists it (its header). */
type InfoRow = [string, number, number, number, number, number, string, string, number, number, number[]];

/**
 * info.lua's answer for one crawl (`mode` crawl, `id` its crawl key) or every crawl of an app (`mode` app, `id`
 * the appid) on every partition of the spider type; {@link mergeInfos} sums a crawl's partitions. Each call returns
 * at most {@link INFO_PAGE} counters and {@link INFO_CRAWLS} crawls; the rest come in further calls, so a crawl over
 * 100,000 domains is many bounded commands. Not a snapshot: counts that change between two pages can leave a domain
 * out of one answer (queued, leased, done and failed are each read at once, and exact).
 */
export async function crawlInfos(
  calls: FrontierCalls,
  spider: string,
  mode: 'crawl' | 'app',
  id: string,
  now: number,
): Promise<CrawlInfo[]> {
  const out: CrawlInfo[] = [];
  for (const p of calls.partitionsOf(spider)) {
    let after = '';
    do {
      const [cursor, ...rows] = await calls.run<[string, ...InfoRow[]]>(
        'info',
        p,
        [],
        [mode, id, spider, INFO_PAGE, INFO_CRAWLS, after],
        now,
      );
      for (const [settings, queued, leased, done, failed, base, counters, ref, read, more, waits] of rows) {
        const domains =
          more === 1
            ? await pagedCounters(calls, p, spider, ref, counters, Number(read), base, now)
            : decodeCounters(counters, base);
        const info: CrawlInfo = {
          settings: JSON.parse(settings) as CrawlSettings,
          queued,
          leased,
          done,
          failed,
          domains,
        };
        const w = waits === undefined || waits.length !== 5 ? undefined : decodeWaits(waits);
        // Only when something waits: a crawl being fetched as fast as it can reads as before.
        if (w !== undefined && (w.throttledDomains > 0 || w.retrying > 0)) info.waits = w;
        out.push(info);
      }
      after = cursor;
    } while (after !== '');
  }
  return mergeInfos(out);
}

/**
 * A crawl's counters past info.lua's first page, read a page at a time (mode `counters`). A counter seen twice
 * (pages shift when counts change between them) counts once.
 */
async function pagedCounters(
  calls: FrontierCalls,
  p: PartitionRef,
  spider: string,
  ref: string,
  first: string,
  firstRead: number,
  base: number,
  now: number,
): Promise<CrawlInfo['domains']> {
  const seen = new Set<string>();
  const domains = decodeCounters(first, base, seen);
  let read = firstRead;
  for (;;) {
    const [packed, n, more] = await calls.run<[string, number, number]>(
      'info',
      p,
      [],
      ['counters', ref, spider, INFO_PAGE, 0, read],
      now,
    );
    decodeCounters(packed, base, seen, domains);
    read += Number(n);
    if (more !== 1 || Number(n) === 0) return domains;
  }
}

/** `Frontier.configureDomain`: domain-config.lua on the domain's partition of every spider type known or named. */
export async function configureDomain(
  calls: FrontierCalls,
  action: DomainAction,
  domain: string,
  limits: { hits?: number; window?: number; scale?: number },
  now: number,
  alsoSpiders: Iterable<string>,
): Promise<void> {
  const spiders = new Set([...(await calls.spiders()), ...calls.knownSpiders, ...alsoSpiders]);
  // Each spider type's partition that holds the domain (spider types sharing a scope share it: set once).
  const done = new Set<string>();
  for (const spider of spiders) {
    const p = calls.partitionFor(spider, domain);
    const id = partitionId(p);
    if (done.has(id)) continue;
    done.add(id);
    await calls.run(
      'domain-config',
      p,
      [],
      [action, domain, limits.hits ?? 0, limits.window ?? 0, limits.scale ?? 1],
      now,
    );
  }
}

/** Fields per HSCAN page of a domain-count HASH: each command returns about this many, whatever the domains. */
const BACKLOG_PAGE = 500;

/**
 * `Frontier.queueSummary`: the kept total and domain count of each partition (backlog-total.lua, O(1)), summed, and
 * the `top` domains with the most queued requests, from the domain counts read a page at a time (HSCAN): bounded
 * commands, O(domains) across them. Not a snapshot: a page shows its domains as they are when it is read.
 */
export async function queueSummary(
  calls: FrontierCalls,
  spider: string,
  top: number,
  now: number,
): Promise<QueueSummary> {
  let queued = 0;
  let domains = 0;
  const busiest = new Busiest(top);
  for (const p of calls.partitionsOf(spider)) {
    // Stopped crawls' requests leave the backlog when their counters are settled: do that first.
    await sweep(calls, p, 'stopped', now);
    const [total, count] = await calls.run<[number, number]>('backlog-total', p, [], [], now);
    queued += Number(total);
    domains += Number(count);
    if (top > 0) await scanDomainCounts(calls, p, (domain, n) => busiest.offer(domain, n));
  }
  return { queued, domains, busiest: busiest.list() };
}

/** `Frontier.backlog`: queued requests per domain, summed over the spider type's partitions, read a page at a time. */
export async function backlog(calls: FrontierCalls, spider: string, now: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of calls.partitionsOf(spider)) {
    await sweep(calls, p, 'stopped', now);
    const here = new Map<string, number>();
    await scanDomainCounts(calls, p, (d, n) => here.set(d, n));
    for (const [d, n] of here) out[d] = (out[d] ?? 0) + n;
  }
  return out;
}

/**
 * Every domain of a partition's domain counts with its count, {@link BACKLOG_PAGE} fields per command. HSCAN may
 * repeat a field (a rehash between pages): the callbacks take the last count they are given for a domain.
 */
async function scanDomainCounts(
  calls: FrontierCalls,
  p: PartitionRef,
  each: (domain: string, n: number) => void,
): Promise<void> {
  const key = partitionKeys(p).domainCounts;
  let cursor = '0';
  do {
    const [next, flat] = await calls.redis.hscan(key, cursor, 'COUNT', BACKLOG_PAGE);
    for (let i = 0; i + 1 < flat.length; i += 2) each(flat[i] as string, Number(flat[i + 1]));
    cursor = next;
  } while (cursor !== '0');
}

/** The `size` domains with the most queued requests (ties: by name), kept in O(size) memory however many are offered. */
class Busiest {
  readonly #size: number;
  #kept = new Map<string, number>();

  constructor(size: number) {
    this.#size = Math.max(0, Math.floor(size));
  }

  offer(domain: string, n: number): void {
    if (this.#size === 0 || n <= 0) return;
    this.#kept.set(domain, n);
    if (this.#kept.size >= 2 * this.#size + 2000) this.#kept = new Map(this.#sorted().slice(0, this.#size));
  }

  list(): { domain: string; backlog: number }[] {
    return this.#sorted()
      .slice(0, this.#size)
      .map(([domain, backlog]) => ({ domain, backlog }));
  }

  #sorted(): [string, number][] {
    // Ties by code unit, not localeCompare: a 100,000-domain stats read sorts often, and domains are ASCII.
    return [...this.#kept].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
}
