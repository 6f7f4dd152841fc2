import type { MSKEvent as MskEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { decodeMskEvent } from '../../functions/shared/msk.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import type { DecodedRecord } from '../../lib/kafka/record.ts';
import { handleIncoming, RAW_ECHO_BYTES } from '../../lib/monitor/kafka-monitor.ts';
import { loadEvent, recordsOf } from '../helpers/events.ts';
import { TEST_NODE_ID, TEST_NOW, TEST_NOW_SEC, testContext } from '../helpers/fakes.ts';

const INCOMING = 'demo.incoming';
const ACTIONS = 'demo.actions';
const REJECTED = 'demo.rejected';
const FIREHOSE = 'demo.outbound_firehose';

/** The records of events/kafka-monitor.json: crawls at 0/100 and 0/101, info 0/102, bad 1/7..9, stats 1/10, domain 1/11. */
function sampleRecords(): DecodedRecord[] {
  return decodeMskEvent(loadEvent<MskEvent>('kafka-monitor'));
}

const where = (records: DecodedRecord[]) => records.map((r) => `${r.topic}-${r.partition}@${r.offset}`).sort();

const crawl = (fields: Record<string, unknown> = {}) => ({
  appid: 'testapp',
  crawlid: 'c1',
  url: 'http://example.com/',
  ...fields,
});

describe('handleIncoming: crawl requests', () => {
  it('queues both sample crawls in one enqueue call for the link spider, with the defaults filled and depth 0', async () => {
    const ctx = testContext();
    const result = await handleIncoming(ctx, sampleRecords());

    expect(result.crawl).toEqual({ queued: 2, duplicate: 0, stopped: 0, expired: 0, capped: 0, unknown_crawl: 0 });
    expect(ctx.frontier.enqueueCalls).toHaveLength(1);
    const call = ctx.frontier.enqueueCalls[0];
    expect(call?.spider).toBe('link');
    expect(call?.now).toBe(TEST_NOW);
    expect(call?.items).toEqual([
      {
        crawl: {
          appid: 'testapp',
          crawlid: 'abc123',
          settings: { appid: 'testapp', crawlid: 'abc123', spiderid: 'link', priority: 60, maxdepth: 1, expires: 0 },
        },
        request: {
          url: 'http://example.com/',
          domain: 'example.com',
          fingerprint: requestFingerprint('http://example.com/'),
          priority: 60,
          depth: 0,
        },
      },
      {
        crawl: {
          appid: 'testapp',
          crawlid: 'abc124',
          settings: {
            appid: 'testapp',
            crawlid: 'abc124',
            allowed_domains: ['example.org'],
            spiderid: 'link',
            priority: 1,
            maxdepth: 0,
            expires: 0,
          },
        },
        request: {
          url: 'https://www.example.org/news?b=2&a=1#top',
          domain: 'example.org',
          fingerprint: requestFingerprint('https://www.example.org/news?b=2&a=1#top'),
          priority: 1,
          depth: 0,
        },
      },
    ]);
  });

  it('keys a seed by its registrable domain and the 8-byte fingerprint of its canonical URL', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl({ url: 'https://News.BBC.co.uk:443/world?b=2&a=1#top' })]));

    const request = ctx.frontier.queued('link', 'testapp', 'c1')[0];
    expect(request?.domain).toBe('bbc.co.uk');
    expect(request?.fingerprint).toHaveLength(8);
    expect(request?.fingerprint.equals(requestFingerprint('https://news.bbc.co.uk/world?a=1&b=2'))).toBe(true);
  });

  it('queues a bare-host seed with http:// prepended', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl({ url: 'example.com/a' })]));

    expect(ctx.frontier.queued('link', 'testapp', 'c1').map((r) => r.url)).toEqual(['http://example.com/a']);
  });

  it('makes one enqueue call per spider type, each with only its own requests', async () => {
    const ctx = testContext();
    await handleIncoming(
      ctx,
      recordsOf(INCOMING, [
        crawl({ crawlid: 'a' }),
        crawl({ crawlid: 'b', spiderid: 'wandering' }),
        crawl({ crawlid: 'c', url: 'http://example.net/' }),
      ]),
    );

    expect(ctx.frontier.enqueueCalls.map((c) => [c.spider, c.items.map((i) => i.crawl.crawlid)])).toEqual([
      ['link', ['a', 'c']],
      ['wandering', ['b']],
    ]);
  });

  it('answers duplicate for every crawl of a redelivered batch and queues nothing more', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, sampleRecords());
    const queuedBefore = ctx.frontier.totalQueued();

    const again = await handleIncoming(ctx, sampleRecords());

    expect(again.crawl).toEqual({ queued: 0, duplicate: 2, stopped: 0, expired: 0, capped: 0, unknown_crawl: 0 });
    expect(where(again.failures)).toEqual([]);
    expect(ctx.frontier.totalQueued()).toBe(queuedBefore);
  });

  it('answers the re-fed seed of a finished crawl with a duplicate rejection on rejected and outbound, naming the crawl', async () => {
    const ctx = testContext({ appidTopics: true });
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));
    ctx.frontier.finishCrawl('link', 'testapp', 'c1');

    const again = await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));

    expect(again.crawl.duplicate).toBe(1);
    expect(where(again.failures)).toEqual([]);
    const expected = {
      error: 'duplicate',
      appid: 'testapp',
      crawlid: 'c1',
      details: [{ path: '/url', message: expect.stringContaining("already in this crawl's dupefilter") }],
    };
    expect(ctx.sink.values(REJECTED)).toMatchObject([expected]);
    expect(ctx.sink.values(FIREHOSE)).toMatchObject([expected]);
    expect(ctx.sink.values('demo.outbound_testapp')).toMatchObject([expected]);
  });

  it('says nothing of a duplicate seed of a crawl still running: its pages and complete notice follow', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));
    const again = await handleIncoming(ctx, recordsOf(INCOMING, [crawl(), crawl()]));

    expect(again.crawl.duplicate).toBe(2);
    expect(ctx.sink.values(REJECTED)).toEqual([]);
    expect(ctx.sink.values(FIREHOSE)).toEqual([]);
  });

  it('reads a finished crawl once for all of its duplicate seeds in a batch, and fails them if Redis fails then', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));
    ctx.frontier.finishCrawl('link', 'testapp', 'c1');
    const before = ctx.frontier.calls.filter((c) => c === 'crawlInfo').length;
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl(), crawl(), crawl()]));
    expect(ctx.frontier.calls.filter((c) => c === 'crawlInfo').length - before).toBe(1);
    expect(ctx.sink.values(REJECTED).map((r) => r.error)).toEqual(['duplicate', 'duplicate', 'duplicate']);

    ctx.frontier.goDownAfter(1);
    const failed = await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));
    expect(failed.failures).toHaveLength(1);
  });

  it('rejects the seed of a stopped crawl as stopped, saying to use a new crawlid, without failing the record', async () => {
    const ctx = testContext();
    await ctx.frontier.stop('link', 'testapp', 'c1', TEST_NOW - 1000);

    const result = await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));

    expect(result.crawl.stopped).toBe(1);
    expect(where(result.failures)).toEqual([]);
    expect(ctx.frontier.totalQueued()).toBe(0);
    expect(ctx.sink.values(REJECTED)).toMatchObject([
      {
        error: 'stopped',
        appid: 'testapp',
        details: [{ path: '/crawlid', message: expect.stringContaining('use a new crawlid') }],
      },
    ]);
  });

  it('rejects as capped a second seed on a domain whose domain_max_pages (1) the crawl has reached', async () => {
    const ctx = testContext();
    const result = await handleIncoming(
      ctx,
      recordsOf(INCOMING, [
        crawl({ url: 'http://example.com/a', domain_max_pages: 1 }),
        crawl({ url: 'http://example.com/b', domain_max_pages: 1 }),
      ]),
    );
    expect(result.crawl).toMatchObject({ queued: 1, capped: 1 });
    expect(ctx.sink.values(REJECTED)).toMatchObject([
      {
        error: 'capped',
        details: [{ path: '/url', message: expect.stringContaining('domain_max_pages (1) for example.com') }],
      },
    ]);
  });

  it('answers a crawl whose expires has passed with the expired notice on outbound, queueing nothing', async () => {
    const ctx = testContext();
    const result = await handleIncoming(
      ctx,
      recordsOf(INCOMING, [crawl({ crawlid: 'late', expires: TEST_NOW_SEC - 60 })]),
    );

    expect(result.crawl.expired).toBe(1);
    expect(ctx.frontier.totalQueued()).toBe(0);
    expect(ctx.sink.values(FIREHOSE)).toEqual([
      {
        action: 'expired',
        server_time: TEST_NOW_SEC,
        appid: 'testapp',
        crawlid: 'late',
        spiderid: 'link',
        total_expired: 0,
      },
    ]);
    expect(ctx.sink.values(REJECTED)).toEqual([]);
  });

  it('rejects a crawl request naming an unknown spider as unknown_spider and queues nothing', async () => {
    const ctx = testContext();
    const result = await handleIncoming(ctx, recordsOf(INCOMING, [crawl({ spiderid: 'nope' })]));

    expect(result.rejected).toBe(1);
    expect(ctx.frontier.totalQueued()).toBe(0);
    expect(ctx.sink.values(REJECTED)).toMatchObject([{ error: 'unknown_spider', details: [{ path: '/spiderid' }] }]);
  });
});

