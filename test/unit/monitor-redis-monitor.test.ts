import type { MSKEvent as MskEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { decodeMskEvent } from '../../functions/shared/msk.ts';
import type { DecodedRecord } from '../../lib/kafka/record.ts';
import { handleActions } from '../../lib/monitor/redis-monitor.ts';
import type { StatsType } from '../../lib/schemas/index.ts';
import { loadEvent, recordsOf } from '../helpers/events.ts';
import { child, seed } from '../helpers/fake-frontier.ts';
import { TEST_NODE_ID, TEST_NOW, TEST_NOW_SEC, type TestContext, testContext } from '../helpers/fakes.ts';

const ACTIONS = 'demo.actions';
const FIREHOSE = 'demo.outbound_firehose';
const WINDOW_KEYS = ['900', '3600', '21600', '43200', '86400', '604800', 'lifetime'];

/** The records of events/redis-monitor.json: info-1 (crawl abc123), info-2 (app), stop-1 (abc123), stats-2, dom-2. */
function sampleRecords(): DecodedRecord[] {
  return decodeMskEvent(loadEvent<MskEvent>('redis-monitor'));
}

const where = (records: DecodedRecord[]) => records.map((r) => `${r.topic}-${r.partition}@${r.offset}`);

/** When abc124 expires (epoch s): an hour after the test clock. */
const EXPIRES = TEST_NOW_SEC + 3600;

/**
 * testapp/abc123 on link: example.com at 60 (seed) and 50, other.org at 50. testapp/abc124 on link, expiring:
 * example.org at 1 (seed) and -9. otherapp/abc123 on link and testapp/w1 on wandering, one request each.
 */
async function withCrawls(ctx: TestContext): Promise<void> {
  const abc123 = { appid: 'testapp', crawlid: 'abc123' };
  const abc124 = { appid: 'testapp', crawlid: 'abc124' };
  const before = TEST_NOW - 60_000;
  await ctx.frontier.enqueue(
    'link',
    [
      seed({ ...abc123, url: 'http://example.com/', priority: 60, maxdepth: 1 }),
      child(abc123, 'http://example.com/a', 50),
      child(abc123, 'http://other.org/', 50),
      seed({ ...abc124, url: 'https://www.example.org/', expires: EXPIRES, maxdepth: 1 }),
      child(abc124, 'https://www.example.org/x', -9),
      seed({ appid: 'otherapp', crawlid: 'abc123', url: 'http://example.net/' }),
    ],
    before,
  );
  await ctx.frontier.enqueue(
    'wandering',
    [seed({ appid: 'testapp', crawlid: 'w1', url: 'http://example.com/w', spiderid: 'wandering' })],
    before,
  );
}

/** All windows at `n` (events of a minute ago). */
const all = (n: number) => Object.fromEntries(WINDOW_KEYS.map((w) => [w, n]));

/**
 * kafka-monitor: 10 records two hours ago (2 failed, 7 crawls), 3 crawls a minute ago, one live node.
 * Crawler fleet a minute ago: link 200 ×5 and 404 ×1, wandering 200 ×2; host-a 200 ×5, host-b 200 ×2 and 503 ×1;
 * three live crawlers (two link, one wandering) and one whose heartbeat is ten minutes old.
 */
async function withStats(ctx: TestContext): Promise<void> {
  await ctx.stats.increment(
    [
      { name: 'kafka-monitor:total', by: 10 },
      { name: 'kafka-monitor:fail', by: 2 },
      { name: 'kafka-monitor:plugin:ScraperHandler', by: 7 },
    ],
    TEST_NOW - 2 * 3_600_000,
  );
  const aMinuteAgo = TEST_NOW - 60_000;
  await ctx.stats.increment(
    [
      { name: 'kafka-monitor:total', by: 3 },
      { name: 'kafka-monitor:plugin:ScraperHandler', by: 3 },
      { name: 'crawler:link:200', by: 5 },
      { name: 'crawler:link:404', by: 1 },
      { name: 'crawler:wandering:200', by: 2 },
      { name: 'machine:host-a:200', by: 5 },
      { name: 'machine:host-b:200', by: 2 },
      { name: 'machine:host-b:503', by: 1 },
    ],
    aMinuteAgo,
  );
  await ctx.stats.beat('kafka-monitor', 'kafka-monitor@host-a:101', aMinuteAgo, 300_000);
  for (const id of ['link|host-a|11', 'link|host-b|12', 'wandering|host-b|13']) {
    await ctx.stats.beat('crawler', id, aMinuteAgo, 300_000);
  }
  await ctx.stats.beat('crawler', 'link|host-c|14', TEST_NOW - 600_000, 300_000);
}

/** The one reply to a stats request of this type. */
async function statsReply(ctx: TestContext, type: StatsType): Promise<Record<string, unknown>> {
  const { replies } = await handleActions(
    ctx,
    recordsOf(ACTIONS, [{ uuid: `s-${type}`, appid: 'testapp', stats: type }]),
  );
  expect(replies).toHaveLength(1);
  return replies[0] as Record<string, unknown>;
}

/** Every object in `value` that has a `lifetime` key: the counts objects. */
function countsObjects(value: unknown): Record<string, unknown>[] {
  if (value === null || typeof value !== 'object') return [];
  const own = !Array.isArray(value) && 'lifetime' in value ? [value as Record<string, unknown>] : [];
  return [...own, ...Object.values(value).flatMap(countsObjects)];
}

const SPIDERS = {
  unique_spider_count: 2,
  total_spider_count: 3,
  link: { count: 2, '200': all(5), '404': all(1) },
  wandering: { count: 1, '200': all(2) },
};
const MACHINES = { count: 2, 'host-a': { '200': all(5) }, 'host-b': { '200': all(2), '503': all(1) } };
const QUEUES = {
  total_backlog: 7,
  queue_link: {
    spider_backlog: 6,
    num_domains: 4,
    domains: [
      { domain: 'example.com', backlog: 2 },
      { domain: 'example.org', backlog: 2 },
      { domain: 'example.net', backlog: 1 },
      { domain: 'other.org', backlog: 1 },
    ],
  },
  queue_wandering: { spider_backlog: 1, num_domains: 1, domains: [{ domain: 'example.com', backlog: 1 }] },
};

describe('handleActions: info', () => {
  it('answers the sample crawl-form info with low/high priority and total per domain, and no other keys', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    const { replies } = await handleActions(ctx, sampleRecords());

    expect(replies[0]).toStrictEqual({
      server_time: TEST_NOW_SEC,
      uuid: 'info-1',
      appid: 'testapp',
      crawlid: 'abc123',
      spiderid: 'link',
      total_pending: 3,
      total_domains: 2,
      domains: {
        'example.com': { low_priority: 50, high_priority: 60, total: 2 },
        'other.org': { low_priority: 50, high_priority: 50, total: 1 },
      },
    });
  });

  // Scrapy Cluster answers `expires` as a string (read back from Redis); its clients see one.
  it('adds expires to the crawl form when the crawl has one, as a string', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    const { replies } = await handleActions(
      ctx,
      recordsOf(ACTIONS, [{ action: 'info', appid: 'testapp', uuid: 'i', crawlid: 'abc124', spiderid: 'link' }]),
    );

    expect(replies[0]).toMatchObject({
      total_pending: 2,
      total_domains: 1,
      domains: { 'example.org': { low_priority: -9, high_priority: 1, total: 2 } },
      expires: String(EXPIRES),
    });
  });

  it('answers the info of an unknown crawl with nothing pending and no domains', async () => {
    const ctx = testContext();
    const { replies } = await handleActions(
      ctx,
      recordsOf(ACTIONS, [{ action: 'info', appid: 'testapp', uuid: 'i', crawlid: 'nope', spiderid: 'link' }]),
    );

    expect(replies).toStrictEqual([
      {
        server_time: TEST_NOW_SEC,
        uuid: 'i',
        appid: 'testapp',
        crawlid: 'nope',
        spiderid: 'link',
        total_pending: 0,
        total_domains: 0,
        domains: {},
      },
    ]);
  });

  it('answers the sample app-form info with every crawl of the app under that spider, and nothing of others', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    const { replies } = await handleActions(ctx, sampleRecords());

    expect(replies[1]).toStrictEqual({
      server_time: TEST_NOW_SEC,
      uuid: 'info-2',
      appid: 'testapp',
      spiderid: 'link',
      total_pending: 5,
      total_domains: 3,
      total_crawlids: 2,
      crawlids: {
        abc123: {
          domains: {
            'example.com': { low_priority: 50, high_priority: 60, total: 2 },
            'other.org': { low_priority: 50, high_priority: 50, total: 1 },
          },
          distinct_domains: 2,
          total: 3,
        },
        abc124: {
          domains: { 'example.org': { low_priority: -9, high_priority: 1, total: 2 } },
          distinct_domains: 1,
          total: 2,
          expires: String(EXPIRES),
        },
      },
    });
  });

  // Scrapy Cluster lists the crawls it finds in the queues: a finished crawl is not listed, nor counted.
  it('leaves out of the app form a crawl with nothing queued; the crawl form still answers for it', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    ctx.frontier.finishCrawl('link', 'testapp', 'abc123');
    const { replies } = await handleActions(
      ctx,
      recordsOf(ACTIONS, [
        { action: 'info', appid: 'testapp', uuid: 'app', spiderid: 'link' },
        { action: 'info', appid: 'testapp', uuid: 'crawl', crawlid: 'abc123', spiderid: 'link' },
      ]),
    );

    expect(replies[0]).toMatchObject({ total_pending: 2, total_domains: 1, total_crawlids: 1 });
    expect(Object.keys((replies[0] as { crawlids: object }).crawlids)).toEqual(['abc124']);
    expect(replies[1]).toMatchObject({ crawlid: 'abc123', total_pending: 0, total_domains: 0, domains: {} });
  });

  it('answers the app form of an app whose crawls all finished with no crawls', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    ctx.frontier.finishCrawl('link', 'testapp', 'abc123');
    ctx.frontier.finishCrawl('link', 'testapp', 'abc124');
    const { replies } = await handleActions(
      ctx,
      recordsOf(ACTIONS, [{ action: 'info', appid: 'testapp', uuid: 'app', spiderid: 'link' }]),
    );

    expect(replies[0]).toMatchObject({ total_pending: 0, total_domains: 0, total_crawlids: 0, crawlids: {} });
  });
});

