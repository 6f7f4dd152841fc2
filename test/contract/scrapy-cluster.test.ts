/**
 * The contract tier (docs/contract.md): the request examples of Scrapy Cluster's documentation (kafka-monitor
 * API: crawl, info in both forms, stop, expire, every stats type, the four domain actions, the wandering
 * example), fed to `<p>.incoming` of the real local cluster with a crawler worker process, every reply and
 * page checked field by field and type by type as Scrapy Cluster's clients read them. The examples' URLs
 * point at the fixture site instead of dmoz.org.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { type Collector, completeNotice, crawlPages, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { waitUntil } from '../helpers/services.ts';

const APPID = 'testapp';
const WINDOWS = ['900', '3600', '21600', '43200', '86400', '604800', 'lifetime'];

type Json = Record<string, unknown>;

/** Asserts that `value` has exactly these keys (optional ones may be absent) and each has the JS type named. */
function shape(value: Json | undefined, required: Record<string, string>, optional: Record<string, string> = {}) {
  expect(value).toBeDefined();
  const v = value as Json;
  for (const [key, type] of Object.entries(required)) {
    expect(key in v, `${key} is present`).toBe(true);
    expect(typeOf(v[key]), `${key} is ${type}`).toBe(type);
  }
  for (const [key, type] of Object.entries(optional))
    if (key in v) expect(typeOf(v[key]), `${key} is ${type}`).toBe(type);
  expect(Object.keys(v).filter((k) => !(k in required) && !(k in optional))).toEqual([]);
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  return typeof v;
}

/** A counter of windows, as every stats payload has them: each window a string key, each count an int. */
function windows(counts: unknown) {
  expect(Object.keys(counts as Json).sort()).toEqual([...WINDOWS].sort());
  for (const n of Object.values(counts as Json)) expect(typeOf(n)).toBe('int');
}

