/**
 * `stats` replies in Scrapy Cluster's shapes (docs/contract.md), from the time-bucketed counters and the
 * heartbeats (never a keyspace scan: counter names come from the registry).
 *
 * Counter names written by the components:
 * - `<monitor>:total`, `<monitor>:fail`, `<monitor>:plugin:<name>` for kafka-monitor, redis-monitor, rest (the
 *   monitors' names are Scrapy Cluster's handler / monitor class names, kafka-monitor.ts KAFKA_MONITOR_PLUGINS and
 *   redis-monitor.ts REDIS_MONITOR_PLUGINS; rest's are request types);
 * - `crawler:<spider>:<status>` and `machine:<host>:<status>` by the crawler fleet (status: HTTP code or error kind;
 *   only HTTP codes are reported as statuses, see {@link byStatus});
 * - `proxy:<name>:<outcome>` by the crawler fleet with CRAWLER_PROXIES (the proxy's name may hold `:`, as host:port;
 *   outcome `ok` or a `proxy_*` failure, lib/crawl/fetch/proxy-route.ts).
 * Heartbeats: kind `kafka-monitor` / `redis-monitor` / `rest` (id host:pid), kind `crawler` (id `<spider>|<host>|<pid>`),
 * and kind `crawler-task` (id host:pid), whose beat carries the process's load report for the fleet sizing
 * (lib/crawl/crawler/load-report.ts, read by fleet-metrics.ts).
 */

import { HEARTBEAT_TTL_MS } from '../crawl/crawler/load-report.ts';
import type { UrlFrontierView } from '../ports.ts';
import { type StatsType, URL_FRONTIER_SPIDERID } from '../schemas/index.ts';
import type { StatsCounts, StatsIncrement } from '../stats-model.ts';
import type { MonitorContext } from './context.ts';

/**
 * Most domains a `queue` stats reply lists under a spider type (`domains`, the busiest first): the reply is one Kafka
 * message, and 100,000 domains would be about 4 MB. `num_domains` and `spider_backlog` still count them all.
 */
export const STATS_TOP_DOMAINS = 1000;

/** Heartbeats older than this are not live (one TTL for every kind, defined with the crawler's heartbeat). */
export { HEARTBEAT_TTL_MS };

/**
 * Counts a monitor's batch and beats its heartbeat. Best effort: losing a count must not make Lambda
 * redeliver a batch, so a failure is logged, never thrown.
 */
export async function recordBatchStats(
  ctx: Pick<MonitorContext, 'stats' | 'nodeId' | 'now' | 'log'>,
  kind: 'kafka-monitor' | 'redis-monitor',
  increments: StatsIncrement[],
): Promise<void> {
  try {
    const now = ctx.now();
    await ctx.stats.increment(increments, now);
    await ctx.stats.beat(kind, ctx.nodeId, now, HEARTBEAT_TTL_MS);
  } catch (error) {
    ctx.log.warn('stats update failed', { error: (error as Error).message });
  }
}

async function counters(ctx: MonitorContext, namePrefix: string): Promise<Record<string, StatsCounts>> {
  const names = await ctx.stats.names(namePrefix);
  return names.length === 0 ? {} : ctx.stats.read(names, ctx.now());
}

const ZERO: StatsCounts = { '900': 0, '3600': 0, '21600': 0, '43200': 0, '86400': 0, '604800': 0, lifetime: 0 };

async function monitorStats(ctx: MonitorContext, monitor: string) {
  const c = await counters(ctx, `${monitor}:`);
  const plugins: Record<string, StatsCounts> = {};
  for (const [name, counts] of Object.entries(c)) {
    const m = name.match(/^[^:]+:plugin:(.+)$/);
    if (m?.[1]) plugins[m[1]] = counts;
  }
  // Scrapy Cluster's shape: {<machine>: [<instance ids>]}; ids are `<name>@<host>:<pid>`.
  const nodes: Record<string, string[]> = {};
  for (const id of await ctx.stats.live(monitor, ctx.now(), HEARTBEAT_TTL_MS)) {
    const host = id.match(/@([^:]+)/)?.[1] ?? id;
    const list = nodes[host] ?? [];
    list.push(id);
    nodes[host] = list;
  }
  return { total: c[`${monitor}:total`] ?? ZERO, fail: c[`${monitor}:fail`] ?? ZERO, plugins, nodes };
}

/**
 * Scrapy Cluster clients read every key of a spider's or machine's stats (but `count`) as an HTTP status code
 * (`int(code)`). The crawler also counts outcomes without one (`robots`: a robots.txt refusal, `error`: a
 * failure without a response, `retry`: such a failure retried): those are reported apart, under
 * `spider_outcomes` / `machine_outcomes`, never among the status codes.
 */
const STATUS_CODE = /^\d+$/;

/** `crawler:<spider>:<status>` or `machine:<host>:<status>` counters, split into status codes and other outcomes. */
function byStatus(c: Record<string, StatsCounts>) {
  const codes: Record<string, Record<string, StatsCounts>> = {};
  const outcomes: Record<string, Record<string, StatsCounts>> = {};
  for (const [name, counts] of Object.entries(c)) {
    const [, owner = '', status = ''] = name.split(':');
    const into = STATUS_CODE.test(status) ? codes : outcomes;
    const m = into[owner] ?? {};
    m[status] = counts;
    into[owner] = m;
  }
  return { codes, outcomes };
}

