/**
 * The expiry job (functions/expire, one run a minute): crawls whose `expires` passed are stopped, each with one
 * `expired` notice, and completed crawls whose dupefilter time has passed are swept.
 */
import { failureCause } from '../errors.ts';
import { type MonitorContext, serverTime } from './context.ts';
import { REDIS_MONITOR_PLUGINS } from './redis-monitor.ts';
import { type Reply, sendReplies } from './replies.ts';

/** Options of {@link expireCrawls}. */
export interface ExpireOptions {
  /**
   * Aborted when the run must end (the Lambda's time is up: middy's early timeout). The run stops before its next
   * crawl, so an abandoned run never goes on in the background next to the next one.
   */
  signal?: AbortSignal;
  /** Due crawls read per step (the expiry index is read again after each step's crawls are claimed). @default 1000 */
  pageSize?: number;
}

/** What one expiry run did. */
export interface ExpireResult {
  expired: number;
  swept: number;
  notices: Reply[];
  /** Set when the run did nothing because another run of this process was still going. */
  skipped?: true;
  /** Set when the run stopped early because its signal was aborted. */
  aborted?: true;
}

/** Runs of {@link expireCrawls} in progress, per context: a second one in the same process skips. */
const running = new WeakSet<MonitorContext>();

/**
 * Notices of crawls this process stopped but could not announce (Kafka failed): sent first by the next run.
 * Bounded; in memory, since the crawl is already claimed and no other run will announce it.
 */
const unsent = new WeakMap<MonitorContext, Reply[]>();
const MAX_UNSENT = 10_000;

/**
 * Stops every crawl whose `expires` has passed and sends one `expired` notice per crawl.
 *
 * Exactly one notice per crawl: each due crawl is claimed by stopping it (stop.lua removes it from the expiry index
 * and returns its settings in the same atomic step), and only the run whose stop returned the settings sends its
 * notice; a crawl another run (or a client's stop) got first is skipped. Notices go out in one send per page of due
 * crawls. Runs never overlap in a process (a second one skips), and an aborted run stops before its next crawl; on
 * AWS the schedule (one run a minute, each ending within 50 s) keeps them apart. If Kafka fails, the notices of the
 * crawls already stopped are kept and sent first by the next run of this process.
 *
 * Isolation (docs/design.md §10): a crawl (or a sweep) that fails on poison is logged and skipped, so one bad record
 * never stops expiry for every other crawl; an infrastructure failure ends the run (the next one tries again).
 */
export async function expireCrawls(ctx: MonitorContext, options: ExpireOptions = {}): Promise<ExpireResult> {
  if (running.has(ctx)) {
    ctx.log.warn('expiry run skipped: the previous one is still going');
    return { expired: 0, swept: 0, notices: [], skipped: true };
  }
  running.add(ctx);
  try {
    return await expireRun(ctx, options);
  } finally {
    running.delete(ctx);
  }
}

async function expireRun(ctx: MonitorContext, options: ExpireOptions): Promise<ExpireResult> {
  const { signal } = options;
  const pageSize = options.pageSize ?? 1000;
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
  const announce = async (batch: Reply[]): Promise<void> => {
    if (batch.length === 0) return;
    try {
      await sendReplies(ctx, batch);
    } catch (error) {
      // Claimed already: no other run will announce these crawls, so they wait here for the next run.
      const kept = [...(unsent.get(ctx) ?? []), ...batch].slice(-MAX_UNSENT);
      unsent.set(ctx, kept);
      throw error;
    }
    notices.push(...batch);
  };
  const left = unsent.get(ctx) ?? [];
  unsent.delete(ctx);
  await announce(left);

  let aborted = false;
  spiders: for (const spider of await ctx.frontier.spiders()) {
    if (signal?.aborted) {
      aborted = true;
      break;
    }
    // Completed crawls whose dupefilter time has passed: their records go (bounded growth, docs/design.md §3).
    await isolated({ spider, step: 'sweep' }, async () => {
      swept += await ctx.frontier.sweepFinished(spider, ctx.now());
    });
    for (;;) {
      const due = await ctx.frontier.dueCrawls(spider, ctx.now(), pageSize);
      const batch: Reply[] = [];
      let claimed = 0;
      for (const crawl of due) {
        if (signal?.aborted) {
          aborted = true;
          break;
        }
        await isolated({ spider, appid: crawl.appid, crawlid: crawl.crawlid }, async () => {
          // The claim: stop removes the crawl from the expiry index and returns its settings to one caller only.
          const { purged, settings } = await ctx.frontier.stop(spider, crawl.appid, crawl.crawlid, ctx.now());
          if (settings === undefined) return;
          claimed++;
          batch.push({
            action: 'expired',
            server_time: serverTime(ctx),
            appid: crawl.appid,
            crawlid: crawl.crawlid,
            spiderid: crawl.spiderid ?? spider,
            total_expired: purged,
          });
        });
      }
      await announce(batch);
      // A short page is the last; a page none of whose crawls could be claimed would come back the same.
      if (aborted) break spiders;
      if (due.length < pageSize || claimed === 0) break;
    }
  }
  if (aborted) ctx.log.warn('expiry run aborted; the next run goes on', { expired: notices.length });
  if (notices.length > 0) {
    // Scrapy Cluster's redis-monitor counts expiry under its ExpireMonitor plugin. Best effort, as every count.
    await ctx.stats
      .increment([{ name: `redis-monitor:plugin:${REDIS_MONITOR_PLUGINS.expire}`, by: notices.length }], ctx.now())
      .catch((error: unknown) => ctx.log.warn('stats update failed', { error: (error as Error).message }));
  }
  return aborted ? { expired: notices.length, swept, notices, aborted } : { expired: notices.length, swept, notices };
}
