/**
 * `info` replies in Scrapy Cluster's shapes (docs/contract.md), built from the frontier's counters.
 * `low_priority` / `high_priority` are the lowest and highest request priority queued for a domain.
 * `expires` is a string, as Scrapy Cluster sends it (it reads it back from Redis).
 */
import type { CrawlInfo } from '../redis/frontier-types.ts';
import { type ActionRequest, URL_FRONTIER_SPIDERID } from '../schemas/index.ts';
import { type MonitorContext, serverTime } from './context.ts';
import type { Reply } from './replies.ts';

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

/**
 * URL Frontier crawls as Scrapy Cluster's info shapes: each queue key is a "domain" (priorities 0: the API has
 * none), a crawl ID a crawlid; the appid is only echoed (the API has no apps).
 */
async function urlFrontierInfo(
  ctx: MonitorContext,
  request: ActionRequest,
  base: Record<string, unknown>,
): Promise<Reply> {
  const backlog = ctx.urlFrontier ? await ctx.urlFrontier.backlog(request.crawlid) : {};
  const summaries = (queues: Record<string, number>) => {
    const domains: Record<string, DomainSummary> = {};
    for (const [key, total] of Object.entries(queues))
      if (total > 0) domains[key] = { low_priority: 0, high_priority: 0, total };
    return domains;
  };
  const sum = (domains: Record<string, DomainSummary>) => Object.values(domains).reduce((s, d) => s + d.total, 0);
  if (request.crawlid !== undefined) {
    const domains = summaries(backlog[request.crawlid] ?? {});
    return {
      ...base,
      crawlid: request.crawlid,
      spiderid: request.spiderid,
      total_pending: sum(domains),
      total_domains: Object.keys(domains).length,
      domains,
    };
  }
  const crawlids: Record<string, Record<string, unknown>> = {};
  const allDomains = new Set<string>();
  let totalPending = 0;
  for (const [crawl, queues] of Object.entries(backlog)) {
    const domains = summaries(queues);
    const total = sum(domains);
    if (total <= 0) continue;
    for (const d of Object.keys(domains)) allDomains.add(d);
    totalPending += total;
    crawlids[crawl] = { domains, distinct_domains: Object.keys(domains).length, total };
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
 * Answers an info request: the crawl form when it names a crawlid, else the app form. Spider ID `url-frontier`
 * answers for the URL Frontier API's crawls.
 */
export async function infoReply(ctx: MonitorContext, request: ActionRequest): Promise<Reply> {
  const base = { server_time: serverTime(ctx), uuid: request.uuid, appid: request.appid };
  if (request.spiderid === URL_FRONTIER_SPIDERID) return urlFrontierInfo(ctx, request, base);
  if (request.crawlid !== undefined) {
    const info = await ctx.frontier.crawlInfo(request.spiderid, request.appid, request.crawlid, ctx.now());
    const domains = info ? domainSummaries(info) : {};
    const reply: Reply = {
      ...base,
      crawlid: request.crawlid,
      spiderid: request.spiderid,
      total_pending: info?.queued ?? 0,
      total_domains: Object.keys(domains).length,
      domains,
    };
    if (info?.settings.expires) reply.expires = String(info.settings.expires);
    return reply;
  }
  const infos = await ctx.frontier.appInfo(request.spiderid, request.appid, ctx.now());
  const crawlids: Record<string, Record<string, unknown>> = {};
  const allDomains = new Set<string>();
  let totalPending = 0;
  for (const [crawlid, info] of Object.entries(infos)) {
    // Scrapy Cluster lists the crawls found in the queues: a crawl with nothing queued is not listed (the
    // crawl form still answers for it).
    if (info.queued <= 0) continue;
    const domains = domainSummaries(info);
    for (const d of Object.keys(domains)) allDomains.add(d);
    totalPending += info.queued;
    const entry: Record<string, unknown> = {
      domains,
      distinct_domains: Object.keys(domains).length,
      total: info.queued,
    };
    if (info.settings.expires) entry.expires = String(info.settings.expires);
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
