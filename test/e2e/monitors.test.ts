/**
 * The monitors end to end: requests produced to `<p>.incoming`, the real handlers driven by the local
 * runtime's consumer groups, real Redis (cluster mode) and real Kafka, replies read from the outbound topic.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { kafkaMonitorHandler } from '../../functions/kafka-monitor/handler.ts';
import { encodeMskEvent } from '../../functions/shared/msk.ts';
import { STATS_WINDOWS } from '../../lib/stats-model.ts';
import { lambdaContext } from '../../localstack/runtime/lambda-context.ts';
import { type Collector, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { uniqueName, waitUntil } from '../helpers/services.ts';

const WINDOW_KEYS = [...STATS_WINDOWS, 'lifetime'].sort();

describe('monitors through Kafka and Redis', () => {
  let t: TestCluster;
  let outbound: Collector;
  let rejected: Collector;

  beforeAll(async () => {
    t = await startTestCluster();
    outbound = await t.collect(t.topics.outboundFirehose);
    rejected = await t.collect(t.topics.rejected);
  });
  afterAll(async () => {
    await t?.stop();
  });

  const reply = (uuid: string) => outbound.waitFor((m) => m.uuid === uuid, `the reply to ${uuid}`);

  test('a fed crawl request is queued with its defaults and info reports it in the contract shape', async () => {
    await t.feed([{ url: 'http://example.com/start', appid: 'app1', crawlid: 'c-info' }]);
    const info = await waitUntil('the crawl to be queued', () =>
      t.deps.ctx.frontier.crawlInfo('link', 'app1', 'c-info'),
    );
    expect(info.queued).toBe(1);
    expect(info.settings).toMatchObject({ spiderid: 'link', priority: 1, maxdepth: 0, expires: 0 });
    await t.feed([{ action: 'info', appid: 'app1', uuid: 'u-info', crawlid: 'c-info', spiderid: 'link' }]);
    const r = await reply('u-info');
    expect(r).toEqual({
      server_time: expect.any(Number),
      uuid: 'u-info',
      appid: 'app1',
      crawlid: 'c-info',
      spiderid: 'link',
      total_pending: 1,
      total_domains: 1,
      domains: { 'example.com': { low_priority: 1, high_priority: 1, total: 1 } },
    });
  });

  test('1,000 crawl requests fed in one burst are all queued exactly once', async () => {
    const requests = Array.from({ length: 1000 }, (_, i) => ({
      url: `http://burst${i % 25}.example.net/page/${i}`,
      appid: 'app2',
      crawlid: 'burst',
      priority: 1 + (i % 100),
    }));
    await t.feed(requests);
    const info = await waitUntil(
      'all 1,000 to be queued',
      async () => {
        const i = await t.deps.ctx.frontier.crawlInfo('link', 'app2', 'burst');
        return i && i.queued >= 1000 ? i : undefined;
      },
      60_000,
    );
    expect(info.queued).toBe(1000);
    expect(Object.keys(info.domains)).toHaveLength(1);
    await t.feed(requests.slice(0, 100));
    await t.feed([{ action: 'info', appid: 'app2', uuid: 'u-burst', spiderid: 'link' }]);
    const r = await reply('u-burst');
    expect(r).toMatchObject({
      appid: 'app2',
      spiderid: 'link',
      total_pending: 1000,
      total_crawlids: 1,
      total_domains: 1,
    });
    expect((r.crawlids as Record<string, unknown>).burst).toMatchObject({ total: 1000, distinct_domains: 1 });
  });

  test('info on a crawl of 25,000 domains answers within the message limit with the busiest domains', async () => {
    // About 2 MB as Scrapy Cluster would send it: more than the broker takes (it would refuse the reply).
    const DOMAINS = 25_000;
    const requests = Array.from({ length: DOMAINS }, (_, i) => ({
      url: `http://a-rather-long-domain-name-${i}.com/${i % 7 === 0 ? 'busy' : 'page'}`,
      appid: 'app5',
      crawlid: 'c-wide',
    }));
    // Every seventh domain gets a second request, so it is among the busiest.
    const busy = requests.filter((_, i) => i % 7 === 0).map((r) => ({ ...r, url: `${r.url}/2` }));
    for (let i = 0; i < requests.length; i += 5000) await t.feed(requests.slice(i, i + 5000));
    await t.feed(busy);
    const queued = DOMAINS + busy.length;
    await waitUntil(
      'the wide crawl to be queued',
      async () => ((await t.deps.ctx.frontier.crawlInfo('link', 'app5', 'c-wide'))?.queued ?? 0) >= queued,
      120_000,
    );
    await t.feed([{ action: 'info', appid: 'app5', uuid: 'u-wide', crawlid: 'c-wide', spiderid: 'link' }]);
    const r = await reply('u-wide');
    expect(Buffer.byteLength(JSON.stringify(r))).toBeLessThanOrEqual(1_000_000);
    expect(r).toMatchObject({ crawlid: 'c-wide', total_pending: queued, total_domains: DOMAINS });
    const listed = Object.entries(r.domains as Record<string, { total: number }>);
    expect((r.cut as { domains_per_crawl: number }).domains_per_crawl).toBe(listed.length);
    expect(listed.length).toBeGreaterThan(busy.length);
    expect(listed.filter(([, d]) => d.total === 2)).toHaveLength(busy.length);
  }, 180_000);

  test('stop purges the crawl, answers with the count, and refuses later requests of it', async () => {
    await t.feed([
      { url: 'http://stop.example.org/1', appid: 'app3', crawlid: 'c-stop' },
      { url: 'http://stop.example.org/2', appid: 'app3', crawlid: 'c-stop' },
      { url: 'http://other.example.org/1', appid: 'app3', crawlid: 'c-keep' },
    ]);
    await waitUntil('both crawls queued', async () => (await t.deps.ctx.frontier.appInfo('link', 'app3'))['c-keep']);
    await t.feed([{ action: 'stop', appid: 'app3', uuid: 'u-stop', crawlid: 'c-stop', spiderid: 'link' }]);
    const r = await reply('u-stop');
    expect(r).toEqual({
      action: 'stop',
      server_time: expect.any(Number),
      uuid: 'u-stop',
      appid: 'app3',
      crawlid: 'c-stop',
      spiderid: 'link',
      total_purged: 2,
    });
    await t.feed([
      { url: 'http://stop.example.org/3', appid: 'app3', crawlid: 'c-stop' },
      { action: 'info', appid: 'app3', uuid: 'u-after-stop', spiderid: 'link' },
    ]);
    const after = await reply('u-after-stop');
    expect(Object.keys(after.crawlids as object)).toEqual(['c-keep']);
    expect(after.total_pending).toBe(1);
  });

  test('every stats type answers with the keys of the contract', async () => {
    const types = ['kafka-monitor', 'redis-monitor', 'crawler', 'spider', 'machine', 'queue', 'rest', 'all'];
    await t.feed(types.map((stats) => ({ stats, appid: 'app4', uuid: `u-stats-${stats}` })));
    for (const type of types) {
      const r = await reply(`u-stats-${type}`);
      expect(r).toMatchObject({ stats: type, appid: 'app4', server_time: expect.any(Number) });
      if (type === 'kafka-monitor') {
        expect(Object.keys(r.total as object).sort()).toEqual(WINDOW_KEYS);
        expect((r.total as Record<string, number>).lifetime).toBeGreaterThan(0);
        expect(r).toHaveProperty('fail');
        expect(r.plugins).toHaveProperty('ScraperHandler');
        expect(r).toHaveProperty('nodes');
      }
      if (type === 'queue') {
        const queues = r.queues as Record<string, { spider_backlog: number; num_domains: number; domains: unknown[] }>;
        expect(queues.total_backlog).toEqual(expect.any(Number));
        expect(queues.queue_link?.spider_backlog).toBeGreaterThan(0);
        expect(queues.queue_link?.domains[0]).toEqual({ domain: expect.any(String), backlog: expect.any(Number) });
      }
      if (type === 'crawler') {
        expect(Object.keys(r)).toEqual(
          expect.arrayContaining(['spiders', 'machines', 'queue', 'spider_outcomes', 'machine_outcomes']),
        );
      }
      if (type === 'spider') expect(r.spiders).toHaveProperty('unique_spider_count');
      if (type === 'machine') expect(r.machines).toHaveProperty('count');
      if (type === 'all') {
        expect(Object.keys(r)).toEqual(expect.arrayContaining(['kafka-monitor', 'redis-monitor', 'crawler', 'rest']));
      }
    }
  });

  test('domain-update and blacklist-update are applied and echoed', async () => {
    await t.feed([
      {
        uuid: 'u-dom',
        appid: 'app5',
        domain: 'example.com',
        action: 'domain-update',
        hits: 20,
        window: 60,
        scale: 0.5,
      },
      { uuid: 'u-black', appid: 'app5', domain: 'blocked.example', action: 'blacklist-update' },
    ]);
    expect(await reply('u-dom')).toEqual({
      action: 'domain-update',
      domain: 'example.com',
      uuid: 'u-dom',
      appid: 'app5',
      server_time: expect.any(Number),
    });
    expect(await reply('u-black')).toMatchObject({ action: 'blacklist-update', domain: 'blocked.example' });
  });

  test('a crawl whose expires passes gets one expired notice and is purged', async () => {
    const expires = Math.floor(Date.now() / 1000) + 3;
    await t.feed([{ url: 'http://expire.example.com/', appid: 'app6', crawlid: 'c-exp', expires }]);
    const notice = await outbound.waitFor(
      (m) => m.action === 'expired' && m.crawlid === 'c-exp',
      'the expired notice',
      20_000,
    );
    expect(notice).toEqual({
      action: 'expired',
      server_time: expect.any(Number),
      appid: 'app6',
      crawlid: 'c-exp',
      spiderid: 'link',
      total_expired: 1,
    });
    expect(notice.server_time as number).toBeGreaterThanOrEqual(expires);
    expect(await t.deps.ctx.frontier.crawlInfo('link', 'app6', 'c-exp')).toBeUndefined();
    await new Promise((r) => setTimeout(r, 2500));
    expect(outbound.messages.filter((m) => m.action === 'expired' && m.crawlid === 'c-exp')).toHaveLength(1);
  });

  test('bad input is rejected with reasons while the valid records of the same burst are processed', async () => {
    const big = JSON.stringify({
      url: 'http://big.example.com/',
      appid: 'app7',
      crawlid: 'big',
      attrs: { pad: 'x'.repeat(5_000_000) },
    });
    await t.feed([
      '{"url": "http://example.com/", "appid": ',
      { url: 'http://example.com/', appid: 'app7', crawlid: 'c-bad', priority: 101, uuid: 'u-bad' },
      { url: 'http://example.com/', appid: 'app7', crawlid: 'c-bad', colour: 'blue' },
      Buffer.from([0xff, 0xfe, 0x00, 0x81, 0x9c]),
      big,
      { url: 'http://valid.example.com/', appid: 'app7', crawlid: 'c-good' },
    ]);
    // Nothing else in this file is rejected, so these five are ours.
    const kinds = await waitUntil('five rejections', () =>
      rejected.messages.length >= 5 ? rejected.messages : undefined,
    );
    const byError = (e: string) => kinds.filter((m) => m.error === e);
    expect(byError('invalid_json').length).toBeGreaterThanOrEqual(2);
    const schema = byError('schema');
    expect(schema.flatMap((m) => (m.details as { path: string }[]).map((d) => d.path))).toEqual(
      expect.arrayContaining(['/priority', '/colour']),
    );
    const tooLarge = byError('too_large');
    expect(tooLarge).toHaveLength(1);
    expect(String(tooLarge[0]?.raw).length).toBeLessThanOrEqual(4096);
    for (const m of kinds) {
      expect(m).toMatchObject({
        source: { topic: t.topics.incoming, partition: expect.any(Number), offset: expect.any(Number) },
      });
    }
    expect(await outbound.waitFor((m) => m.uuid === 'u-bad', 'the rejection on outbound')).toMatchObject({
      error: 'schema',
    });
    await waitUntil('the valid crawl to be queued', () => t.deps.ctx.frontier.crawlInfo('link', 'app7', 'c-good'));
  });

  test('a batch delivered twice (same offsets) queues nothing new the second time', async () => {
    const handler = kafkaMonitorHandler(() => Promise.resolve(t.deps.ctx));
    const event = encodeMskEvent(
      Array.from({ length: 20 }, (_, i) => ({
        topic: t.topics.incoming,
        partition: 0,
        offset: 5000 + i,
        value: Buffer.from(JSON.stringify({ url: `http://twice.example.com/${i}`, appid: 'app8', crawlid: 'twice' })),
      })),
    );
    const first = await handler(event, lambdaContext('kafka-monitor') as never);
    const infoAfterFirst = await t.deps.ctx.frontier.crawlInfo('link', 'app8', 'twice');
    const second = await handler(event, lambdaContext('kafka-monitor') as never);
    const infoAfterSecond = await t.deps.ctx.frontier.crawlInfo('link', 'app8', 'twice');
    expect(first).toEqual({ batchItemFailures: [] });
    expect(second).toEqual({ batchItemFailures: [] });
    expect(infoAfterFirst?.queued).toBe(20);
    expect(infoAfterSecond).toEqual(infoAfterFirst);
  });

  test('the uuid of a reply keys a stored copy for REST polling', async () => {
    const uuid = uniqueName('u-poll-');
    await t.feed([{ action: 'info', appid: 'app9', uuid, spiderid: 'link' }]);
    await reply(uuid);
    const stored = await t.deps.ctx.replies.take(uuid);
    expect(JSON.parse(stored ?? '{}')).toMatchObject({ uuid, appid: 'app9' });
    expect(await t.deps.ctx.replies.take(uuid)).toBeUndefined();
  });
});