describe('handleIncoming: forwarded requests', () => {
  it('forwards the sample info, stats and domain requests to demo.actions keyed by appid, in batch order', async () => {
    const ctx = testContext();
    const result = await handleIncoming(ctx, sampleRecords());

    expect(result.forwarded).toBe(3);
    expect(ctx.sink.keys(ACTIONS)).toEqual(['testapp', 'testapp', 'testapp']);
    expect(ctx.sink.values(ACTIONS)).toEqual([
      { action: 'info', appid: 'testapp', uuid: 'info-1', crawlid: 'abc123', spiderid: 'link' },
      { stats: 'queue', appid: 'testapp', uuid: 'stats-1' },
      {
        uuid: 'dom-1',
        appid: 'testapp',
        domain: 'example.com',
        action: 'domain-update',
        hits: 20,
        window: 60,
        scale: 0.5,
      },
    ]);
  });

  it('forwards a domain request with hits 0, window 0 and scale 1 filled in', async () => {
    const ctx = testContext();
    await handleIncoming(
      ctx,
      recordsOf(INCOMING, [{ uuid: 'd1', appid: 'testapp', domain: 'example.com', action: 'blacklist-update' }]),
    );

    expect(ctx.sink.values(ACTIONS)).toEqual([
      { uuid: 'd1', appid: 'testapp', domain: 'example.com', action: 'blacklist-update', hits: 0, window: 0, scale: 1 },
    ]);
  });

  // docs/contract.md: the type is decided by which schema validates, and `stats` defaults to "all".
  it('forwards a stats request without "stats" as a stats request for "all"', async () => {
    const ctx = testContext();
    const result = await handleIncoming(ctx, recordsOf(INCOMING, [{ uuid: 's1', appid: 'testapp' }]));

    expect(result.rejected).toBe(0);
    expect(ctx.sink.values(ACTIONS)).toEqual([{ uuid: 's1', appid: 'testapp', stats: 'all' }]);
  });

  it('puts nothing on the outbound topics for valid requests', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl(), { uuid: 's1', appid: 'testapp', stats: 'all' }]));

    expect(ctx.sink.topics()).toEqual([ACTIONS]);
  });
});

