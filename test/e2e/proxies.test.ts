/**
 * A real crawl through a real forward proxy: crawler worker processes (functions/crawler/main.ts) with CRAWLER_PROXIES
 * naming an authenticated proxy-chain `Server` (test/helpers/forward-proxy.ts), private networks refused and only the
 * fixture site's host names trusted, so every page and robots.txt reach the site through the proxy, and a private
 * target is refused before the proxy sees it.
 */
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { redisStatsStore } from '../../lib/monitor/stores.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { type Collector, completeNotice, crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import { type ForwardProxy, startForwardProxy } from '../helpers/forward-proxy.ts';
import { clusterRedis, waitUntil } from '../helpers/services.ts';

const CREDENTIALS = { username: 'crawler', password: 'e2e-pr0xy-pw' };

describe('crawling through an authenticated forward proxy', () => {
  let site: FixtureSite;
  let proxy: ForwardProxy;
  let t: E2eCluster;
  let pages: Collector;
  let outbound: Collector;

  beforeAll(async () => {
    site = await startSite({ pages: 60, links: 4 });
    proxy = await startForwardProxy({
      credentials: CREDENTIALS,
      hostMap: Object.fromEntries(site.hosts.map((h) => [h, '127.0.0.1'])),
    });
    t = await startE2eCluster(
      {
        RETRY_BASE_DELAY_MS: 100,
        CRAWLER_CONCURRENCY: 8,
        ALLOW_PRIVATE_NETWORKS: false,
        CRAWLER_TRUSTED_HOSTS: site.hosts.join(','),
        CRAWLER_PROXIES: `${proxy.url()}#e2e-proxy`,
      },
      { site },
    );
    ({ pages, outbound } = t);
  });
  afterAll(async () => {
    await t?.stop();
    await proxy?.kill();
    await site?.close();
  });

  test('every page of the crawl is fetched through the proxy', async () => {
    await t.feed([{ url: site.url(0), appid: 'e2e', crawlid: 'proxied', maxdepth: 2 }]);
    const done = await completeNotice(outbound, 'proxied', 60_000);
    const expected = [...site.reachable(0, 2)].map((n) => site.url(n)).sort();
    await waitUntil('every page', () => crawlPages(pages, 'proxied').length >= expected.length, 15_000);
    const got = crawlPages(pages, 'proxied');
    expect(got.map((m) => m.url as string).sort()).toEqual(expected);
    expect(got.every((m) => m.success === true && m.status_code === 200)).toBe(true);
    expect(done).toMatchObject({ total_pages: expected.length, total_failed: 0 });
    // The crawler reached every host of the site only through tunnels the proxy opened for it.
    const crawledHosts = new Set(expected.map((u) => new URL(u).hostname));
    expect(new Set(proxy.targets)).toEqual(crawledHosts);
    expect(proxy.refused()).toBe(0);
    expect(JSON.stringify(got)).not.toContain(CREDENTIALS.password);
    // The fleet counts the requests per proxy, by its name: pages and robots.txt, each answered.
    const redis = clusterRedis();
    onTestFinished(() => redis.disconnect());
    const stats = redisStatsStore(redis, t.vars.REDIS_KEY_PREFIX);
    const ok = 'proxy:e2e-proxy:ok';
    const counted = await waitUntil(
      'the proxy counters',
      async () => {
        const n = (await stats.read([ok], Date.now()))[ok]?.lifetime ?? 0;
        return n >= expected.length + crawledHosts.size ? n : undefined;
      },
      15_000,
    );
    expect(counted).toBe(expected.length + crawledHosts.size);
    expect(await stats.names('proxy:')).toEqual([ok]);
  });

  test('a private target is refused before the proxy sees it, with private networks off', async () => {
    const before = proxy.targets.length;
    const port = new URL(site.url(0)).port;
    await t.feed([{ url: `http://127.0.0.1:${port}/p/0`, appid: 'e2e', crawlid: 'private', maxdepth: 0 }]);
    await completeNotice(outbound, 'private', 60_000);
    await waitUntil('the failed page', () => crawlPages(pages, 'private').length >= 1, 15_000);
    const [page] = crawlPages(pages, 'private');
    expect(page).toMatchObject({ success: false });
    expect(String(page?.exception)).toMatch(/non-public address 127\.0\.0\.1/);
    expect(proxy.targets.length).toBe(before);
  });
});

describe('crawling through a proxy with a wrong password', () => {
  let site: FixtureSite;
  let proxy: ForwardProxy;
  let t: E2eCluster;

  beforeAll(async () => {
    site = await startSite({ pages: 12, links: 2 });
    proxy = await startForwardProxy({
      credentials: CREDENTIALS,
      hostMap: Object.fromEntries(site.hosts.map((h) => [h, '127.0.0.1'])),
    });
    t = await startE2eCluster(
      {
        RETRY_BASE_DELAY_MS: 1000,
        CRAWLER_CONCURRENCY: 8,
        CRAWLER_PROXIES: proxy.url({ username: 'crawler', password: 'wr0ng-e2e-pw' }),
      },
      { site },
    );
  });
  afterAll(async () => {
    await t?.stop();
    await proxy?.kill();
    await site?.close();
  });

  test('every page fails proxy_auth at once, never retried, the password in no message', async () => {
    const seeds = [0, 1, 2, 3, 4, 5].map((n) => site.url(n));
    const started = Date.now();
    await t.feed(seeds.map((url, i) => ({ url, appid: 'e2e', crawlid: `badpw${i}`, maxdepth: 1 })));
    await waitUntil('a page per seed', () => crawlPages(t.pages, 'badpw0').length >= 1, 30_000);
    for (let i = 0; i < seeds.length; i++) await completeNotice(t.outbound, `badpw${i}`, 30_000);
    // Retried, the first retry alone would wait RETRY_BASE_DELAY_MS: every crawl is over well before that adds up.
    expect(Date.now() - started).toBeLessThan(8000);
    const failed = seeds.flatMap((_, i) => crawlPages(t.pages, `badpw${i}`));
    expect(failed).toHaveLength(seeds.length);
    for (const page of failed) {
      expect(page).toMatchObject({ success: false, status_code: null });
      expect(page.exception).toBe(`proxy_auth: proxy ${proxy.name} refused the credentials (407)`);
    }
    expect(JSON.stringify(failed)).not.toContain('wr0ng-e2e-pw');
    expect(proxy.targets).toEqual([]);
    // At least robots.txt of each host was asked for (pages of one origin share its robots.txt lookup).
    expect(proxy.refused()).toBeGreaterThanOrEqual(site.hosts.length);
    const redis = clusterRedis();
    onTestFinished(() => redis.disconnect());
    const stats = redisStatsStore(redis, t.vars.REDIS_KEY_PREFIX);
    const auth = `proxy:${proxy.name}:proxy_auth`;
    await waitUntil('the proxy_auth counter', async () => (await stats.names('proxy:')).includes(auth), 15_000);
    expect(await stats.names('proxy:')).toEqual([auth]);
  });
});
