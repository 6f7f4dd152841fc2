import { describe, expect, it } from 'vitest';
import { expireCrawls } from '../../lib/monitor/expire-crawls.ts';
import { child, seed } from '../helpers/fake-frontier.ts';
import { TEST_NOW, TEST_NOW_SEC, type TestContext, testContext } from '../helpers/fakes.ts';

const FIREHOSE = 'demo.outbound_firehose';

/**
 * Queued an hour before the test clock: link testapp/gone (2 requests) and wandering otherapp/w-gone (1), both
 * expired a minute ago; link testapp/later (expires in an hour) and link testapp/never (no expiry), 1 each.
 */
async function withExpiringCrawls(ctx: TestContext): Promise<void> {
  const anHourAgo = TEST_NOW - 3_600_000;
  const gone = { appid: 'testapp', crawlid: 'gone' };
  await ctx.frontier.enqueue(
    'link',
    [
      seed({ ...gone, url: 'http://example.com/', expires: TEST_NOW_SEC - 60 }),
      child(gone, 'http://example.com/a', -9),
      seed({ appid: 'testapp', crawlid: 'later', url: 'http://example.org/', expires: TEST_NOW_SEC + 3600 }),
      seed({ appid: 'testapp', crawlid: 'never', url: 'http://example.net/' }),
    ],
    anHourAgo,
  );
  await ctx.frontier.enqueue(
    'wandering',
    [
      seed({
        appid: 'otherapp',
        crawlid: 'w-gone',
        url: 'http://example.com/w',
        spiderid: 'wandering',
        expires: TEST_NOW_SEC - 1,
      }),
    ],
    anHourAgo,
  );
}

describe('expireCrawls', () => {
  it('stops every crawl whose expiry passed and sends one expired notice per crawl with total_expired', async () => {
    const ctx = testContext();
    await withExpiringCrawls(ctx);
    const result = await expireCrawls(ctx);

    const notices = [
      {
        action: 'expired',
        server_time: TEST_NOW_SEC,
        appid: 'testapp',
        crawlid: 'gone',
        spiderid: 'link',
        total_expired: 2,
      },
      {
        action: 'expired',
        server_time: TEST_NOW_SEC,
        appid: 'otherapp',
        crawlid: 'w-gone',
        spiderid: 'wandering',
        total_expired: 1,
      },
    ];
    expect(result).toEqual({ expired: 2, swept: 0, notices });
    expect(ctx.sink.values(FIREHOSE)).toEqual(notices);
    expect(ctx.sink.keys(FIREHOSE)).toEqual(['testapp', 'otherapp']);
    expect(ctx.frontier.queued('link', 'testapp', 'gone')).toEqual([]);
    expect(ctx.frontier.queued('wandering', 'otherapp', 'w-gone')).toEqual([]);
  });

  it('leaves crawls that expire later or never alone', async () => {
    const ctx = testContext();
    await withExpiringCrawls(ctx);
    await expireCrawls(ctx);

    expect(ctx.frontier.queued('link', 'testapp', 'later')).toHaveLength(1);
    expect(ctx.frontier.queued('link', 'testapp', 'never')).toHaveLength(1);
  });

  it('sweeps completed crawls of every spider type and counts them', async () => {
    const ctx = testContext();
    await withExpiringCrawls(ctx);
    ctx.frontier.finished.set('link', 3);
    const result = await expireCrawls(ctx);
    expect(result.swept).toBe(3);
    expect(ctx.frontier.calls).toContain('sweepFinished');
  });

  it('sends nothing on a second run: each crawl expires once', async () => {
    const ctx = testContext();
    await withExpiringCrawls(ctx);
    await expireCrawls(ctx);
    const sends = ctx.sink.sendCalls;

    expect(await expireCrawls(ctx)).toEqual({ expired: 0, swept: 0, notices: [] });
    expect(ctx.sink.sendCalls).toBe(sends);
  });

  it('with per-app topics on, also sends each notice to demo.outbound_<appid>', async () => {
    const ctx = testContext({ appidTopics: true });
    await withExpiringCrawls(ctx);
    await expireCrawls(ctx);

    expect(ctx.sink.topics()).toEqual([FIREHOSE, 'demo.outbound_otherapp', 'demo.outbound_testapp']);
    expect(ctx.sink.values('demo.outbound_testapp')).toMatchObject([{ crawlid: 'gone' }]);
    expect(ctx.sink.values('demo.outbound_otherapp')).toMatchObject([{ crawlid: 'w-gone' }]);
  });

  it('an expired crawl refuses its late children', async () => {
    const ctx = testContext();
    await withExpiringCrawls(ctx);
    await expireCrawls(ctx);

    expect(
      await ctx.frontier.enqueue(
        'link',
        [child({ appid: 'testapp', crawlid: 'gone' }, 'http://example.com/b', -9)],
        TEST_NOW,
      ),
    ).toEqual(['stopped']);
  });

  // Scrapy Cluster's redis-monitor counts expiry under its ExpireMonitor plugin.
  it('counts each expired crawl as redis-monitor:plugin:ExpireMonitor, and nothing on a run that expires none', async () => {
    const ctx = testContext();
    await withExpiringCrawls(ctx);
    await expireCrawls(ctx);

    expect(await ctx.stats.names('redis-monitor:')).toEqual(['redis-monitor:plugin:ExpireMonitor']);
    expect(ctx.stats.lifetime('redis-monitor:plugin:ExpireMonitor')).toBe(2);
    await expireCrawls(ctx);
    expect(ctx.stats.lifetime('redis-monitor:plugin:ExpireMonitor')).toBe(2);
  });

  it('with the stats store down, still expires and sends every notice', async () => {
    const ctx = testContext();
    await withExpiringCrawls(ctx);
    ctx.stats.down = true;

    expect((await expireCrawls(ctx)).expired).toBe(2);
    expect(ctx.sink.values(FIREHOSE)).toHaveLength(2);
    expect(ctx.log.at('warn').map((l) => l.message)).toEqual(['stats update failed']);
  });

  it('with Redis down, throws so that the schedule retries', async () => {
    const ctx = testContext();
    ctx.frontier.down = true;

    await expect(expireCrawls(ctx)).rejects.toThrow(/ECONNREFUSED/);
  });
});