describe('handleIncoming: rejections', () => {
  it('rejects each bad sample record on demo.rejected with the contract shape', async () => {
    const ctx = testContext();
    const result = await handleIncoming(ctx, sampleRecords());

    expect(result.rejected).toBe(3);
    const [schema, notJson, binary] = ctx.sink.values(REJECTED);
    expect(schema).toEqual({
      error: 'schema',
      details: expect.arrayContaining([
        { path: '/priority', message: 'must be <= 100' },
        { path: '/uuid', message: 'is not an allowed field' },
      ]),
      appid: 'testapp',
      uuid: 'bad-1',
      crawlid: 'abc125',
      raw: '{"url": "http://example.com/", "appid": "testapp", "crawlid": "abc125", "priority": 101, "uuid": "bad-1"}',
      source: { topic: INCOMING, partition: 1, offset: 7 },
      server_time: TEST_NOW_SEC,
    });
    expect(schema?.details).toHaveLength(2);
    expect(notJson).toEqual({
      error: 'invalid_json',
      details: [{ path: '', message: expect.stringContaining('JSON') }],
      raw: '{not json',
      source: { topic: INCOMING, partition: 1, offset: 8 },
      server_time: TEST_NOW_SEC,
    });
    expect(binary).toEqual({
      error: 'invalid_json',
      details: [{ path: '', message: 'is not valid UTF-8' }],
      raw: Buffer.from([0xff, 0xfe, 0x00, 0x81]).toString('utf8'),
      source: { topic: INCOMING, partition: 1, offset: 9 },
      server_time: TEST_NOW_SEC,
    });
    expect(ctx.sink.keys(REJECTED)).toEqual(['testapp', null, null]);
  });

  it('sends the rejection of a request with appid and uuid to demo.outbound_firehose too, and only that one', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, sampleRecords());

    expect(ctx.sink.values(FIREHOSE)).toEqual([ctx.sink.values(REJECTED)[0]]);
    expect(ctx.sink.values(FIREHOSE)[0]).toMatchObject({ uuid: 'bad-1', appid: 'testapp' });
    expect(ctx.sink.keys(FIREHOSE)).toEqual(['testapp']);
  });

  it('with per-app topics on, also sends that rejection to demo.outbound_<appid>', async () => {
    const ctx = testContext({ appidTopics: true });
    await handleIncoming(ctx, sampleRecords());

    expect(ctx.sink.topics()).toEqual([ACTIONS, FIREHOSE, 'demo.outbound_testapp', REJECTED]);
    expect(ctx.sink.values('demo.outbound_testapp')).toEqual(ctx.sink.values(FIREHOSE));
  });

  it('with per-app topics on, a rejected request whose appid is no legal topic name does not fail the batch', async () => {
    const ctx = testContext({ appidTopics: true });
    const result = await handleIncoming(
      ctx,
      recordsOf(INCOMING, [{ uuid: 'u1', appid: 'my app/1', crawlid: 'c1', url: 'http://example.com/', priority: 0 }]),
    );

    expect(where(result.failures)).toEqual([]);
    expect(ctx.sink.values(REJECTED)).toMatchObject([{ error: 'schema', appid: 'my app/1', uuid: 'u1' }]);
  });

  it('echoes only the first 4 KiB of a long bad message in raw', async () => {
    const ctx = testContext();
    const long = `{"oops": "${'x'.repeat(10_000)}`;
    await handleIncoming(ctx, recordsOf(INCOMING, [long]));

    const [r] = ctx.sink.values(REJECTED);
    expect(r?.error).toBe('invalid_json');
    expect(r?.raw).toBe(long.slice(0, RAW_ECHO_BYTES));
    expect(RAW_ECHO_BYTES).toBe(4096);
  });

  it('cuts raw at a character boundary, so it holds no replacement character and at most 4 KiB of UTF-8', async () => {
    const ctx = testContext();
    // 6 ASCII bytes, then 3-byte characters: byte 4096 falls inside the 1364th one.
    const long = `{"a":"${'€'.repeat(2000)}`;
    await handleIncoming(ctx, recordsOf(INCOMING, [long]));

    const raw = String(ctx.sink.values(REJECTED)[0]?.raw);
    expect(Buffer.byteLength(raw, 'utf8')).toBeLessThanOrEqual(RAW_ECHO_BYTES);
    expect(raw).not.toContain('\uFFFD');
    expect(long.startsWith(raw)).toBe(true);
  });

  it('rejects a 5 MB record as too_large, echoing 4 KiB of it in raw', async () => {
    const ctx = testContext();
    const huge = Buffer.from(
      `{"appid":"testapp","crawlid":"c1","url":"http://example.com/","attrs":{"x":"${'y'.repeat(5_000_000)}"}}`,
    );
    const records = recordsOf(INCOMING, [huge], { partition: 2, firstOffset: 40 });
    const result = await handleIncoming(ctx, records);

    expect(result).toMatchObject({ failures: [], rejected: 1, forwarded: 0 });
    expect(ctx.frontier.totalQueued()).toBe(0);
    const [r] = ctx.sink.values(REJECTED);
    expect(r).toMatchObject({
      error: 'too_large',
      details: [{ path: '', message: expect.stringContaining(String(huge.length)) }],
      source: { topic: INCOMING, partition: 2, offset: 40 },
      server_time: TEST_NOW_SEC,
    });
    expect(r?.raw).toBe(huge.subarray(0, 4096).toString('utf8'));
  });
});

