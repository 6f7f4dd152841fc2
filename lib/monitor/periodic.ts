/**
 * The scheduled jobs: expiry (crawls whose `expires` passed are stopped, with an `expired` notice), lease
 * reclaim (requests of dead crawlers go back to their queues), and the fleet metrics that drive autoscaling.
 */
import { failureCause } from '../errors.ts';
import { type MonitorContext, serverTime } from './context.ts';
import { REDIS_MONITOR_PLUGINS } from './redis-monitor.ts';
import { type Reply, sendReplies } from './replies.ts';
import { HEARTBEAT_TTL_MS, urlFrontierBacklog } from './stats-report.ts';

/**
 * Stops every crawl whose `expires` has passed and sends one `expired` notice per crawl. Isolation
 * (docs/design.md §10): a crawl (or a sweep) that fails on poison is logged and skipped, so one bad record never
 * stops expiry for every other crawl; an infrastructure failure ends the run (the next one tries again).
 */
export async function expireCrawls(ctx: MonitorContext): Promise<{ expired: number; swept: number; notices: Reply[] }> {
  const notices: Reply[] = [];
  let swept = 0;
  const isolated = async (what: Record<string, unknown>, work: () => Promise<void>): Promise<void> => {
    try {
      await work();
    } catch (error) {
      if (failureCause(error) === 'infrastructure') throw error;
      ctx.log.error('expiry skipped a poison record', { ...what, error: (error as Error).message });
    }
  };
  for (const spider of await ctx.frontier.spiders()) {
    // Completed crawls whose dupefilter time has passed: their records go (bounded growth, docs/design.md §3).
    await isolated({ spider, step: 'sweep' }, async () => {
      swept += await ctx.frontier.sweepFinished(spider, ctx.now());
    });
    for (const crawl of await ctx.frontier.dueCrawls(spider, ctx.now())) {
      await isolated({ spider, appid: crawl.appid, crawlid: crawl.crawlid }, async () => {
        // Notice first, then stop: if Kafka is down the crawl stays due and the next run tries again
        // (at least once), instead of stopping it and losing its notice.
        const info = await ctx.frontier.crawlInfo(spider, crawl.appid, crawl.crawlid, ctx.now());
        const notice: Reply = {
          action: 'expired',
          server_time: serverTime(ctx),
          appid: crawl.appid,
          crawlid: crawl.crawlid,
          spiderid: crawl.spiderid ?? spider,
          total_expired: info?.queued ?? 0,
        };
        await sendReplies(ctx, [notice]);
        await ctx.frontier.stop(spider, crawl.appid, crawl.crawlid, ctx.now());
        notices.push(notice);
      });
    }
  }
  if (notices.length > 0) {
    // Scrapy Cluster's redis-monitor counts expiry under its ExpireMonitor plugin. Best effort, as every count.
    await ctx.stats
      .increment([{ name: `redis-monitor:plugin:${REDIS_MONITOR_PLUGINS.expire}`, by: notices.length }], ctx.now())
      .catch((error: unknown) => ctx.log.warn('stats update failed', { error: (error as Error).message }));
  }
  return { expired: notices.length, swept, notices };
}

/** Returns expired leases of every spider type to their queues. @returns how many */
export async function reclaimLeases(ctx: MonitorContext): Promise<number> {
  let total = 0;
  for (const spider of await ctx.frontier.spiders()) total += await ctx.frontier.reclaim(spider, ctx.now());
  return total;
}

/** The numbers the stats function publishes as metrics (per spider type and in total). */
export interface FleetMetrics {
  backlog: Record<string, number>;
  totalBacklog: number;
  liveCrawlers: number;
  /** Backlog per running crawler task: the signal the fleet scales on (backlog itself when none run). */
  backlogPerTask: number;
  /**
   * URLs not yet completed in the URL Frontier API's crawls. Reported, but not part of the backlog the fleet
   * scales on: other crawlers (StormCrawler, scrapy-url-frontier) fetch them, not ours.
   */
  urlFrontierBacklog: number;
}

export async function fleetMetrics(ctx: MonitorContext): Promise<FleetMetrics> {
  const backlog: Record<string, number> = {};
  for (const spider of await ctx.frontier.spiders()) {
    backlog[spider] = Object.values(await ctx.frontier.backlog(spider)).reduce((s, n) => s + n, 0);
  }
  const totalBacklog = Object.values(backlog).reduce((s, n) => s + n, 0);
  const liveCrawlers = (await ctx.stats.live('crawler', ctx.now(), HEARTBEAT_TTL_MS)).length;
  let urlFrontierTotal = 0;
  for (const n of (await urlFrontierBacklog(ctx.urlFrontier)).values()) urlFrontierTotal += n;
  return {
    backlog,
    totalBacklog,
    liveCrawlers,
    backlogPerTask: totalBacklog / Math.max(1, liveCrawlers),
    urlFrontierBacklog: urlFrontierTotal,
  };
}