describe('handleActions: stop', () => {
  it('answers the sample stop with total_purged, after which the crawl has nothing queued and refuses children', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    const { replies } = await handleActions(ctx, sampleRecords());

    expect(replies[2]).toStrictEqual({
      action: 'stop',
      server_time: TEST_NOW_SEC,
      uuid: 'stop-1',
      appid: 'testapp',
      crawlid: 'abc123',
      spiderid: 'link',
      total_purged: 3,
    });
    expect(ctx.frontier.queued('link', 'testapp', 'abc123')).toEqual([]);
    expect(ctx.frontier.queued('link', 'otherapp', 'abc123')).toHaveLength(1);
    expect(
      await ctx.frontier.enqueue(
        'link',
        [child({ appid: 'testapp', crawlid: 'abc123' }, 'http://example.com/b', 50)],
        TEST_NOW,
      ),
    ).toEqual(['stopped']);
  });

  it('answers the stop of an unknown crawl with total_purged 0', async () => {
    const ctx = testContext();
    const { replies } = await handleActions(
      ctx,
      recordsOf(ACTIONS, [{ action: 'stop', appid: 'testapp', uuid: 's', crawlid: 'nope', spiderid: 'wandering' }]),
    );

    expect(replies).toMatchObject([{ action: 'stop', crawlid: 'nope', spiderid: 'wandering', total_purged: 0 }]);
  });
});