describe('handleIncoming: infrastructure failures', () => {
  it('with Redis down, fails only the crawl records; forwards and rejections still go out', async () => {
    const ctx = testContext();
    ctx.frontier.down = true;
    const result = await handleIncoming(ctx, sampleRecords());

    expect(where(result.failures)).toEqual(['demo.incoming-0@100', 'demo.incoming-0@101']);
    expect(result.forwarded).toBe(3);
    expect(result.rejected).toBe(3);
    expect(ctx.sink.values(ACTIONS)).toHaveLength(3);
    expect(ctx.sink.values(REJECTED)).toHaveLength(3);
    expect(ctx.log.at('error')).toHaveLength(1);
  });

  it('with Kafka down, fails the forwarded and rejected records; the crawls are still queued', async () => {
    const ctx = testContext();
    ctx.sink.down = true;
    const result = await handleIncoming(ctx, sampleRecords());

    expect(where(result.failures)).toEqual([
      'demo.incoming-0@102',
      'demo.incoming-1@10',
      'demo.incoming-1@11',
      'demo.incoming-1@7',
      'demo.incoming-1@8',
      'demo.incoming-1@9',
    ]);
    expect(result).toMatchObject({ forwarded: 0, rejected: 0 });
    expect(result.crawl.queued).toBe(2);
    expect(ctx.frontier.totalQueued()).toBe(2);
  });

  it('with Redis and Kafka down, fails every record', async () => {
    const ctx = testContext();
    ctx.frontier.down = true;
    ctx.sink.down = true;
    const records = sampleRecords();
    const result = await handleIncoming(ctx, records);

    expect(where(result.failures)).toEqual(where(records));
  });

  it('after a failed batch, the redelivered one queues the crawls once and answers no failures', async () => {
    const ctx = testContext();
    ctx.frontier.down = true;
    await handleIncoming(ctx, sampleRecords());
    ctx.frontier.down = false;

    const result = await handleIncoming(ctx, sampleRecords());

    expect(where(result.failures)).toEqual([]);
    expect(result.crawl.queued).toBe(2);
    expect(ctx.frontier.totalQueued()).toBe(2);
  });
});

