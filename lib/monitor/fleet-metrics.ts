/**
 * The fleet metrics the stats job (functions/stats) publishes: backlog per spider type, live crawlers, and what the
 * crawler tasks sustain, from the load report each task's heartbeat carries (lib/crawl/crawler/load-report.ts), with the
 * tasks the backlog needs (fleet-sizing.ts): the signal the fleet scales on (docs/design.md §8 "Fleet sizing").
 * The fleet sized here is the HTML crawler fleet (cdk/constructs/fleet.ts): its backlog is that of the spider types it
 * serves (every one but `browser`) and its tasks are those whose reports do not name `browser`. The browser fleet
 * (cdk/constructs/browser-fleet.ts) scales on its own figure, the `SpiderBacklog` of `browser` per running task
 * (docs/spiders-browser.md "Who runs it").
 * Reads: the spider types' backlog (kept totals, O(1) per partition), the live heartbeats and the reports of the live tasks (one MGET),
 * the fleet's wake record (fleet-wake.ts, one GET): never a listing of the keyspace or of a queue.
 */
import { CRAWLER_TASK_KIND, type CrawlerLoad, parseCrawlerLoad } from '../crawl/crawler/load-report.ts';
import { BROWSER_SPIDER } from '../crawl/spiders/browser.ts';
import type { MonitorContext } from './context.ts';
import { type FleetLoad, fleetLoad, freshLoads } from './fleet-sizing.ts';
import { HEARTBEAT_TTL_MS } from './stats-report.ts';

/** The numbers the stats function publishes as metrics (per spider type and in total). */
export interface FleetMetrics extends FleetLoad {
  /** Every spider type's backlog, `browser` included (`SpiderBacklog`, on which the browser fleet scales). */
  backlog: Record<string, number>;
  /** All of it (`Backlog`, for the dashboard and alarms); `tasksNeeded` counts only the types the HTML fleet serves. */
  totalBacklog: number;
  /** Live crawler heartbeats: one per spider type each process serves. */
  liveCrawlers: number;
  /** Backlog per live crawler (backlog itself when none run): for the dashboard; the fleet scales on tasksNeeded. */
  backlogPerTask: number;
  /**
   * URLs not yet completed in the URL Frontier API's crawls. Reported, but not part of the backlog the fleet
   * scales on: other crawlers (StormCrawler, scrapy-url-frontier) fetch them, not ours.
   */
  urlFrontierBacklog: number;
}

/**
 * Whether the HTML crawler fleet serves a spider type: every one but `browser`, which only browser workers lease
 * (functions/crawler/main.ts). Its backlog is the one the HTML fleet's `TasksNeeded` is computed from.
 */
function htmlFleetServes(spider: string): boolean {
  return spider !== BROWSER_SPIDER;
}

/** Whether a load report is an HTML crawler's: one whose spider types are not `browser` (none named: an older image). */
function isHtmlTask(load: CrawlerLoad): boolean {
  return !load.spiders?.includes(BROWSER_SPIDER);
}

/** The load reports of the live crawler processes, fresh at `nowMs` (unreadable ones left out). */
export async function liveLoads(ctx: MonitorContext, nowMs: number): Promise<CrawlerLoad[]> {
  const ids = await ctx.stats.live(CRAWLER_TASK_KIND, nowMs, HEARTBEAT_TTL_MS);
  const reports = await ctx.stats.reports(CRAWLER_TASK_KIND, ids);
  const loads: CrawlerLoad[] = [];
  for (const text of Object.values(reports)) {
    const load = parseCrawlerLoad(text);
    if (load) loads.push(load);
  }
  return freshLoads(loads, nowMs);
}

/**
 * Reads them: each spider type's backlog, the live crawlers, the HTML fleet's load (its tasks, sized on its own
 * spider types' backlog), the URL Frontier API's crawls.
 */
export async function fleetMetrics(ctx: MonitorContext): Promise<FleetMetrics> {
  const backlog: Record<string, number> = {};
  let htmlBacklog = 0;
  const spiders = await ctx.frontier.spiders();
  // The stats run is one of the watchers of lost state (docs/design.md §12); it reads the markers it knows even when
  // the spider registry itself was emptied.
  await ctx.state?.check(spiders);
  for (const spider of spiders) {
    backlog[spider] = (await ctx.frontier.queueSummary(spider)).queued;
    if (htmlFleetServes(spider)) htmlBacklog += backlog[spider];
  }
  const totalBacklog = Object.values(backlog).reduce((s, n) => s + n, 0);
  const now = ctx.now();
  const liveCrawlers = (await ctx.stats.live('crawler', now, HEARTBEAT_TTL_MS)).length;
  // A request waiting for a plugin type or proxy group: the HTML fleet's names (the browser fleet's one type is
  // built in).
  const wanted = (await ctx.fleetWake?.wanted(now)) ?? false;
  const load = fleetLoad((await liveLoads(ctx, now)).filter(isHtmlTask), htmlBacklog, wanted);
  // The kept total: one command, however many crawls and queues the URL Frontier holds.
  const urlFrontierTotal = (await ctx.urlFrontier?.backlogTotal()) ?? 0;
  return {
    backlog,
    totalBacklog,
    liveCrawlers,
    backlogPerTask: totalBacklog / Math.max(1, liveCrawlers),
    urlFrontierBacklog: urlFrontierTotal,
    ...load,
  };
}