describe('handleActions: stats', () => {
  const monitorKeys = ['appid', 'fail', 'nodes', 'plugins', 'server_time', 'stats', 'total', 'uuid'];
  const common = ['appid', 'server_time', 'stats', 'uuid'];
  it.each<[StatsType, string[]]>([
    ['kafka-monitor', monitorKeys],
    ['redis-monitor', monitorKeys],
    ['rest', monitorKeys],
    ['spider', [...common, 'spiders', 'spider_outcomes']],
    ['machine', [...common, 'machines', 'machine_outcomes']],
    ['queue', [...common, 'queues']],
    ['crawler', [...common, 'machines', 'machine_outcomes', 'queue', 'spiders', 'spider_outcomes']],
    ['all', [...common, 'crawler', 'kafka-monitor', 'redis-monitor', 'rest']],
  ])('answers stats "%s" with the keys docs/contract.md lists', async (type, keys) => {
    const ctx = testContext();
    await withCrawls(ctx);
    await withStats(ctx);
    const reply = await statsReply(ctx, type);

    expect(Object.keys(reply).sort()).toEqual([...keys].sort());
    expect(reply).toMatchObject({ stats: type, uuid: `s-${type}`, appid: 'testapp', server_time: TEST_NOW_SEC });
  });

  it.each<StatsType>(['kafka-monitor', 'redis-monitor', 'crawler', 'spider', 'machine', 'rest', 'all'])(
    'gives every count in a stats "%s" reply the windows "900" to "604800" and "lifetime"',
    async (type) => {
      const ctx = testContext();
      await withCrawls(ctx);
      await withStats(ctx);
      const counts = countsObjects(await statsReply(ctx, type));

      expect(counts.length).toBeGreaterThan(0);
      for (const c of counts) expect(Object.keys(c).sort()).toEqual([...WINDOW_KEYS].sort());
    },
  );

  it('reports a monitor’s total, fail and plugins per window, zero windows included', async () => {
    const ctx = testContext();
    await withStats(ctx);
    const reply = await statsReply(ctx, 'kafka-monitor');

    expect(reply.total).toEqual({
      '900': 3,
      '3600': 3,
      '21600': 13,
      '43200': 13,
      '86400': 13,
      '604800': 13,
      lifetime: 13,
    });
    expect(reply.fail).toEqual({ '900': 0, '3600': 0, '21600': 2, '43200': 2, '86400': 2, '604800': 2, lifetime: 2 });
    expect(reply.plugins).toEqual({
      ScraperHandler: { '900': 3, '3600': 3, '21600': 10, '43200': 10, '86400': 10, '604800': 10, lifetime: 10 },
    });
  });

  it('reports zero counts and no plugins for a monitor that never counted anything', async () => {
    const ctx = testContext();
    const reply = await statsReply(ctx, 'rest');

    expect(reply.total).toEqual(all(0));
    expect(reply.fail).toEqual(all(0));
    expect(reply.plugins).toEqual({});
  });

  // docs/contract.md: `"nodes":{...}`, an object (Scrapy Cluster: host → ids of live processes).
  it('reports a monitor’s live nodes as an object listing the live node ids', async () => {
    const ctx = testContext();
    await withStats(ctx);
    const { nodes } = await statsReply(ctx, 'kafka-monitor');

    expect(nodes).toBeTypeOf('object');
    expect(Array.isArray(nodes)).toBe(false);
    expect(Object.values(nodes as Record<string, unknown>).flat()).toContain('kafka-monitor@host-a:101');
  });

  it('reports spider stats: live crawler counts per spider and per-status counts', async () => {
    const ctx = testContext();
    await withStats(ctx);

    expect((await statsReply(ctx, 'spider')).spiders).toEqual(SPIDERS);
  });

  it('reports machine stats: per-machine per-status counts and the machine count', async () => {
    const ctx = testContext();
    await withStats(ctx);

    expect((await statsReply(ctx, 'machine')).machines).toEqual(MACHINES);
  });

  // Scrapy Cluster clients read every key of a spider's (but `count`) or machine's stats as an HTTP status
  // code (`int(code)`): robots.txt refusals, errors and retries are reported apart.
  it('reports robots, error and retry counts apart from the status codes, per spider and per machine', async () => {
    const ctx = testContext();
    await withStats(ctx);
    await ctx.stats.increment(
      [
        { name: 'crawler:link:robots', by: 4 },
        { name: 'crawler:link:error', by: 2 },
        { name: 'crawler:link:retry', by: 3 },
        { name: 'crawler:link:robots_denied', by: 1 },
        { name: 'machine:host-a:robots', by: 4 },
        { name: 'machine:host-c:error', by: 1 },
      ],
      TEST_NOW - 60_000,
    );
    const reply = await statsReply(ctx, 'crawler');
    const spiders = reply.spiders as Record<string, Record<string, unknown>>;
    const machines = reply.machines as Record<string, Record<string, unknown>>;

    for (const [name, spider] of Object.entries(spiders)) {
      if (typeof spider !== 'object') continue;
      for (const key of Object.keys(spider)) if (key !== 'count') expect(key, name).toMatch(/^\d+$/);
    }
    for (const [name, machine] of Object.entries(machines)) {
      if (typeof machine !== 'object') continue;
      for (const key of Object.keys(machine)) expect(key, name).toMatch(/^\d+$/);
    }
    expect(spiders.link).toEqual(SPIDERS.link);
    expect(reply.spider_outcomes).toEqual({
      link: { robots: all(4), error: all(2), retry: all(3), robots_denied: all(1) },
    });
    expect(machines).toEqual({ ...MACHINES, count: 3, 'host-c': {} });
    expect(reply.machine_outcomes).toEqual({ 'host-a': { robots: all(4) }, 'host-c': { error: all(1) } });
  });

  it('reports empty outcomes when the fleet counted only status codes', async () => {
    const ctx = testContext();
    await withStats(ctx);

    expect(await statsReply(ctx, 'spider')).toMatchObject({ spiders: SPIDERS, spider_outcomes: {} });
    expect(await statsReply(ctx, 'machine')).toMatchObject({ machines: MACHINES, machine_outcomes: {} });
  });

  it('reports queue stats: backlog per spider type and per domain, largest first', async () => {
    const ctx = testContext();
    await withCrawls(ctx);

    expect((await statsReply(ctx, 'queue')).queues).toEqual(QUEUES);
  });

  it('reports crawler stats as spiders, machines and queue', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    await withStats(ctx);
    const reply = await statsReply(ctx, 'crawler');

    expect(reply).toMatchObject({ spiders: SPIDERS, machines: MACHINES, queue: QUEUES });
  });

  it('reports requests per proxy under crawler stats, only once a request went through one', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    await withStats(ctx);
    expect(await statsReply(ctx, 'crawler')).not.toHaveProperty('proxies');
    await ctx.stats.increment(
      [
        { name: 'proxy:10.0.0.5:3128:ok', by: 7 },
        { name: 'proxy:10.0.0.5:3128:proxy_connect', by: 2 },
        { name: 'proxy:eu-1:proxy_auth', by: 1 },
      ],
      TEST_NOW - 60_000,
    );
    const proxies = (await statsReply(ctx, 'crawler')).proxies as Record<string, Record<string, { lifetime: number }>>;
    expect(Object.keys(proxies).sort()).toEqual(['10.0.0.5:3128', 'eu-1']);
    expect(proxies['10.0.0.5:3128']?.ok?.lifetime).toBe(7);
    expect(proxies['10.0.0.5:3128']?.proxy_connect?.lifetime).toBe(2);
    expect(Object.keys(proxies['eu-1'] ?? {})).toEqual(['proxy_auth']);
  });

  it('reports all stats as one key per component, each as its own stats reply reports it', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    await withStats(ctx);
    const reply = await statsReply(ctx, 'all');
    const { stats: _s, server_time: _t, uuid: _u, appid: _a, ...kafkaMonitor } = await statsReply(ctx, 'kafka-monitor');

    expect(reply['kafka-monitor']).toEqual(kafkaMonitor);
    expect(reply.crawler).toMatchObject({ spiders: SPIDERS, machines: MACHINES });
    expect(reply.rest).toMatchObject({ total: all(0), fail: all(0), plugins: {} });
  });
});