describe("Scrapy Cluster's documented requests through the local cluster", () => {
  let t: TestCluster;
  let site: FixtureSite;
  let worker: CrawlerProcess;
  let pages: Collector;
  let outbound: Collector;

  beforeAll(async () => {
    site = await startSite({ pages: 40, links: 3, hosts: ['dmoz.test'] });
    t = await startTestCluster({ ALLOW_PRIVATE_NETWORKS: true, QUEUE_HITS: 1000, QUEUE_WINDOW: 1, LOG_LEVEL: 'ERROR' });
    pages = await t.collect(t.topics.crawledFirehose);
    outbound = await t.collect(t.topics.outboundFirehose);
    worker = startCrawlerProcess(t.vars, { CRAWLER_HOST_MAP: site.hostMap, CRAWLER_CONCURRENCY: 4 });
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    await site?.close();
  });

  const reply = (uuid: string) => outbound.waitFor((m) => m.uuid === uuid, `the reply to ${uuid}`);

  test('crawl {url, appid, crawlid, maxdepth, priority}: every page has the contract fields with their types', async () => {
    await t.feed([{ url: site.url(0), appid: APPID, crawlid: 'abc123', maxdepth: 1, priority: 90 }]);
    const done = await completeNotice(outbound, 'abc123');
    shape(done, {
      action: 'string',
      server_time: 'int',
      appid: 'string',
      crawlid: 'string',
      spiderid: 'string',
      total_pages: 'int',
      total_failed: 'int',
    });
    const got = await waitUntil('the pages', () => {
      const p = crawlPages(pages, 'abc123');
      return p.length >= Number(done.total_pages) ? p : undefined;
    });
    expect(got).toHaveLength(site.reachable(0, 1).size);
    for (const page of got) {
      shape(
        page,
        {
          appid: 'string',
          crawlid: 'string',
          spiderid: 'string',
          url: 'string',
          response_url: 'string',
          status_code: 'int',
          status_msg: 'string',
          response_headers: 'object',
          request_headers: 'object',
          body: 'string',
          encoding: 'string',
          links: 'array',
          attrs: 'null',
          success: 'boolean',
          timestamp: 'string',
        },
        {
          depth: 'int',
          fetched_ms: 'int',
          retry_times: 'int',
          body_truncated: 'boolean',
          body_encoding: 'string',
          body_cut: 'string',
          body_cut_bytes: 'int',
          body_message_cut: 'boolean',
          links_skipped: 'object',
        },
      );
      // Scrapy's header names; values are lists of strings.
      expect(Object.keys(page.response_headers as Json)).toContain('Content-Type');
      for (const values of Object.values(page.response_headers as Json)) expect(typeOf(values)).toBe('array');
      expect(page.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
      expect(page.encoding).toBe('utf-8');
    }
  });

  test('info, crawl form and app form, answer in Scrapy Cluster shapes (expires a string)', async () => {
    // A crawl that stays queued: its domain is blacklisted first.
    await t.feed([{ uuid: 'bl1', appid: APPID, action: 'blacklist-update', domain: 'queued.example' }]);
    await reply('bl1');
    await t.feed([{ url: 'http://queued.example/a', appid: APPID, crawlid: 'held', expires: 4102444800 }]);
    await waitUntil('the crawl to be queued', () => t.deps.ctx.frontier.crawlInfo('link', APPID, 'held'));
    await t.feed([{ action: 'info', appid: APPID, uuid: 'someuuid', crawlid: 'held', spiderid: 'link' }]);
    const crawl = await reply('someuuid');
    shape(crawl, {
      server_time: 'int',
      uuid: 'string',
      appid: 'string',
      crawlid: 'string',
      spiderid: 'string',
      total_pending: 'int',
      total_domains: 'int',
      domains: 'object',
      expires: 'string',
    });
    expect(crawl.expires).toBe('4102444800');
    shape((crawl.domains as Json)['queued.example'] as Json, {
      low_priority: 'int',
      high_priority: 'int',
      total: 'int',
    });

    await t.feed([{ action: 'info', appid: APPID, uuid: 'appuuid', spiderid: 'link' }]);
    const app = await reply('appuuid');
    shape(app, {
      server_time: 'int',
      uuid: 'string',
      appid: 'string',
      spiderid: 'string',
      total_pending: 'int',
      total_domains: 'int',
      total_crawlids: 'int',
      crawlids: 'object',
    });
    // Only crawls with queued work: the finished abc123 is not listed.
    expect(Object.keys(app.crawlids as Json)).toEqual(['held']);
    shape(
      (app.crawlids as Json).held as Json,
      { domains: 'object', distinct_domains: 'int', total: 'int' },
      { expires: 'string' },
    );
  });

  test('stop purges and answers {action, server_time, uuid, appid, crawlid, spiderid, total_purged}', async () => {
    await t.feed([{ action: 'stop', appid: APPID, uuid: 'stopuuid', crawlid: 'held', spiderid: 'link' }]);
    const r = await reply('stopuuid');
    shape(r, {
      action: 'string',
      server_time: 'int',
      uuid: 'string',
      appid: 'string',
      crawlid: 'string',
      spiderid: 'string',
      total_purged: 'int',
    });
    expect(r).toMatchObject({ action: 'stop', total_purged: 1 });
  });

  test('a crawl that expires gets the expired notice in its shape', async () => {
    const expires = Math.floor(Date.now() / 1000) + 2;
    await t.feed([{ url: 'http://queued.example/e', appid: APPID, crawlid: 'expiring', expires }]);
    const notice = await outbound.waitFor(
      (m) => m.action === 'expired' && m.crawlid === 'expiring',
      'the expired notice',
      30_000,
    );
    shape(notice, {
      action: 'string',
      server_time: 'int',
      appid: 'string',
      crawlid: 'string',
      spiderid: 'string',
      total_expired: 'int',
    });
    expect(notice.total_expired).toBe(1);
  });

  test.each(['kafka-monitor', 'redis-monitor'])('stats %s: total, fail, plugins (class names), nodes', async (type) => {
    const uuid = `stats-${type}`;
    await t.feed([{ uuid, appid: APPID, stats: type }]);
    const r = await reply(uuid);
    shape(r, {
      stats: 'string',
      server_time: 'int',
      uuid: 'string',
      appid: 'string',
      total: 'object',
      fail: 'object',
      plugins: 'object',
      nodes: 'object',
    });
    windows(r.total);
    windows(r.fail);
    const names = Object.keys(r.plugins as Json);
    const allowed =
      type === 'kafka-monitor'
        ? ['ScraperHandler', 'ActionHandler', 'StatsHandler', 'ZookeeperHandler']
        : ['InfoMonitor', 'StopMonitor', 'ExpireMonitor', 'StatsMonitor', 'ZookeeperMonitor'];
    expect(names.length).toBeGreaterThan(0);
    for (const n of names) expect(allowed).toContain(n);
  });

  test('stats spider, machine, queue, crawler: every status key is an HTTP code', async () => {
    for (const type of ['spider', 'machine', 'queue', 'crawler', 'all']) {
      await t.feed([{ uuid: `stats-${type}`, appid: APPID, stats: type }]);
    }
    const spider = await reply('stats-spider');
    const spiders = spider.spiders as Json;
    // One entry per spider type with counters (Scrapy Cluster's shape is keyed by spider name); the crawler serves
    // the built-ins link, wandering and sitemap.
    shape(
      spiders,
      { unique_spider_count: 'int', total_spider_count: 'int', link: 'object' },
      { wandering: 'object', sitemap: 'object' },
    );
    for (const [code, counts] of Object.entries(spiders.link as Json)) {
      if (code === 'count') continue;
      expect(code).toMatch(/^\d{3}$/);
      windows(counts);
    }
    const machine = await reply('stats-machine');
    for (const [name, statuses] of Object.entries(machine.machines as Json)) {
      if (name === 'count') continue;
      for (const code of Object.keys(statuses as Json)) expect(code).toMatch(/^\d{3}$/);
    }
    const queue = await reply('stats-queue');
    shape((queue.queues as Json) ?? {}, { total_backlog: 'int' }, { queue_link: 'object', queue_wandering: 'object' });
    const crawler = await reply('stats-crawler');
    expect(Object.keys(crawler)).toEqual(expect.arrayContaining(['spiders', 'machines', 'queue']));
    const all = await reply('stats-all');
    expect(Object.keys(all)).toEqual(expect.arrayContaining(['kafka-monitor', 'redis-monitor', 'crawler']));
  });

  test.each([
    ['domain-update', { hits: 60, window: 60, scale: 0.9 }],
    ['domain-remove', {}],
    ['blacklist-update', {}],
    ['blacklist-remove', {}],
  ])('%s echoes {action, domain, uuid, appid, server_time}', async (action, extra) => {
    const uuid = `dom-${action}`;
    await t.feed([{ uuid, appid: 'madisonTest', action, domain: 'dmoz.org', ...extra }]);
    const r = await reply(uuid);
    shape(r, { action: 'string', domain: 'string', uuid: 'string', appid: 'string', server_time: 'int' });
    expect(r).toMatchObject({ action, domain: 'dmoz.org' });
  });

  test('the wandering example walks one link per page past maxdepth 0, its pages carrying attrs.step', async () => {
    await t.feed([{ url: site.url(0), appid: APPID, crawlid: 'test', spiderid: 'wandering' }]);
    await completeNotice(outbound, 'test', 90_000);
    const walked = await waitUntil('the walk', () => {
      const p = crawlPages(pages, 'test');
      return p.length > 1 ? p : undefined;
    });
    for (const page of walked) {
      expect(page.spiderid).toBe('wandering');
      expect((page.attrs as Json).step).toBe(page.depth);
    }
  });
});