describe('expireCrawls: many crawls, overlapping and aborted runs', () => {
  /** `n` link crawls of testapp, each with one queued request, all expired a minute before the test clock. */
  async function manyExpired(ctx: TestContext, n: number): Promise<void> {
    const items = Array.from({ length: n }, (_, i) =>
      seed({ appid: 'testapp', crawlid: `c${i}`, url: `http://example.com/${i}`, expires: TEST_NOW_SEC - 60 }),
    );
    await ctx.frontier.enqueue('link', items, TEST_NOW - 3_600_000);
  }

  it('expires more crawls than one page of the expiry index in one run, one notice each, one send per page', async () => {
    const ctx = testContext();
    await manyExpired(ctx, 2500);
    const result = await expireCrawls(ctx, { pageSize: 1000 });

    expect(result.expired).toBe(2500);
    expect(new Set(ctx.sink.values(FIREHOSE).map((n) => n.crawlid)).size).toBe(2500);
    expect(ctx.sink.sendCalls).toBe(3);
  });

  it('two runs over the same crawls at once (two processes) send exactly one notice per crawl', async () => {
    const a = testContext();
    await manyExpired(a, 300);
    const b = testContext({ frontier: a.frontier, sink: a.sink });
    const [ra, rb] = await Promise.all([expireCrawls(a, { pageSize: 50 }), expireCrawls(b, { pageSize: 50 })]);

    expect(ra.expired + rb.expired).toBe(300);
    const crawlids = a.sink.values(FIREHOSE).map((n) => n.crawlid);
    expect(crawlids).toHaveLength(300);
    expect(new Set(crawlids).size).toBe(300);
  });

  it('a run started while one of the same process is still going skips, sending nothing', async () => {
    const ctx = testContext();
    await manyExpired(ctx, 10);
    const first = expireCrawls(ctx);
    const second = await expireCrawls(ctx);
    expect(second).toMatchObject({ expired: 0, skipped: true });
    expect((await first).expired).toBe(10);
  });

  it('an aborted run stops before its next crawl, and the next run expires the rest, each crawl once', async () => {
    const ctx = testContext();
    await manyExpired(ctx, 100);
    const abort = new AbortController();
    const stop = ctx.frontier.stop.bind(ctx.frontier);
    let stops = 0;
    ctx.frontier.stop = async (...args: Parameters<typeof stop>) => {
      if (++stops === 10) abort.abort();
      return stop(...args);
    };
    const aborted = await expireCrawls(ctx, { signal: abort.signal });

    expect(aborted).toMatchObject({ expired: 10, aborted: true });
    expect(stops).toBe(10);
    const rest = await expireCrawls(ctx);
    expect(rest.expired).toBe(90);
    expect(new Set(ctx.sink.values(FIREHOSE).map((n) => n.crawlid)).size).toBe(100);
    expect(ctx.sink.values(FIREHOSE)).toHaveLength(100);
  });

  it('with Kafka down, the notices of the crawls it stopped are sent by the next run, once', async () => {
    const ctx = testContext();
    await manyExpired(ctx, 5);
    ctx.sink.down = true;
    await expect(expireCrawls(ctx)).rejects.toThrow(/ECONNREFUSED/);
    ctx.sink.down = false;

    expect((await expireCrawls(ctx)).expired).toBe(5);
    expect(
      ctx.sink
        .values(FIREHOSE)
        .map((n) => n.crawlid)
        .sort(),
    ).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    expect((await expireCrawls(ctx)).expired).toBe(0);
  });

  it('with a missing per-app topic, 2,000 expired crawls take far less than a Kafka metadata wait each', async () => {
    const ctx = testContext({ appidTopics: true });
    ctx.sink.missingTopics.add('demo.outbound_testapp');
    ctx.sink.missingDelayMs = 50;
    await manyExpired(ctx, 2000);
    const started = performance.now();
    const result = await expireCrawls(ctx);

    expect(result.expired).toBe(2000);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
