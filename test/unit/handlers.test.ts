import { describe, expect, it } from 'vitest';

// Ahead of the handler modules: their Powertools logger and metrics read the environment at import.
import '../helpers/silent-powertools.ts';

import type { MSKEvent, ScheduledEvent } from 'aws-lambda';
import { expireHandler } from '../../functions/expire/handler.ts';
import { kafkaMonitorHandler } from '../../functions/kafka-monitor/handler.ts';
import { reclaimHandler } from '../../functions/reclaim/handler.ts';
import { redisMonitorHandler } from '../../functions/redis-monitor/handler.ts';
import type { MskBatchResponse } from '../../functions/shared/msk.ts';
import { statsHandler } from '../../functions/stats/handler.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { lambdaContext, loadEvent } from '../helpers/events.ts';
import { child, seed } from '../helpers/fake-frontier.ts';
import { TEST_NOW, TEST_NOW_SEC, type TestContext, testContext } from '../helpers/fakes.ts';

const provide = (ctx: MonitorContext) => () => Promise.resolve(ctx);

/** The failures of a batch answer as `<partition key>@<offset>`, sorted. */
const failed = (response: MskBatchResponse) =>
  response.batchItemFailures.map((f) => `${f.itemIdentifier.partition}@${f.itemIdentifier.offset}`).sort();

async function invokeKafkaMonitor(ctx: TestContext): Promise<MskBatchResponse> {
  return kafkaMonitorHandler(provide(ctx))(loadEvent<MSKEvent>('kafka-monitor'), lambdaContext('kafka-monitor'));
}

async function invokeRedisMonitor(ctx: TestContext): Promise<MskBatchResponse> {
  return redisMonitorHandler(provide(ctx))(loadEvent<MSKEvent>('redis-monitor'), lambdaContext('redis-monitor'));
}

