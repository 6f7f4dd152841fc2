/**
 * `info` replies in Scrapy Cluster's shapes (docs/contract.md), built from the frontier's counters.
 * `low_priority` / `high_priority` are the lowest and highest request priority queued for a domain.
 * `expires` is a string, as Scrapy Cluster sends it (it reads it back from Redis).
 */
import type { CrawlInfo, CrawlWaits } from '../frontier-model.ts';
import type { SlotLoss } from '../ports.ts';
import { type ActionRequest, URL_FRONTIER_SPIDERID } from '../schemas/index.ts';
import { type MonitorContext, serverTime } from './context.ts';
import type { Reply } from './replies.ts';
import { FRONTIER_STATE_LOST } from './state-watch.ts';

type DomainSummary = { low_priority: number; high_priority: number; total: number };

function domainSummaries(info: CrawlInfo): Record<string, DomainSummary> {
  const out: Record<string, DomainSummary> = {};
  for (const [domain, d] of Object.entries(info.domains)) {
    const prios = Object.keys(d.priorities).map(Number);
    if (prios.length === 0 || d.total === 0) continue;
    out[domain] = { low_priority: Math.min(...prios), high_priority: Math.max(...prios), total: d.total };
  }
  return out;
}

/** One crawl as both info forms report it: its domains, its pending total, its expiry (epoch s) if any. */
interface CrawlSummary {
  domains: Record<string, DomainSummary>;
  total: number;
  expires?: number;
  waits?: CrawlWaits;
}

function frontierSummary(info: CrawlInfo): CrawlSummary {
  const summary: CrawlSummary = { domains: domainSummaries(info), total: info.queued, expires: info.settings.expires };
  if (info.waits !== undefined) summary.waits = info.waits;
  return summary;
}

/** Seconds from `now` (ms) to `dueMs`, one decimal, never negative. */
const secondsUntil = (dueMs: number, now: number) => Math.max(0, Math.round((dueMs - now) / 100) / 10);

/**
 * The crawl form's `throttled` and `retrying` (docs/contract.md), present only when something waits: why pending
 * requests are not fetched now.
 */
function waitFields(waits: CrawlWaits | undefined, now: number): Reply {
  const out: Reply = {};
  if (waits === undefined) return out;
  if (waits.throttledDomains > 0) {
    out.throttled = { domains: waits.throttledDomains, next_in_s: secondsUntil(waits.throttleDueMs, now) };
  }
  if (waits.retrying > 0) {
    out.retrying = {
      requests: waits.retrying,
      attempt: waits.retries + 1,
      next_in_s: secondsUntil(waits.retryDueMs, now),
    };
  }
  return out;
}

/**
 * A URL Frontier crawl as a summary: each queue key is a "domain" (priorities 0: the API has none), its URLs not
 * yet completed the total.
 */
function urlFrontierSummary(queues: Record<string, number>): CrawlSummary {
  const domains: Record<string, DomainSummary> = {};
  let total = 0;
  for (const [key, n] of Object.entries(queues)) {
    if (n <= 0) continue;
    domains[key] = { low_priority: 0, high_priority: 0, total: n };
    total += n;
  }
  return { domains, total };
}

/** The crawl form of an info reply (zeros for an unknown crawl). */
function crawlForm(base: Reply, request: ActionRequest, crawl: CrawlSummary | undefined, now = 0): Reply {
  const domains = crawl?.domains ?? {};
  const reply: Reply = {
    ...base,
    crawlid: request.crawlid,
    spiderid: request.spiderid,
    total_pending: crawl?.total ?? 0,
    total_domains: Object.keys(domains).length,
    domains,
    ...waitFields(crawl?.waits, now),
  };
  if (crawl?.expires) reply.expires = String(crawl.expires);
  return reply;
}

/**
 * The app form of an info reply. Scrapy Cluster lists the crawls found in the queues: a crawl with nothing pending
 * is not listed (the crawl form still answers for it).
 */
function appForm(base: Reply, request: ActionRequest, crawls: Record<string, CrawlSummary>): Reply {
  const crawlids: Record<string, Record<string, unknown>> = {};
  const allDomains = new Set<string>();
  let totalPending = 0;
  for (const [crawlid, crawl] of Object.entries(crawls)) {
    if (crawl.total <= 0) continue;
    for (const d of Object.keys(crawl.domains)) allDomains.add(d);
    totalPending += crawl.total;
    const entry: Record<string, unknown> = {
      domains: crawl.domains,
      distinct_domains: Object.keys(crawl.domains).length,
      total: crawl.total,
    };
    if (crawl.expires) entry.expires = String(crawl.expires);
    crawlids[crawlid] = entry;
  }
  return {
    ...base,
    spiderid: request.spiderid,
    total_pending: totalPending,
    total_domains: allDomains.size,
    total_crawlids: Object.keys(crawlids).length,
    crawlids,
  };
}

/**
 * The crawl form for a crawl that is unknown because its partition lost its state (docs/design.md §12): zeros, and
 * `error` "frontier state lost" with the reason and when it was detected (epoch s), so a client waiting for the
 * crawl's `complete` notice, which will never come, stops waiting.
 */
function lostForm(base: Reply, request: ActionRequest, losses: SlotLoss[]): Reply {
  const last = losses[losses.length - 1] as SlotLoss;
  return {
    ...crawlForm(base, request, undefined),
    error: FRONTIER_STATE_LOST,
    reason: last.reason,
    lost_at: Math.floor(last.at / 1000),
  };
}

const mapValues = <A, B>(o: Record<string, A>, f: (a: A) => B): Record<string, B> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));

/**
 * Answers an info request: the crawl form when it names a crawlid, else the app form. An unknown crawl of a partition
 * whose state was lost gets the crawl form with `error` "frontier state lost" (lostForm). Spider ID `url-frontier`
 * answers for the URL Frontier API's crawls (crawl IDs as crawlids; the appid is only echoed: the API has no apps).
 */
export async function infoReply(ctx: MonitorContext, request: ActionRequest): Promise<Reply> {
  const base = { server_time: serverTime(ctx), uuid: request.uuid, appid: request.appid };
  if (request.spiderid === URL_FRONTIER_SPIDERID) {
    const backlog = ctx.urlFrontier ? await ctx.urlFrontier.backlog(request.crawlid) : {};
    const crawls = mapValues(backlog, urlFrontierSummary);
    return request.crawlid !== undefined
      ? crawlForm(base, request, crawls[request.crawlid])
      : appForm(base, request, crawls);
  }
  if (request.crawlid !== undefined) {
    // The redis-monitor is a watcher too: a loss since its last look is detected (and noted) before it answers.
    await ctx.state?.check([request.spiderid]);
    const info = await ctx.frontier.crawlInfo(request.spiderid, request.appid, request.crawlid, ctx.now());
    if (info === undefined && ctx.state) {
      const losses = await ctx.state.lostFor(request.spiderid);
      if (losses.length > 0) return lostForm(base, request, losses);
    }
    return crawlForm(base, request, info && frontierSummary(info), ctx.now());
  }
  const infos = await ctx.frontier.appInfo(request.spiderid, request.appid, ctx.now());
  return appForm(base, request, mapValues(infos, frontierSummary));
}
