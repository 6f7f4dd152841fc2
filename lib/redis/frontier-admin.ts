/**
 * The frontier's crawl-wide and periodic operations, which visit every partition of a spider type: stopping a
 * crawl, sweeping finished crawls, the expiry index, info answers, domain configuration and the backlog. The
 * `Frontier` methods of the same names (lib/redis/frontier.ts) say what each means; these are their bodies.
 */
import { decodeCounters, decodeWaits, mergeInfos } from './crawl-info.ts';
import type { FrontierCalls } from './frontier-calls.ts';
import type { CrawlInfo, CrawlSettings, DomainAction } from './frontier-types.ts';
import { crawlKey, dupefilterKey, type PartitionRef, partitionKeys } from './keys.ts';

/** At most this many counters of stopped crawls are settled per sweep-finished.lua call (~5 ms of Redis). */
const SETTLE_BUDGET = 5000;

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
  for (const p of calls.partitionsOf(spider)) total += await sweep(calls, p, 'all', now, limit);
  return total;
}

/** Runs sweep-finished.lua until it has nothing left to do; each call does bounded work. */
async function sweep(
  calls: FrontierCalls,
  p: PartitionRef,
  mode: 'all' | 'stopped',
  now: number,
  limit = 1000,
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
  for (const p of calls.partitionsOf(spider)) {
    const flat = await calls.run<string[]>('expiry-due', p, [], [limit, spider], now);
    for (let i = 1; i < flat.length; i += 2) if (flat[i]) out.push(JSON.parse(flat[i] as string) as CrawlSettings);
  }
  return out;
}

/**
 * info.lua's answer for one crawl (`mode` crawl, `id` its crawl key) or every crawl of an app (`mode` app, `id`
 * the appid) on every partition of the spider type; {@link mergeInfos} sums a crawl's partitions.
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
    const rows = await calls.run<[string, number, number, number, number, number, string, number[]][]>(
      'info',
      p,
      [],
      [mode, id, spider],
      now,
    );
    for (const [settings, queued, leased, done, failed, base, counters, waits] of rows) {
      const domains = decodeCounters(counters, base);
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
  }
  return mergeInfos(out);
}

/** `Frontier.configureDomain`: domain-config.lua on every partition of every spider type known or named. */
export async function configureDomain(
  calls: FrontierCalls,
  action: DomainAction,
  domain: string,
  limits: { hits?: number; window?: number; scale?: number },
  now: number,
  alsoSpiders: Iterable<string>,
): Promise<void> {
  const spiders = new Set([...(await calls.spiders()), ...calls.knownSpiders, ...alsoSpiders]);
  for (const spider of spiders) {
    for (const p of calls.partitionsOf(spider)) {
      await calls.run(
        'domain-config',
        p,
        [],
        [action, domain, limits.hits ?? 0, limits.window ?? 0, limits.scale ?? 1],
        now,
      );
    }
  }
}

/** `Frontier.backlog`: queued requests per domain, summed over the spider type's partitions. */
export async function backlog(calls: FrontierCalls, spider: string, now: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of calls.partitionsOf(spider)) {
    // Stopped crawls' requests leave the backlog when their counters are settled: do that first.
    await sweep(calls, p, 'stopped', now);
    const h = await calls.redis.hgetall(partitionKeys(p).domainCounts);
    for (const [d, n] of Object.entries(h)) out[d] = (out[d] ?? 0) + Number(n);
  }
  return out;
}