describe('handleActions: domain config', () => {
  it('applies the sample blacklist-update to the frontier and echoes action, domain, uuid, appid, server_time', async () => {
    const ctx = testContext();
    const { replies } = await handleActions(ctx, sampleRecords());

    expect(ctx.frontier.domainConfigs).toEqual([
      { action: 'blacklist-update', domain: 'example.com', limits: { hits: 0, window: 0, scale: 1 }, now: TEST_NOW },
    ]);
    expect(replies[4]).toStrictEqual({
      action: 'blacklist-update',
      domain: 'example.com',
      uuid: 'dom-2',
      appid: 'testapp',
      server_time: TEST_NOW_SEC,
    });
  });

  it('passes the hits, window and scale of a domain-update to the frontier', async () => {
    const ctx = testContext();
    await handleActions(
      ctx,
      recordsOf(ACTIONS, [
        { uuid: 'd', appid: 'testapp', domain: 'ebay.com', action: 'domain-update', hits: 20, window: 60, scale: 0.5 },
      ]),
    );

    expect(ctx.frontier.domainConfigs).toMatchObject([
      { action: 'domain-update', domain: 'ebay.com', limits: { hits: 20, window: 60, scale: 0.5 } },
    ]);
  });

  it('keys a host as the crawler keys its throttles: a subdomain by its registrable domain, an IP by itself', async () => {
    const ctx = testContext();
    const result = await handleActions(
      ctx,
      recordsOf(ACTIONS, [
        { uuid: 'w', appid: 'testapp', domain: 'WWW.ebay.com', action: 'domain-update', hits: 5, window: 60 },
        { uuid: 'i', appid: 'testapp', domain: '127.0.0.1', action: 'blacklist-update' },
        { uuid: 'l', appid: 'testapp', domain: 'intranet', action: 'domain-remove' },
      ]),
    );
    expect(ctx.frontier.domainConfigs.map((c) => [c.action, c.domain])).toEqual([
      ['domain-update', 'ebay.com'],
      ['blacklist-update', '127.0.0.1'],
      ['domain-remove', 'intranet'],
    ]);
    // The reply echoes the key the change applies to.
    expect(result.replies.map((r) => r.domain)).toEqual(['ebay.com', '127.0.0.1', 'intranet']);
  });
});