async function spiderStats(ctx: MonitorContext) {
  const live = await ctx.stats.live('crawler', ctx.now(), HEARTBEAT_TTL_MS);
  const { codes, outcomes } = byStatus(await counters(ctx, 'crawler:'));
  const spiders: Record<string, unknown> = {};
  const perSpider = new Map<string, number>();
  for (const id of live) {
    const spider = id.split('|')[0] ?? 'unknown';
    perSpider.set(spider, (perSpider.get(spider) ?? 0) + 1);
  }
  for (const spider of new Set([...Object.keys(codes), ...Object.keys(outcomes), ...perSpider.keys()])) {
    spiders[spider] = { count: perSpider.get(spider) ?? 0, ...codes[spider] };
  }
  return {
    spiders: { unique_spider_count: perSpider.size, total_spider_count: live.length, ...spiders },
    spider_outcomes: outcomes,
  };
}

async function machineStats(ctx: MonitorContext) {
  const { codes, outcomes } = byStatus(await counters(ctx, 'machine:'));
  const machines: Record<string, Record<string, StatsCounts>> = {};
  for (const machine of new Set([...Object.keys(codes), ...Object.keys(outcomes)]))
    machines[machine] = codes[machine] ?? {};
  return { machines: { count: Object.keys(machines).length, ...machines }, machine_outcomes: outcomes };
}

/** Requests per proxy and outcome (`proxy:<name>:<outcome>`): `{<name>: {<outcome>: counts}}`. */
async function proxyStats(ctx: MonitorContext): Promise<Record<string, Record<string, StatsCounts>>> {
  const proxies: Record<string, Record<string, StatsCounts>> = {};
  for (const [name, counts] of Object.entries(await counters(ctx, 'proxy:'))) {
    const cut = name.lastIndexOf(':');
    const proxy = name.slice('proxy:'.length, cut);
    const outcomes = proxies[proxy] ?? {};
    outcomes[name.slice(cut + 1)] = counts;
    proxies[proxy] = outcomes;
  }
  return proxies;
}

/** The URL Frontier API's backlog per queue key, summed over its crawls (queues with nothing left omitted). */
export async function urlFrontierBacklog(
  view: Pick<UrlFrontierView, 'backlog'> | undefined,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (!view) return out;
  for (const queues of Object.values(await view.backlog()))
    for (const [key, n] of Object.entries(queues)) if (n > 0) out.set(key, (out.get(key) ?? 0) + n);
  return out;
}

async function queueStats(ctx: MonitorContext) {
  const queues: Record<string, unknown> = {};
  let total = 0;
  for (const spider of await ctx.frontier.spiders()) {
    const summary = await ctx.frontier.queueSummary(spider, STATS_TOP_DOMAINS);
    total += summary.queued;
    queues[`queue_${spider}`] = {
      spider_backlog: summary.queued,
      num_domains: summary.domains,
      domains: summary.busiest,
    };
  }
  // The URL Frontier API's queues, as one more spider type (keys summed over its crawls), when it has any.
  const uf = await urlFrontierBacklog(ctx.urlFrontier);
  if (uf.size > 0) {
    const domains = [...uf]
      .map(([domain, backlog]) => ({ domain, backlog }))
      .sort((a, b) => b.backlog - a.backlog || a.domain.localeCompare(b.domain));
    const spiderBacklog = domains.reduce((s, d) => s + d.backlog, 0);
    total += spiderBacklog;
    queues[`queue_${URL_FRONTIER_SPIDERID}`] = {
      spider_backlog: spiderBacklog,
      num_domains: domains.length,
      domains: domains.slice(0, STATS_TOP_DOMAINS),
    };
  }
  return { queues: { total_backlog: total, ...queues } };
}

/** Scrapy Cluster's crawler stats: `{spiders, machines, queue}`, and `proxies` once a request went through one. */
async function crawlerStats(ctx: MonitorContext) {
  const proxies = await proxyStats(ctx);
  return {
    ...(await spiderStats(ctx)),
    ...(await machineStats(ctx)),
    queue: (await queueStats(ctx)).queues,
    ...(Object.keys(proxies).length > 0 ? { proxies } : {}),
  };
}

/** The payload of a stats reply of this type (merged into the reply's top level, as Scrapy Cluster does). */
export async function statsPayload(ctx: MonitorContext, type: StatsType): Promise<Record<string, unknown>> {
  switch (type) {
    case 'kafka-monitor':
    case 'redis-monitor':
    case 'rest':
      return monitorStats(ctx, type);
    case 'spider':
      return spiderStats(ctx);
    case 'machine':
      return machineStats(ctx);
    case 'queue':
      return queueStats(ctx);
    case 'crawler':
      return crawlerStats(ctx);
    case 'all':
      return {
        'kafka-monitor': await monitorStats(ctx, 'kafka-monitor'),
        'redis-monitor': await monitorStats(ctx, 'redis-monitor'),
        crawler: await crawlerStats(ctx),
        rest: await monitorStats(ctx, 'rest'),
      };
  }
}