describe('kafka-monitor handler with events/kafka-monitor.json', () => {
  it('queues the two crawls, forwards three requests, rejects three, and answers no batch item failures', async () => {
    const ctx = testContext();
    const response = await invokeKafkaMonitor(ctx);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(ctx.frontier.totalQueued()).toBe(2);
    expect(ctx.sink.values('demo.actions')).toHaveLength(3);
    expect(ctx.sink.values('demo.rejected')).toHaveLength(3);
  });

  it('with Redis down, answers the two crawl records as failures by <topic>-<partition> and offset', async () => {
    const ctx = testContext();
    ctx.frontier.down = true;
    const response = await invokeKafkaMonitor(ctx);

    expect(response.batchItemFailures).toEqual([
      { itemIdentifier: { partition: 'demo.incoming-0', offset: 100 } },
      { itemIdentifier: { partition: 'demo.incoming-0', offset: 101 } },
    ]);
  });

  it('with Kafka down, answers the forwarded and rejected records as failures', async () => {
    const ctx = testContext();
    ctx.sink.down = true;
    const response = await invokeKafkaMonitor(ctx);

    expect(failed(response)).toEqual([
      'demo.incoming-0@102',
      'demo.incoming-1@10',
      'demo.incoming-1@11',
      'demo.incoming-1@7',
      'demo.incoming-1@8',
      'demo.incoming-1@9',
    ]);
  });

  it('answers no failures for the redelivered event, and queues nothing more', async () => {
    const ctx = testContext();
    await invokeKafkaMonitor(ctx);
    const response = await invokeKafkaMonitor(ctx);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(ctx.frontier.totalQueued()).toBe(2);
  });

  it('with the stats store down, answers no failures', async () => {
    const ctx = testContext();
    ctx.stats.down = true;

    expect(await invokeKafkaMonitor(ctx)).toEqual({ batchItemFailures: [] });
  });

  it('fails the invocation when the context cannot be created, so Lambda retries the batch', async () => {
    const handler = kafkaMonitorHandler(() => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379')));

    await expect(handler(loadEvent<MSKEvent>('kafka-monitor'), lambdaContext('kafka-monitor'))).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });
});

describe('redis-monitor handler with events/redis-monitor.json', () => {
  async function withCrawl(ctx: TestContext): Promise<void> {
    const c = { appid: 'testapp', crawlid: 'abc123' };
    await ctx.frontier.enqueue(
      'link',
      [seed({ ...c, url: 'http://example.com/', priority: 60, maxdepth: 1 }), child(c, 'http://example.com/a', 50)],
      TEST_NOW - 60_000,
    );
  }

  it('answers the five requests on demo.outbound_firehose, stores them, and answers no batch item failures', async () => {
    const ctx = testContext();
    await withCrawl(ctx);
    const response = await invokeRedisMonitor(ctx);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(ctx.sink.values('demo.outbound_firehose')).toMatchObject([
      { uuid: 'info-1', total_pending: 2 },
      { uuid: 'info-2', total_crawlids: 1 },
      { uuid: 'stop-1', action: 'stop', total_purged: 2 },
      { uuid: 'stats-2', stats: 'kafka-monitor' },
      { uuid: 'dom-2', action: 'blacklist-update', domain: 'example.com' },
    ]);
    expect(ctx.replies.uuids()).toEqual(['dom-2', 'info-1', 'info-2', 'stats-2', 'stop-1']);
  });

  it('with Redis failing after the first request, answers the other four records as failures', async () => {
    const ctx = testContext();
    await withCrawl(ctx);
    ctx.frontier.goDownAfter(1);
    const response = await invokeRedisMonitor(ctx);

    expect(response.batchItemFailures).toEqual(
      [1, 2, 3, 4].map((offset) => ({ itemIdentifier: { partition: 'demo.actions-0', offset } })),
    );
    expect(ctx.sink.values('demo.outbound_firehose').map((r) => r.uuid)).toEqual(['info-1']);
  });

  it('with Kafka down, answers all five records as failures', async () => {
    const ctx = testContext();
    ctx.sink.down = true;

    expect(failed(await invokeRedisMonitor(ctx))).toEqual([0, 1, 2, 3, 4].map((o) => `demo.actions-0@${o}`));
  });
});

describe('scheduled handlers with events/scheduled.json', () => {
  const scheduled = () => loadEvent<ScheduledEvent>('scheduled');

  it('expire returns how many crawls it expired', async () => {
    const ctx = testContext();
    await ctx.frontier.enqueue(
      'link',
      [
        seed({ appid: 'testapp', crawlid: 'a', url: 'http://example.com/', expires: TEST_NOW_SEC - 10 }),
        seed({ appid: 'testapp', crawlid: 'b', url: 'http://example.org/', expires: TEST_NOW_SEC - 5 }),
        seed({ appid: 'testapp', crawlid: 'c', url: 'http://example.net/', expires: TEST_NOW_SEC + 60 }),
      ],
      TEST_NOW - 3_600_000,
    );

    expect(await expireHandler(provide(ctx))(scheduled(), lambdaContext('expire'))).toEqual({ expired: 2, swept: 0 });
    expect(ctx.sink.values('demo.outbound_firehose').map((n) => n.crawlid)).toEqual(['a', 'b']);
  });

  it('reclaim returns how many leases it returned to their queues', async () => {
    const ctx = testContext();
    ctx.frontier.expireLeases('link', 4);
    ctx.frontier.expireLeases('wandering', 1);

    expect(await reclaimHandler(provide(ctx))(scheduled(), lambdaContext('reclaim'))).toEqual({ reclaimed: 5 });
  });

  it('stats returns the fleet metrics: backlog per spider, total, live crawlers, backlog per task, the tasks needed', async () => {
    const ctx = testContext();
    const c = { appid: 'testapp', crawlid: 'c1' };
    await ctx.frontier.enqueue(
      'link',
      [
        seed({ ...c, url: 'http://example.com/', maxdepth: 1 }),
        child(c, 'http://example.com/a', -9),
        child(c, 'http://example.org/', -9),
      ],
      TEST_NOW,
    );
    await ctx.stats.beat('crawler', 'link|host-a|1', TEST_NOW - 1000, 300_000);
    await ctx.stats.beat('crawler', 'link|host-b|2', TEST_NOW - 1000, 300_000);
    const load = { at: TEST_NOW - 1000, pagesPerSec: 12, slotsInUse: 4, slotLimit: 16 };
    await ctx.stats.beat(
      'crawler-task',
      'host-a|1',
      TEST_NOW - 1000,
      300_000,
      JSON.stringify({ ...load, bound: 'work', saturated: 0, load: 0.2 }),
    );

    expect(await statsHandler(provide(ctx))(scheduled(), lambdaContext('stats'))).toEqual({
      backlog: { link: 3 },
      totalBacklog: 3,
      liveCrawlers: 2,
      backlogPerTask: 1.5,
      urlFrontierBacklog: 0,
      liveTasks: 1,
      pagesPerSecond: 12,
      slotUtilization: 0.25,
      saturatedShare: 0,
      taskPagesPerSecond: 0,
      tasksNeeded: 1,
    });
  });
});
