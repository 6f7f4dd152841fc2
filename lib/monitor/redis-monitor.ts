/**
 * The redis-monitor: handles the validated action, stats and domain-config requests that the kafka-monitor
 * forwards on `<p>.actions`, and replies on the outbound topics (stored under the uuid for REST polling).
 * A request it cannot handle gets a reply with an `error` field; only infrastructure failures fail records.
 */

import { registrableDomain } from '../crawl/domain.ts';
import { failureCause } from '../errors.ts';
import type { DecodedRecord } from '../kafka/record.ts';
import { type ClassifiedRequest, type DomainConfigRequest, URL_FRONTIER_SPIDERID } from '../schemas/index.ts';
import type { StatsIncrement } from '../stats-model.ts';
import { fleetAwareParser, type MonitorContext, serverTime } from './context.ts';
import { infoReply } from './info.ts';
import { type Reply, sendReplies, storeReplies } from './replies.ts';
import { recordBatchStats, statsPayload } from './stats-report.ts';

export interface ActionsResult {
  failures: DecodedRecord[];
  replies: Reply[];
}

async function domainReply(ctx: MonitorContext, r: DomainConfigRequest): Promise<Reply> {
  // The key the crawler throttles and queues the host under (a subdomain's is its registrable domain): the schema
  // normalized the host, this names its domain, so a throttle for `www.ebay.com` or `127.0.0.1` applies to its pages.
  const domain = registrableDomain(r.domain);
  await ctx.frontier.configureDomain(
    r.action,
    domain,
    { hits: r.hits, window: r.window, scale: r.scale },
    ctx.now(),
    ctx.spiders,
  );
  await ctx.urlFrontier?.configureDomain(r.action, domain, { hits: r.hits, window: r.window, scale: r.scale });
  return { action: r.action, domain, uuid: r.uuid, appid: r.appid, server_time: serverTime(ctx) };
}

/** The reply to one request (throws only on infrastructure failure). */
async function replyTo(ctx: MonitorContext, c: ClassifiedRequest): Promise<Reply | undefined> {
  switch (c.type) {
    case 'action': {
      const r = c.request;
      if (r.action === 'info') return infoReply(ctx, r);
      // A URL Frontier crawl is stopped by deleting it (the API's DeleteCrawl).
      const purged =
        r.spiderid === URL_FRONTIER_SPIDERID
          ? ((await ctx.urlFrontier?.deleteCrawl(r.crawlid as string)) ?? 0)
          : (await ctx.frontier.stop(r.spiderid, r.appid, r.crawlid as string, ctx.now())).purged;
      return {
        action: 'stop',
        server_time: serverTime(ctx),
        uuid: r.uuid,
        appid: r.appid,
        crawlid: r.crawlid,
        spiderid: r.spiderid,
        total_purged: purged,
      };
    }
    case 'stats': {
      const r = c.request;
      const payload = await statsPayload(ctx, r.stats);
      return { stats: r.stats, server_time: serverTime(ctx), uuid: r.uuid, appid: r.appid, ...payload };
    }
    case 'domain':
      return domainReply(ctx, c.request);
    case 'crawl':
      // Crawl requests never come this way; the kafka-monitor enqueues them.
      return undefined;
  }
}

/** The reply to a request whose action failed on poison: its echo plus `error` (as domain config replies do). */
function failedReply(ctx: MonitorContext, c: ClassifiedRequest, error: unknown): Reply {
  const r = c.request as unknown as Record<string, unknown>;
  const reply: Reply = { server_time: serverTime(ctx), error: `could not be handled: ${(error as Error).message}` };
  for (const field of ['action', 'stats', 'domain', 'uuid', 'appid', 'crawlid', 'spiderid']) {
    if (r[field] !== undefined) reply[field] = r[field];
  }
  return reply;
}

/**
 * The `plugins` names of the redis-monitor's stats: Scrapy Cluster's monitor class names (counted as
 * `redis-monitor:plugin:<name>`; `ExpireMonitor` is counted by expiry, lib/monitor/expire-crawls.ts).
 */
export const REDIS_MONITOR_PLUGINS = {
  info: 'InfoMonitor',
  stop: 'StopMonitor',
  expire: 'ExpireMonitor',
  stats: 'StatsMonitor',
  domain: 'ZookeeperMonitor',
} as const;

function redisMonitorPlugin(c: ClassifiedRequest): string | undefined {
  switch (c.type) {
    case 'action':
      return c.request.action === 'info' ? REDIS_MONITOR_PLUGINS.info : REDIS_MONITOR_PLUGINS.stop;
    case 'stats':
      return REDIS_MONITOR_PLUGINS.stats;
    case 'domain':
      return REDIS_MONITOR_PLUGINS.domain;
    case 'crawl':
      // Never forwarded here (the kafka-monitor enqueues crawls): nothing handles it, nothing is counted.
      return undefined;
  }
}

/** Handles one batch of `<p>.actions` records. */
export async function handleActions(ctx: MonitorContext, records: DecodedRecord[]): Promise<ActionsResult> {
  const replies: Reply[] = [];
  const failures: DecodedRecord[] = [];
  const stats: StatsIncrement[] = [{ name: 'redis-monitor:total', by: records.length }];
  const parse = await fleetAwareParser(ctx);
  for (let i = 0; i < records.length; i++) {
    const record = records[i] as DecodedRecord;
    let c: ClassifiedRequest;
    try {
      c = await parse(record.value);
    } catch (error) {
      // The kafka-monitor validated it; something else wrote to the internal topic. Whatever it is, it is
      // this record's problem, never the partition's (docs/design.md §10).
      ctx.log.warn('invalid record on the actions topic skipped', {
        offset: record.offset,
        error: (error as Error).message,
      });
      stats.push({ name: 'redis-monitor:fail' });
      continue;
    }
    const plugin = redisMonitorPlugin(c);
    if (plugin !== undefined) stats.push({ name: `redis-monitor:plugin:${plugin}` });
    try {
      const reply = await replyTo(ctx, c);
      if (reply) replies.push(reply);
    } catch (error) {
      if (failureCause(error) === 'poison') {
        // Redis refused this action for good (a script error): answered with the error, never redelivered.
        ctx.log.error('action failed on poison; answering with the error', {
          offset: record.offset,
          error: (error as Error).message,
        });
        stats.push({ name: 'redis-monitor:fail' });
        replies.push(failedReply(ctx, c, error));
        continue;
      }
      ctx.log.error('action failed; it and the rest of the batch will be delivered again', {
        offset: record.offset,
        error: (error as Error).message,
      });
      failures.push(...records.slice(i));
      break;
    }
  }
  if (replies.length > 0) {
    try {
      // Stored first: if sending fails the batch comes again and the store is simply overwritten.
      await storeReplies(ctx, replies);
      await sendReplies(ctx, replies);
    } catch (error) {
      ctx.log.error('sending replies failed; the batch will be delivered again', { error: (error as Error).message });
      return { failures: records, replies };
    }
  }
  await recordBatchStats(ctx, 'redis-monitor', stats);
  return { failures, replies };
}
