/**
 * The Redis-full drill (issue 48 item 4): a crawl of the fixture site through the real path (bench/lib/cluster.ts),
 * and partway through it the bench's private Redis is made full (`CONFIG SET maxmemory` to what it uses now, with
 * `maxmemory-policy noeviction`, as ElastiCache runs the frontier) for a while, then given room again. Every write
 * fails with OOM meanwhile: leases, acks, children. Afterwards it counts what a client and the site saw: page
 * messages per URL on the firehose, fetches per page on the site, and whether the crawl completed with every page.
 *
 * Used by the `sizes-redis-full` scenario at production size and by an e2e test at a small one.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSite } from '../../localstack/site/site.ts';
import { type BenchCluster, crawlToCompletion, startBenchCluster } from './cluster.ts';
import { readUrls } from './firehose-urls.ts';
import type { ScenarioContext } from './scenario.ts';

export interface RedisFullDrillOptions {
  /** Pages of the fixture site, all reachable within maxdepth 3 of page 0. */
  pages: number;
  hosts: number;
  workers: number;
  /** Redis is made full once this many pages are done. */
  fullAfterPages: number;
  /** For this long (s). */
  fullForS: number;
  timeoutS: number;
}

export interface RedisFullDrillResult {
  pages: number;
  /** Pages the crawl's complete count says (done + failed), 0 when it did not complete. */
  completed: number;
  failed: number;
  pageMessages: number;
  /** Distinct URLs among the page messages. */
  urls: number;
  /** Page messages beyond one per URL, over the URLs. */
  duplicateShare: number;
  maxMessagesPerUrl: number;
  /** The most fetches the site served for one page. */
  maxFetchesPerPage: number;
  /** Seconds Redis refused writes for. */
  fullSeconds: number;
  seconds: number;
  timedOut: boolean;
}

/** Runs the drill; see the module note. */
export async function redisFullDrill(ctx: ScenarioContext, o: RedisFullDrillOptions): Promise<RedisFullDrillResult> {
  const hosts = Array.from({ length: o.hosts }, (_, i) => `full-${i}.test`);
  // 60 links a page reach every page of a 3,000-page site within depth 3 (site.ts link geometry); more pages more.
  const links = Math.max(60, Math.ceil(Math.cbrt(o.pages) * 5));
  const site = await startSite({ pages: o.pages, links, hosts, pageBytes: 800 });
  const expected = site.reachable(0, 3).size;
  let c: BenchCluster | undefined;
  try {
    c = await startBenchCluster(ctx, {
      workers: o.workers,
      overrides: {
        CRAWLER_HOST_MAP: site.hostMap,
        QUEUE_HITS: 100_000,
        QUEUE_WINDOW: 1,
        QUEUE_MODERATED: false,
        RETRY_BASE_DELAY_MS: 200,
        CRAWLER_CONCURRENCY: 16,
      },
      origins: hosts.map((h) => `http://${h}:${site.port}`),
    });
    const cluster = c;
    const redis = cluster.redis;
    const crawlid = `full${randomBytes(3).toString('hex')}`;
    const crawl = crawlToCompletion(cluster, ctx, { urls: [site.url(0)], maxdepth: 3, crawlid }, o.timeoutS, 'crawl');
    const fullPhase = (async () => {
      for (;;) {
        const info = await cluster.frontier.crawlInfo('link', 'bench', crawlid);
        if ((info?.done ?? 0) + (info?.failed ?? 0) >= o.fullAfterPages) break;
        await sleep(100);
      }
      const used = Number(/used_memory:(\d+)/.exec(String(await redis.info('memory')))?.[1]);
      await redis.config('SET', 'maxmemory-policy', 'noeviction');
      await redis.config('SET', 'maxmemory', String(used));
      const since = Date.now();
      ctx.progress(`  Redis full (maxmemory ${used} bytes) for ${o.fullForS} s`);
      await sleep(o.fullForS * 1000);
      await redis.config('SET', 'maxmemory', '0');
      ctx.progress('  Redis has room again');
      return (Date.now() - since) / 1000;
    })();
    const progress = await crawl;
    const fullSeconds = await fullPhase;
    const perUrl = new Map<string, number>();
    await readUrls(cluster, expected, perUrl, 60);
    const messages = [...perUrl.values()].reduce((a, b) => a + b, 0);
    const fetches = [...site.hits.entries()].filter(([path]) => path.startsWith('/p/')).map(([, n]) => n);
    return {
      pages: expected,
      completed: progress.timedOut ? 0 : progress.done + progress.failed,
      failed: progress.failed,
      pageMessages: messages,
      urls: perUrl.size,
      duplicateShare: perUrl.size === 0 ? 0 : (messages - perUrl.size) / perUrl.size,
      maxMessagesPerUrl: Math.max(0, ...perUrl.values()),
      maxFetchesPerPage: Math.max(0, ...fetches),
      fullSeconds,
      seconds: progress.seconds,
      timedOut: progress.timedOut,
    };
  } finally {
    await c?.redis.config('SET', 'maxmemory', '0').catch(() => undefined);
    await c?.stop();
    await site.close();
  }
}
