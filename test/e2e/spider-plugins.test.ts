/**
 * Spider plugins end to end (issue 17): crawler worker PROCESSES (functions/crawler/main.ts) load the example
 * plugins from their folder through CRAWLER_PLUGINS, exactly as a user would, register their spider types in
 * Redis, and crawl the fixture site through the real monitors and Kafka: `data` arrives on the firehose, a hand-off
 * is crawled by the other spider type, a throwing plugin gives success:false pages and the crawl still completes,
 * the sitemap spider finds every URL of a sitemap index (plain and gzip), and a broken plugin stops a worker at
 * start with its name (exit code 2).
 */
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import type { Variables } from '../../lib/config/index.ts';
import { redisSpiderTypeStore } from '../../lib/monitor/spider-types.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { fleetWakeKey } from '../../lib/redis/keys.ts';
import {
  type FixtureSite,
  PRODUCTS,
  productOf,
  type SiteOptions,
  sitemapLastmod,
  sitemapPages,
  startSite,
} from '../../localstack/site/site.ts';
import { type Collector, completeNotice, crawlPages, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { startCrawlerProcess } from '../helpers/crawler-process.ts';
import { clusterRedis, waitUntil } from '../helpers/services.ts';

const APPID = 'plugins';
const PLUGINS = 'examples/json-ld-products/products.ts,examples/hand-off/shop.ts,test/fixtures/plugins/throwing.ts';

describe('spider plugins with crawler worker processes', () => {
  let t: TestCluster;
  let pages: Collector;
  let outbound: Collector;
  let rejected: Collector;
  let redis: RedisClient;

  beforeAll(async () => {
    t = await startTestCluster(
      { ALLOW_PRIVATE_NETWORKS: true, QUEUE_HITS: 1000, QUEUE_WINDOW: 1, RETRY_BASE_DELAY_MS: 100, LOG_LEVEL: 'WARN' },
      { crawlerWorkers: 0 },
    );
    pages = await t.collect(t.topics.crawledFirehose);
    outbound = await t.collect(t.topics.outboundFirehose);
    rejected = await t.collect(t.topics.rejected);
    redis = clusterRedis();
  });
  afterAll(async () => {
    redis?.disconnect();
    await t?.stop();
  });

  async function site(options: SiteOptions): Promise<FixtureSite> {
    const s = await startSite(options);
    onTestFinished(() => s.close());
    return s;
  }

  /** Worker processes loading the plugins; returns once they registered their spider types in Redis. */
  async function workers(count: number, overrides: Partial<Variables>, expectTypes: string[]) {
    const started = Array.from({ length: count }, () =>
      startCrawlerProcess(t.vars, { CRAWLER_PLUGINS: PLUGINS, CRAWLER_CONCURRENCY: 4, ...overrides }),
    );
    onTestFinished(async () => {
      await Promise.all(started.map((w) => w.stop()));
    });
    const store = redisSpiderTypeStore(redis, t.vars.REDIS_KEY_PREFIX);
    await waitUntil(
      `the workers to register ${expectTypes.join(', ')}`,
      async () => {
        const types = await store.registered();
        return expectTypes.every((type) => types.has(type));
      },
      30_000,
    );
    return started;
  }

  const pagesOf = (crawlid: string) => crawlPages(pages, crawlid);

  test('the JSON-LD example plugin puts every product of the catalog in data on the firehose', async () => {
    const s = await site({ pages: 10, hosts: ['shop-a.test'] });
    await workers(2, { CRAWLER_HOST_MAP: s.hostMap }, ['products', 'catalog', 'product-page', 'throwing']);
    const url = `http://shop-a.test:${s.port}/catalog`;
    await t.feed([{ url, appid: APPID, crawlid: 'jsonld', spiderid: 'products', maxdepth: 1 }]);
    await completeNotice(outbound, 'jsonld', 60_000);
    const got = await waitUntil('every product page', () => {
      const ps = pagesOf('jsonld').filter((p) => String(p.url).includes('/products/'));
      return ps.length >= PRODUCTS ? ps : undefined;
    });
    for (const p of got) {
      const n = Number(String(p.url).split('/').pop());
      const { name, sku, price, currency } = productOf(n);
      expect(p).toMatchObject({
        spiderid: 'products',
        success: true,
        data: { products: [{ name, sku, price, currency }] },
      });
    }
    const catalog = pagesOf('jsonld').find((p) => String(p.url).endsWith('/catalog'));
    expect(catalog?.data).toBeUndefined();
  });

  test('a hand-off is crawled by the other spider type, with the attrs the first one gave it', async () => {
    const s = await site({ pages: 10, hosts: ['shop-b.test'] });
    await workers(2, { CRAWLER_HOST_MAP: s.hostMap }, ['catalog', 'product-page']);
    const url = `http://shop-b.test:${s.port}/catalog`;
    await t.feed([{ url, appid: APPID, crawlid: 'handoff', spiderid: 'catalog', maxdepth: 1, attrs: { run: 7 } }]);
    const details = await waitUntil(
      'every product page from product-page',
      () => {
        const ps = pagesOf('handoff').filter((p) => p.spiderid === 'product-page');
        return ps.length >= PRODUCTS ? ps : undefined;
      },
      60_000,
    );
    expect(details).toHaveLength(PRODUCTS);
    for (const p of details) {
      const n = Number(String(p.url).split('/').pop());
      expect(p).toMatchObject({
        success: true,
        url: `http://shop-b.test:${s.port}/products/${n}`,
        attrs: { run: 7, listed_on: url },
        data: { name: productOf(n).name, listed_on: url },
      });
    }
    expect(
      pagesOf('handoff')
        .filter((p) => p.spiderid === 'catalog')
        .map((p) => p.url),
    ).toEqual([url]);
    // Each spider type's part of the crawl completes on its own.
    const notices = await waitUntil('both complete notices', () => {
      const n = outbound.messages.filter((m) => m.action === 'complete' && m.crawlid === 'handoff');
      return n.length >= 2 ? n : undefined;
    });
    expect(notices.map((n) => n.spiderid).sort()).toEqual(['catalog', 'product-page']);
  });

  test('a plugin that throws gives success:false pages with its error, and the crawl completes', async () => {
    const s = await site({ pages: 30, links: 4, hosts: ['throw.test'] });
    await workers(1, { CRAWLER_HOST_MAP: s.hostMap }, ['throwing']);
    const expected = s.reachable(0, 1);
    await t.feed([{ url: s.url(0), appid: APPID, crawlid: 'throws', spiderid: 'throwing', maxdepth: 1 }]);
    const notice = await completeNotice(outbound, 'throws', 60_000);
    const got = await waitUntil('every page of the crawl', () => {
      const ps = pagesOf('throws');
      return ps.length >= expected.size ? ps : undefined;
    });
    const odd = [...expected].filter((n) => n % 2 === 1);
    expect(odd.length).toBeGreaterThan(0);
    for (const p of got) {
      const n = Number(String(p.url).split('/').pop());
      if (n % 2 === 1) {
        expect(p).toMatchObject({
          success: false,
          exception: `the page could not be processed: Error: refusing page ${n}`,
        });
      } else expect(p.success).toBe(true);
    }
    expect(notice).toMatchObject({ total_pages: expected.size - odd.length, total_failed: odd.length });
  });

  test('the sitemap spider finds every URL of a sitemap index, plain and gzip, and hands them to link', async () => {
    const s = await site({ pages: 20, hosts: ['map.test'] });
    await workers(2, { CRAWLER_HOST_MAP: s.hostMap }, ['sitemap']);
    await t.feed([{ url: `http://map.test:${s.port}/`, appid: APPID, crawlid: 'sitemap', spiderid: 'sitemap' }]);
    const listed = sitemapPages(s.pages).map((n) => s.url(n));
    const linkPages = await waitUntil(
      'every page of the sitemaps',
      () => {
        const ps = pagesOf('sitemap').filter((p) => p.spiderid === 'link');
        return ps.length >= listed.length ? ps : undefined;
      },
      60_000,
    );
    expect(linkPages.map((p) => p.url).sort()).toEqual([...listed].sort());
    const maps = pagesOf('sitemap').filter((p) => p.spiderid === 'sitemap');
    const entries = maps.flatMap((p) =>
      (p.data as { sitemap?: { kind: string; entries?: { loc: string; lastmod?: string }[] } })?.sitemap?.kind ===
      'urlset'
        ? (p.data as { sitemap: { entries: { loc: string; lastmod?: string }[] } }).sitemap.entries
        : [],
    );
    expect(entries.sort((a, b) => a.loc.localeCompare(b.loc))).toEqual(
      sitemapPages(s.pages)
        .map((n) => ({ loc: s.url(n), lastmod: sitemapLastmod(n) }))
        .sort((a, b) => a.loc.localeCompare(b.loc)),
    );
    expect(maps.map((p) => new URL(String(p.url)).pathname).sort()).toEqual([
      '/',
      '/robots.txt',
      '/sitemap-a.xml',
      '/sitemap-b.xml.gz',
      '/sitemap_index.xml',
    ]);
    // The link pages follow nothing further: maxdepth 0 (the default) applies to the spider they were handed to.
    await completeNotice(outbound, 'sitemap', 30_000);
  });

  test('a crawl request for a spider type no crawler ever registered is rejected, naming the known types', async () => {
    await t.feed([{ url: 'http://nowhere.test/', appid: APPID, crawlid: 'unknown', spiderid: 'never-registered' }]);
    const r = await rejected.waitFor((m) => String(m.raw).includes('never-registered'), 'the rejection');
    expect(r).toMatchObject({ error: 'unknown_spider', details: [{ path: '/spiderid' }] });
    expect(String((r.details as { message: string }[])[0]?.message)).toMatch(/link, wandering, sitemap/);
    // The rejection calls for a crawler task (lib/monitor/fleet-wake.ts): the kafka-monitor recorded it in Redis.
    expect(Number(await redis.get(fleetWakeKey(t.vars.REDIS_KEY_PREFIX)))).toBeGreaterThan(0);
  });

  test('a broken plugin stops the worker at start with the module’s name and the reason, exit code 2', async () => {
    const w = startCrawlerProcess(t.vars, { CRAWLER_PLUGINS: 'test/fixtures/plugins/top-level-throw.ts' });
    onTestFinished(async () => {
      await w.stop('SIGKILL');
    });
    const exit = await w.exited;
    expect(exit.code).toBe(2);
    expect(w.output()).toContain(
      'CRAWLER_PLUGINS: test/fixtures/plugins/top-level-throw.ts: cannot be loaded: Error: this plugin needs SHOP_API_KEY',
    );
  });
});