describe('handleActions: delivery', () => {
  it('sends every sample reply to demo.outbound_firehose keyed by appid, in batch order, failing nothing', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    const result = await handleActions(ctx, sampleRecords());

    expect(where(result.failures)).toEqual([]);
    expect(ctx.sink.topics()).toEqual([FIREHOSE]);
    expect(ctx.sink.values(FIREHOSE).map((r) => r.uuid)).toEqual(['info-1', 'info-2', 'stop-1', 'stats-2', 'dom-2']);
    expect(ctx.sink.values(FIREHOSE)).toEqual(JSON.parse(JSON.stringify(result.replies)));
    expect(ctx.sink.keys(FIREHOSE)).toEqual(Array(5).fill('testapp'));
  });

  it('with per-app topics on, also sends every reply to demo.outbound_<appid>', async () => {
    const ctx = testContext({ appidTopics: true });
    await handleActions(ctx, sampleRecords());

    expect(ctx.sink.topics()).toEqual([FIREHOSE, 'demo.outbound_testapp']);
    expect(ctx.sink.values('demo.outbound_testapp')).toEqual(ctx.sink.values(FIREHOSE));
  });

  it('with per-app topics on, a reply to an appid that is no legal topic name still reaches the firehose', async () => {
    const ctx = testContext({ appidTopics: true });
    const result = await handleActions(
      ctx,
      recordsOf(ACTIONS, [{ action: 'info', appid: 'my app', uuid: 'i', spiderid: 'link' }]),
    );

    expect(where(result.failures)).toEqual([]);
    expect(ctx.sink.values(FIREHOSE)).toMatchObject([{ uuid: 'i', appid: 'my app' }]);
  });

  it('with per-app topics on, replies to an app whose topic is missing wait on Kafka once, not once per batch', async () => {
    const ctx = testContext({ appidTopics: true });
    ctx.sink.missingTopics.add('demo.outbound_ghost');
    ctx.sink.missingDelayMs = 100;
    const started = performance.now();
    for (let i = 0; i < 20; i++) {
      const r = await handleActions(
        ctx,
        recordsOf(ACTIONS, [{ action: 'info', appid: 'ghost', uuid: `g${i}`, spiderid: 'link' }]),
      );
      expect(r.failures).toEqual([]);
    }
    const other = await handleActions(
      ctx,
      recordsOf(ACTIONS, [{ action: 'info', appid: 'testapp', uuid: 'ok', spiderid: 'link' }]),
    );
    const elapsed = performance.now() - started;

    expect(other.failures).toEqual([]);
    expect(ctx.sink.values(FIREHOSE)).toHaveLength(21);
    expect(ctx.sink.values('demo.outbound_testapp')).toMatchObject([{ uuid: 'ok' }]);
    // One slow failed send to the missing topic at most; every later copy is skipped (20 × 100 ms before).
    expect(ctx.sink.sendCalls).toBeLessThanOrEqual(21 + 2 + 1);
    expect(elapsed).toBeLessThan(600);
  });

  it('stores every sample reply under its uuid for 300 s, as sent', async () => {
    const ctx = testContext();
    await handleActions(ctx, sampleRecords());

    expect(ctx.replies.uuids()).toEqual(['dom-2', 'info-1', 'info-2', 'stats-2', 'stop-1']);
    for (const sent of ctx.sink.values(FIREHOSE)) {
      expect(ctx.replies.peek(String(sent.uuid))).toEqual({ reply: sent, ttlSec: 300 });
    }
  });

  // Scrapy Cluster's redis-monitor reports its plugins by monitor class name.
  it('counts redis-monitor:total and plugin:<monitor class>, and beats the redis-monitor heartbeat', async () => {
    const ctx = testContext();
    await handleActions(ctx, sampleRecords());

    const counts = Object.fromEntries(
      (await ctx.stats.names('redis-monitor:')).map((name) => [name, ctx.stats.lifetime(name)]),
    );
    expect(counts).toEqual({
      'redis-monitor:total': 5,
      'redis-monitor:plugin:InfoMonitor': 2,
      'redis-monitor:plugin:StopMonitor': 1,
      'redis-monitor:plugin:StatsMonitor': 1,
      'redis-monitor:plugin:ZookeeperMonitor': 1,
    });
    expect(await ctx.stats.live('redis-monitor', TEST_NOW, 1000)).toEqual([TEST_NODE_ID]);
  });
});

