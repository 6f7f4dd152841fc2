/**
 * The backlog as stats read it (issue 48 item 9): the stats function, the `queue` stats reply and the dashboard read
 * a spider type's backlog from kept totals and page through the per-domain counts, so no command they send grows
 * with the domains; and the kept total stays equal to the per-domain counts through every operation that moves
 * requests. On real Redis, standalone and cluster mode.
 */
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import type { FrontierItem } from '../../lib/frontier-model.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { STATS_TOP_DOMAINS, statsPayload } from '../../lib/monitor/stats-report.ts';
import { redisStatsStore } from '../../lib/monitor/stores.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { partitionKeys } from '../../lib/redis/keys.ts';
import {
  childCrawl,
  dropTestFrontiers,
  leaseAll,
  queueRequest,
  seedCrawl,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';
import { recordCommands, recordScriptCalls } from '../helpers/scripts.ts';
import { clusterRedis, standaloneRedis, uniqueName } from '../helpers/services.ts';

const clients: [string, RedisClient][] = [
  ['standalone', standaloneRedis()],
  ['cluster mode', clusterRedis()],
];
afterEach(async () => {
  for (const [, redis] of clients) await dropTestFrontiers(redis);
});
afterAll(() => {
  for (const [, redis] of clients) redis.disconnect();
});

/** The most values one command may answer with: a page of fields and their counts, with room for HSCAN's slack. */
const PAGE_VALUES = 2000;

/**
 * Values in a reply: an array's elements, counted through nested arrays (HSCAN's `[cursor, [field, value, ...]]`);
 * a HASH read whole, which ioredis answers as an object, counts its fields and values.
 */
function valuesIn(reply: unknown): number {
  if (Array.isArray(reply)) return reply.reduce((n: number, r) => n + valuesIn(r), 0);
  if (reply !== null && typeof reply === 'object' && !Buffer.isBuffer(reply)) return 2 * Object.keys(reply).length;
  return 1;
}

/** Runs `run`; the commands it sent with how many values each answered. */
async function repliesOf(redis: RedisClient, run: () => Promise<unknown>) {
  const sent = (await recordCommands(redis, run)) as unknown as { name: string; promise: Promise<unknown> }[];
  return Promise.all(sent.map(async (c) => ({ name: c.name, values: valuesIn(await c.promise) })));
}

/** Queues `perDomain` requests in each of `domains` domains (`d<i>.com`) for one crawl, in bounded batches. */
async function queueDomains(frontier: Frontier, domains: number, perDomain: number, from = 0): Promise<void> {
  const crawl = seedCrawl('app', 'a');
  const batch: FrontierItem[] = [];
  for (let i = from; i < from + domains; i++)
    for (let k = 0; k < perDomain; k++) {
      const request = queueRequest(`http://d${i}.com/${k}`);
      batch.push({ crawl: i === 0 && k === 0 ? crawl : childCrawl(crawl), request });
      if (batch.length === 5000) await frontier.enqueue('link', batch.splice(0), T0);
    }
  if (batch.length > 0) await frontier.enqueue('link', batch, T0);
}

/** Queues one request in each of `crawls` crawls (`<name><i>`, app `app`), the i-th on domain `d<i>.com`. */
async function queueCrawls(frontier: Frontier, crawls: number, name: string): Promise<void> {
  const items = Array.from({ length: crawls }, (_, i) => ({
    crawl: seedCrawl('app', `${name}${i}`),
    request: queueRequest(`http://d${i}.com/`),
  }));
  await frontier.enqueue('link', items, T0);
}

/** The monitors' context for the stats reads: the frontier and the stats store on `redis`. */
function statsContext(redis: RedisClient, frontier: Frontier): MonitorContext {
  return {
    frontier,
    stats: redisStatsStore(redis, uniqueName()),
    now: () => T0,
  } as unknown as MonitorContext;
}

describe.each(clients)('the backlog stats read on %s Redis', (_mode, redis) => {
  test('with 20,000 domains queued, the queue stats and the stats function send no command answering more than a page', async () => {
    const frontier = testFrontier(redis);
    await queueDomains(frontier, 20_000, 2);
    // One domain busier than the rest, so the listing's order is checked too.
    await frontier.enqueue(
      'link',
      [{ crawl: childCrawl(seedCrawl('app', 'a')), request: queueRequest('http://d7.com/x') }],
      T0,
    );
    const ctx = statsContext(redis, frontier);

    let payload: Record<string, unknown> = {};
    const statsReplies = await repliesOf(redis, async () => {
      payload = await statsPayload(ctx, 'queue');
    });
    const queue = (
      payload.queues as Record<string, { spider_backlog: number; num_domains: number; domains: unknown[] }>
    ).queue_link;
    expect({ ...queue, domains: queue?.domains.length }).toEqual({
      spider_backlog: 40_001,
      num_domains: 20_000,
      domains: STATS_TOP_DOMAINS,
    });
    expect(queue?.domains[0]).toEqual({ domain: 'd7.com', backlog: 3 });
    expect(queue?.domains[1]).toEqual({ domain: 'd0.com', backlog: 2 });
    const biggest = Math.max(...statsReplies.map((r) => r.values));
    expect(biggest, statsReplies.map((r) => `${r.name}:${r.values}`).join(' ')).toBeLessThanOrEqual(PAGE_VALUES);

    let backlog: Record<string, number> = {};
    const metricsReplies = await repliesOf(redis, async () => {
      backlog = (await fleetMetrics(ctx)).backlog;
    });
    expect(backlog).toEqual({ link: 40_001 });
    // The stats function's backlog is kept totals: a few commands, none of them a page of domains.
    expect(Math.max(...metricsReplies.map((r) => r.values))).toBeLessThan(10);
    expect(metricsReplies.length).toBeLessThan(12);
  });

  test('the kept total equals the domains’ counts through enqueue, lease, ack, retry, release, reclaim, stop and expiry', async () => {
    const frontier = testFrontier(redis, { leaseMs: 1000 });
    /** Checks the summary against every domain's count, read in pages. */
    const agrees = async (now: number, expected: number) => {
      const perDomain = await frontier.backlog('link', now);
      const summary = await frontier.queueSummary('link', 0, now);
      expect(summary).toEqual({
        queued: Object.values(perDomain).reduce((s, n) => s + n, 0),
        domains: Object.keys(perDomain).length,
        busiest: [],
      });
      expect(summary.queued).toBe(expected);
    };
    const a = seedCrawl('app', 'a');
    const b = seedCrawl('app', 'b', { expires: T0 / 1000 + 10 });
    const items = (crawl: typeof a, host: string, n: number): FrontierItem[] =>
      Array.from({ length: n }, (_, i) => ({
        crawl: i === 0 ? crawl : childCrawl(crawl),
        request: queueRequest(`http://${host}${i % 3}.com/${i}`),
      }));
    await frontier.enqueue('link', [...items(a, 'a', 30), ...items(b, 'b', 12)], T0);
    await agrees(T0, 42);

    const leases = await leaseAll(frontier, 'link', T0, { max: 10 });
    expect(leases).toHaveLength(10);
    await agrees(T0, 32);
    const [first, second, third, fourth, ...rest] = leases;
    if (!first || !second || !third || !fourth) throw new Error('too few leases');
    await frontier.ack(first, 'done', T0 + 1);
    await frontier.ack(second, 'fail', T0 + 1);
    await agrees(T0 + 1, 32);
    // A page's children ride with its ack.
    await frontier.ack(third, 'done', T0 + 2, new Map([['link', items(childCrawl(first.crawl), 'c', 4)]]));
    await agrees(T0 + 2, 36);
    expect((await frontier.retry(fourth, 0, T0 + 3)).retried).toBe(true);
    await agrees(T0 + 3, 37);
    expect(await frontier.release(rest.slice(0, 2), T0 + 4)).toBe(2);
    await agrees(T0 + 4, 39);
    // The other leases expire and come back.
    expect(await frontier.reclaim('link', T0 + 5000)).toBe(rest.length - 2);
    await agrees(T0 + 5000, 39 + rest.length - 2);

    // Expiry stops crawl b (the expire function's path), stop takes crawl a: their counts are settled by the read.
    const due = await frontier.dueCrawls('link', T0 + 20_000);
    expect(due.map((c) => c.crawlid)).toEqual(['b']);
    const { purged: purgedB } = await frontier.stop('link', 'app', 'b', T0 + 20_000);
    const left = 39 + rest.length - 2 - purgedB;
    await agrees(T0 + 20_000, left);
    await frontier.stop('link', 'app', 'a', T0 + 20_001);
    await agrees(T0 + 20_001, 0);
    // Leases meet the stopped crawls' requests and drop them: nothing moves twice.
    expect(await leaseAll(frontier, 'link', T0 + 20_002)).toEqual([]);
    await agrees(T0 + 20_002, 0);
  });

  test('a partition written before the total was kept gets it added up once, then keeps it', async () => {
    const frontier = testFrontier(redis);
    await queueDomains(frontier, 50, 3);
    // Data as an older version left it: the per-domain counts, no total.
    const p = frontier.partitionFor('link');
    await redis.del(partitionKeys(p).queuedTotal);
    // Scripts leave the missing total alone (it would start at the wrong count)...
    await leaseAll(frontier, 'link', T0, { max: 5 });
    expect(await redis.exists(partitionKeys(p).queuedTotal)).toBe(0);
    // ...until a stats read adds it up from the counts; from then on it is kept.
    const perDomain = Object.entries(await frontier.backlog('link', T0))
      .map(([domain, backlog]) => ({ domain, backlog }))
      .sort((x, y) => y.backlog - x.backlog || x.domain.localeCompare(y.domain));
    expect(await frontier.queueSummary('link', 2, T0)).toEqual({
      queued: 145,
      domains: perDomain.length,
      busiest: perDomain.slice(0, 2),
    });
    await leaseAll(frontier, 'link', T0 + 1, { max: 7 });
    await queueDomains(frontier, 2, 1, 50);
    expect((await frontier.queueSummary('link', 0, T0 + 2)).queued).toBe(140);
  });
});

/** Counters in an info.lua reply: each packed string holds `member \x01 score` pairs joined by `\x01`. */
function countersIn(reply: unknown): number {
  if (Array.isArray(reply)) return reply.reduce((n: number, r) => n + countersIn(r), 0);
  return typeof reply === 'string' && reply.includes('\x01') ? reply.split('\x01').length / 2 : 0;
}

describe.each(clients)('crawl info on %s Redis', (_mode, redis) => {
  test('a crawl over 3,000 domains at two priorities is answered whole, no call returning more than 250 counters', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'big');
    const items: FrontierItem[] = [];
    for (let i = 0; i < 3000; i++)
      for (const priority of [1, 5])
        items.push({
          crawl: items.length === 0 ? crawl : childCrawl(crawl),
          request: queueRequest(`http://d${i}.com/${priority}`, priority),
        });
    await frontier.enqueue('link', items, T0);

    let info: Awaited<ReturnType<Frontier['crawlInfo']>>;
    const sent = (await recordCommands(redis, async () => {
      info = await frontier.crawlInfo('link', 'app', 'big', T0);
    })) as unknown as { promise: Promise<unknown> }[];
    const pages = await Promise.all(sent.map(async (c) => countersIn(await c.promise)));
    // The page of docs/design.md §3: a bigger one makes a slower command.
    expect(Math.max(...pages)).toBeLessThanOrEqual(250);
    expect(pages.reduce((a, b) => a + b, 0)).toBe(6000);
    expect(info?.queued).toBe(6000);
    expect(Object.keys(info?.domains ?? {})).toHaveLength(3000);
    expect(info?.domains['d1234.com']).toEqual({ priorities: { 1: 1, 5: 1 }, total: 2 });
  });

  test('an app of 450 crawls is listed whole, in calls of at most 50 crawls', async () => {
    const frontier = testFrontier(redis);
    const items: FrontierItem[] = Array.from({ length: 450 }, (_, i) => ({
      crawl: seedCrawl('app', `c${i}`),
      request: queueRequest(`http://d${i % 7}.com/${i}`),
    }));
    await frontier.enqueue('link', items, T0);
    let infos: Awaited<ReturnType<Frontier['appInfo']>> = {};
    const calls = await recordScriptCalls(redis, async () => {
      infos = await frontier.appInfo('link', 'app', T0);
    });
    // Nine full calls, then one that finds nothing after the ninth's last crawl.
    expect(calls.filter((c) => c.script === 'info')).toHaveLength(10);
    expect(Object.keys(infos)).toHaveLength(450);
    expect(infos.c449).toMatchObject({ queued: 1, domains: { 'd1.com': { total: 1 } } });
  });
});