describe('handleIncoming: stats', () => {
  // Scrapy Cluster's kafka-monitor reports its plugins by handler class name.
  it('counts kafka-monitor:total, fail and plugin:<handler class>, and beats the kafka-monitor heartbeat', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, sampleRecords());

    const counts = Object.fromEntries(
      (await ctx.stats.names('kafka-monitor:')).map((name) => [name, ctx.stats.lifetime(name)]),
    );
    expect(counts).toEqual({
      'kafka-monitor:total': 8,
      'kafka-monitor:fail': 3,
      'kafka-monitor:plugin:ScraperHandler': 2,
      'kafka-monitor:plugin:ActionHandler': 1,
      'kafka-monitor:plugin:StatsHandler': 1,
      'kafka-monitor:plugin:ZookeeperHandler': 1,
    });
    expect(ctx.stats.incrementCalls.map((c) => c.nowMs)).toEqual([TEST_NOW]);
    expect(await ctx.stats.live('kafka-monitor', TEST_NOW, 1000)).toEqual([TEST_NODE_ID]);
  });

  it('adds no fail count to a batch without rejections', async () => {
    const ctx = testContext();
    await handleIncoming(ctx, recordsOf(INCOMING, [crawl()]));

    expect(await ctx.stats.names('kafka-monitor:')).toEqual([
      'kafka-monitor:plugin:ScraperHandler',
      'kafka-monitor:total',
    ]);
  });

  it('with the stats store down, the batch still succeeds and a warning is logged', async () => {
    const ctx = testContext();
    ctx.stats.down = true;
    const result = await handleIncoming(ctx, sampleRecords());

    expect(where(result.failures)).toEqual([]);
    expect(result.crawl.queued).toBe(2);
    // Besides the line per rejected sample record.
    const warnings = ctx.log.at('warn').map((l) => l.message);
    expect(warnings.filter((m) => !m.startsWith('rejected a request'))).toEqual(['stats update failed']);
  });
});