describe('handleActions: failures', () => {
  it('with Redis failing at the second record, fails it and the rest; the first reply is still sent and stored', async () => {
    const ctx = testContext();
    await withCrawls(ctx);
    ctx.frontier.goDownAfter(1);
    const result = await handleActions(ctx, sampleRecords());

    expect(where(result.failures)).toEqual([
      'demo.actions-0@1',
      'demo.actions-0@2',
      'demo.actions-0@3',
      'demo.actions-0@4',
    ]);
    expect(ctx.sink.values(FIREHOSE).map((r) => r.uuid)).toEqual(['info-1']);
    expect(ctx.replies.uuids()).toEqual(['info-1']);
    expect(ctx.frontier.queued('link', 'testapp', 'abc123')).toHaveLength(3);
  });

  it('with Kafka down, fails every record', async () => {
    const ctx = testContext();
    ctx.sink.down = true;
    const records = sampleRecords();
    const result = await handleActions(ctx, records);

    expect(where(result.failures)).toEqual(where(records));
  });

  it('skips an invalid record on the actions topic with a warning and a redis-monitor:fail count', async () => {
    const ctx = testContext();
    const result = await handleActions(
      ctx,
      recordsOf(ACTIONS, [
        '{not json',
        { action: 'stop', appid: 'testapp', uuid: 's', crawlid: 'c', spiderid: 'link' },
      ]),
    );

    expect(where(result.failures)).toEqual([]);
    expect(result.replies).toMatchObject([{ action: 'stop', uuid: 's' }]);
    expect(ctx.log.at('warn').map((l) => l.message)).toEqual(['invalid record on the actions topic skipped']);
    expect(ctx.stats.lifetime('redis-monitor:fail')).toBe(1);
  });

  it('with the stats store down, the replies still go out and nothing fails', async () => {
    const ctx = testContext();
    ctx.stats.down = true;
    const result = await handleActions(
      ctx,
      recordsOf(ACTIONS, [{ action: 'stop', appid: 'testapp', uuid: 's', crawlid: 'c', spiderid: 'link' }]),
    );

    expect(where(result.failures)).toEqual([]);
    expect(ctx.sink.values(FIREHOSE)).toHaveLength(1);
  });
});