describe.each(clients)('the expire path on %s Redis', (_mode, redis) => {
  test('a completed crawl with a page cap over 5,000 domains is dropped in calls settling at most 100 counters each', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'capped', { domain_max_pages: 1 });
    const items: FrontierItem[] = Array.from({ length: 5000 }, (_, i) => ({
      crawl: i === 0 ? crawl : childCrawl(crawl),
      request: queueRequest(`http://d${i}.com/`),
    }));
    for (let i = 0; i < items.length; i += 5000) await frontier.enqueue('link', items.slice(i, i + 5000), T0);
    for (;;) {
      const { leases } = await frontier.leaseMany('link', 100, { now: T0 });
      if (leases.length === 0) break;
      await frontier.ackMany(
        leases.map((lease) => ({ lease, outcome: 'done' as const })),
        T0,
      );
    }
    expect(await frontier.crawlInfo('link', 'app', 'capped', T0)).toMatchObject({ queued: 0, done: 5000 });

    const p = frontier.partitionFor('link');
    const calls = await recordScriptCalls(redis, async () => {
      expect(await frontier.sweepFinished('link', T0 + 3_600_000)).toBe(1);
    });
    // 5,000 page-cap counters, at most 100 a call.
    expect(calls.filter((c) => c.script === 'sweep-finished').length).toBeGreaterThanOrEqual(50);
    expect(await redis.zcard(partitionKeys(p).crawlIndex)).toBe(0);
    expect(await redis.zcard(partitionKeys(p).finished)).toBe(0);
    expect(await frontier.crawlInfo('link', 'app', 'capped', T0 + 3_600_000)).toBeUndefined();
  });

  test('completed crawls are swept 25 a call, every one of them', async () => {
    const frontier = testFrontier(redis);
    await queueCrawls(frontier, 60, 'done');
    const leases = await leaseAll(frontier, 'link', T0);
    expect(leases).toHaveLength(60);
    await frontier.ackMany(
      leases.map((lease) => ({ lease, outcome: 'done' as const })),
      T0,
    );

    let swept = 0;
    const calls = await recordScriptCalls(redis, async () => {
      swept = await frontier.sweepFinished('link', T0 + 3_600_000);
    });
    expect(swept).toBe(60);
    expect(calls.filter((c) => c.script === 'sweep-finished')).toHaveLength(3);
    expect(await frontier.crawlInfo('link', 'app', 'done59', T0 + 3_600_000)).toBeUndefined();
  });

  test('expired leases go back 10 a call, every one of them', async () => {
    const frontier = testFrontier(redis);
    await queueDomains(frontier, 100, 1);
    expect(await leaseAll(frontier, 'link', T0)).toHaveLength(100);
    expect((await frontier.queueSummary('link', 0, T0)).queued).toBe(0);

    let reclaimed = 0;
    const calls = await recordScriptCalls(redis, async () => {
      reclaimed = await frontier.reclaim('link', T0 + 60_001);
    });
    expect(reclaimed).toBe(100);
    expect(calls.filter((c) => c.script === 'reclaim')).toHaveLength(10);
    expect((await frontier.queueSummary('link', 0, T0 + 60_001)).queued).toBe(100);
  });

  test('a stop drops at most 100 run-out stops, so none deletes a whole quiet spell of them in one command', async () => {
    const frontier = testFrontier(redis, { stopTtlMs: 1000 });
    await queueCrawls(frontier, 150, 'c');
    for (let i = 0; i < 150; i++) await frontier.stop('link', 'app', `c${i}`, T0 + 1);
    const stopped = partitionKeys(frontier.partitionFor('link')).stopped;
    expect(await redis.zcard(stopped)).toBe(150);
    await frontier.stop('link', 'app', 'late', T0 + 60_000);
    expect(await redis.zcard(stopped)).toBe(150 - 100 + 1);
    // A run-out stop still in the set refuses nothing.
    expect(
      await frontier.enqueue(
        'link',
        [{ crawl: seedCrawl('app', 'c149'), request: queueRequest('http://x.com/') }],
        T0 + 60_000,
      ),
    ).toEqual(['queued']);
  });
});
