/**
 * The fleet metrics the stats job (functions/stats) publishes: backlog per spider type, live crawlers, and the
 * backlog per running crawler task that autoscaling follows.
 */
import type { MonitorContext } from './context.ts';
import { HEARTBEAT_TTL_MS, urlFrontierBacklog } from './stats-report.ts';

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

/** Reads them: each spider type's backlog, the crawlers whose heartbeat is live, the URL Frontier API's crawls. */
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
