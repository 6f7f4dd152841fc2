/**
 * A real crawl through a real forward proxy: crawler worker processes (functions/crawler/main.ts) with CRAWLER_PROXIES
 * naming an authenticated proxy-chain `Server` (test/helpers/forward-proxy.ts), private networks refused and only the
 * fixture site's host names trusted, so every page and robots.txt reach the site through the proxy, and a private
 * target is refused before the proxy sees it. Crawls choose a group of CRAWLER_PROXY_GROUPS with `attrs.proxy`, and a
 * group no crawler has is refused by the kafka-monitor. No password of any proxy reaches a log line, a message or a
 * stats reply.
 */
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { redisProxyGroupStore } from '../../lib/monitor/proxy-groups.ts';
import { redisStatsStore } from '../../lib/monitor/stores.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { type Collector, completeNotice, crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';
import { type ForwardProxy, startForwardProxy } from '../helpers/forward-proxy.ts';
import { clusterRedis, waitUntil } from '../helpers/services.ts';
import { type SocksProxy, startSocksProxy } from '../helpers/socks-proxy.ts';

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

describe('crawls choosing their proxy group with attrs.proxy', () => {
  let site: FixtureSite;
  let residential: ForwardProxy;
  let datacenter: ForwardProxy;
  let t: E2eCluster;

  beforeAll(async () => {
    site = await startSite({ pages: 60, links: 4 });
    const hostMap = Object.fromEntries(site.hosts.map((h) => [h, '127.0.0.1']));
    residential = await startForwardProxy({ credentials: CREDENTIALS, hostMap });
    datacenter = await startForwardProxy({ hostMap });
    t = await startE2eCluster(
      {
        RETRY_BASE_DELAY_MS: 100,
        CRAWLER_CONCURRENCY: 8,
        ALLOW_PRIVATE_NETWORKS: false,
        CRAWLER_TRUSTED_HOSTS: site.hosts.join(','),
        CRAWLER_PROXY_GROUPS: `residential=${residential.url()}#res-1; datacenter=${datacenter.url()}#dc-1`,
      },
      { site },
    );
    // The kafka-monitor accepts a group once a crawler registered it (lib/monitor/proxy-groups.ts).
    const redis = clusterRedis();
    try {
      const groups = redisProxyGroupStore(redis, t.vars.REDIS_KEY_PREFIX);
      await waitUntil('the crawler to register its proxy groups', async () => (await groups.registered()).size === 2);
    } finally {
      redis.disconnect();
    }
  });
  afterAll(async () => {
    await t?.stop();
    await residential?.kill();
    await datacenter?.kill();
    await site?.close();
  });

  test('each crawl goes through its group only, and each proxy counts its requests', async () => {
    const rejected = await t.collect(t.topics.rejected);
    // One host per crawl, so each proxy's tunnels and counts are its crawl's alone (robots.txt included).
    const [resHost, dcHost] = [new URL(site.url(0)).hostname, new URL(site.url(1)).hostname];
    await t.feed([
      {
        url: site.url(0),
        appid: 'e2e',
        crawlid: 'via-res',
        maxdepth: 2,
        allowed_domains: [resHost],
        attrs: { proxy: 'residential' },
      },
      {
        url: site.url(1),
        appid: 'e2e',
        crawlid: 'via-dc',
        maxdepth: 2,
        allowed_domains: [dcHost],
        attrs: { proxy: 'datacenter' },
      },
      { url: site.url(2), appid: 'e2e', crawlid: 'via-mobile', maxdepth: 0, attrs: { proxy: 'mobile' } },
    ]);
    const refusal = await rejected.waitFor((m) => m.crawlid === 'via-mobile', 'the unknown group refused');
    expect(refusal).toMatchObject({
      error: 'unknown_proxy_group',
      details: [{ path: '/attrs/proxy', message: expect.stringContaining('not "mobile"') }],
    });
    const expected = {
      'via-res': [...site.reachable(0, 2, (h) => h === resHost)].map((n) => site.url(n)).sort(),
      'via-dc': [...site.reachable(1, 2, (h) => h === dcHost)].map((n) => site.url(n)).sort(),
    };
    for (const [crawlid, urls] of Object.entries(expected)) {
      await completeNotice(t.outbound, crawlid, 60_000);
      await waitUntil(`every page of ${crawlid}`, () => crawlPages(t.pages, crawlid).length >= urls.length, 15_000);
      const got = crawlPages(t.pages, crawlid);
      expect(got.map((m) => m.url as string).sort()).toEqual(urls);
      expect(got.every((m) => m.success === true)).toBe(true);
    }
    expect(crawlPages(t.pages, 'via-mobile')).toEqual([]);
    expect(new Set(residential.targets)).toEqual(new Set([resHost]));
    expect(new Set(datacenter.targets)).toEqual(new Set([dcHost]));
    const redis = clusterRedis();
    onTestFinished(() => redis.disconnect());
    const stats = redisStatsStore(redis, t.vars.REDIS_KEY_PREFIX);
    const counts = async () => {
      const read = await stats.read(['proxy:res-1:ok', 'proxy:dc-1:ok'], Date.now());
      return [read['proxy:res-1:ok']?.lifetime ?? 0, read['proxy:dc-1:ok']?.lifetime ?? 0];
    };
    // Pages plus the one robots.txt of each crawl's host.
    const want = [expected['via-res'].length + 1, expected['via-dc'].length + 1];
    await waitUntil('the proxy counters', async () => (await counts()).join() === want.join(), 15_000);
    expect(await stats.names('proxy:')).toEqual(['proxy:dc-1:ok', 'proxy:res-1:ok']);
  });
});

describe('proxy credentials in no log line, message or reply', () => {
  const PASSWORDS = { good: 'g00d-pr0xy-pw', bad: 'b4d-pr0xy-pw', dead: 'd34d-pr0xy-pw', socks: 's0cks-pr0xy-pw' };
  let site: FixtureSite;
  let proxy: ForwardProxy;
  let dead: ForwardProxy;
  let socks: SocksProxy;
  let t: E2eCluster;
  let worker: CrawlerProcess;
  let log = '';
  const monitorLog = new RecordingLog();

  beforeAll(async () => {
    site = await startSite({ pages: 40, links: 4 });
    const hostMap = Object.fromEntries(site.hosts.map((h) => [h, '127.0.0.1']));
    proxy = await startForwardProxy({ credentials: { username: 'crawler', password: PASSWORDS.good }, hostMap });
    dead = await startForwardProxy({ hostMap });
    await dead.kill();
    socks = await startSocksProxy({ credentials: { username: 'crawler', password: PASSWORDS.socks } });
    t = await startE2eCluster({ RETRY_BASE_DELAY_MS: 100 }, { site, crawlerWorkers: 0, monitorLog });
    // One worker of its own, logging everything, through a working proxy, one refusing its password, a dead one, and
    // a SOCKS5 group.
    worker = startCrawlerProcess(t.vars, {
      LOG_LEVEL: 'DEBUG',
      CRAWLER_CONCURRENCY: 8,
      ALLOW_PRIVATE_NETWORKS: false,
      CRAWLER_TRUSTED_HOSTS: site.hosts.join(','),
      CRAWLER_PROXIES: [
        `${proxy.url()}#good`,
        `${proxy.url({ username: 'crawler', password: PASSWORDS.bad })}#bad`,
        `${dead.url({ username: 'crawler', password: PASSWORDS.dead })}#dead`,
      ].join(','),
      CRAWLER_PROXY_GROUPS: `dc=${socks.url()}#dc-1`,
    });
    const keep = (chunk: Buffer) => {
      log += chunk.toString('utf8');
    };
    worker.child.stdout?.on('data', keep);
    worker.child.stderr?.on('data', keep);
    const redis = clusterRedis();
    try {
      const groups = redisProxyGroupStore(redis, t.vars.REDIS_KEY_PREFIX);
      await waitUntil('the worker to register its proxy group', async () => (await groups.registered()).has('dc'));
    } finally {
      redis.disconnect();
    }
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    await proxy?.kill();
    await socks?.kill();
    await site?.close();
  });

  test('a crawl through working, refusing and dead proxies and a SOCKS5 group leaves no password anywhere', async () => {
    const rejected = await t.collect(t.topics.rejected);
    const port = new URL(site.url(0)).port;
    await t.feed([
      { url: site.url(0), appid: 'e2e', crawlid: 'creds-default', maxdepth: 2 },
      { url: site.url(1), appid: 'e2e', crawlid: 'creds-dc', maxdepth: 1, attrs: { proxy: 'dc' } },
      { url: `http://127.0.0.1:${port}/p/2`, appid: 'e2e', crawlid: 'creds-private', maxdepth: 0 },
      { url: site.url(3), appid: 'e2e', crawlid: 'creds-unknown', attrs: { proxy: 'residential' } },
    ]);
    for (const crawlid of ['creds-default', 'creds-dc', 'creds-private']) await completeNotice(t.outbound, crawlid);
    await rejected.waitFor((m) => m.crawlid === 'creds-unknown', 'the unknown group refused');
    // The worker flushes its counters in the background: the stats request once they are all in Redis.
    const redis = clusterRedis();
    onTestFinished(() => redis.disconnect());
    const counters = redisStatsStore(redis, t.vars.REDIS_KEY_PREFIX);
    const expected = ['proxy:bad:proxy_auth', 'proxy:dc-1:ok', 'proxy:dead:proxy_connect', 'proxy:good:ok'];
    await waitUntil(
      'the proxy counters',
      async () => (await counters.names('proxy:')).sort().join() === expected.join(),
      15_000,
    );
    await t.feed([{ stats: 'crawler', appid: 'e2e', uuid: 'creds-stats' }]);
    const stats = await t.outbound.waitFor((m) => m.uuid === 'creds-stats', 'the crawler stats');
    // The crawl went through the proxies (and the refusing and dead ones were tried), counted by their names.
    const proxies = stats.proxies as Record<string, Record<string, unknown>>;
    expect(Object.keys(proxies).sort()).toEqual(['bad', 'dc-1', 'dead', 'good']);
    expect(Object.keys(proxies.bad ?? {})).toEqual(['proxy_auth']);
    expect(Object.keys(proxies.dead ?? {})).toEqual(['proxy_connect']);
    expect(crawlPages(t.pages, 'creds-default').every((p) => p.success === true)).toBe(true);
    expect(crawlPages(t.pages, 'creds-dc').length).toBeGreaterThan(1);
    expect(socks.targets.length).toBeGreaterThan(0);
    // The worker's log (at DEBUG) names the proxies, never their URLs.
    expect(log).toContain('fetching through proxies');
    expect(log).toContain('"dc-1"');
    const everything = [
      log,
      JSON.stringify(t.pages.messages),
      JSON.stringify(t.outbound.messages),
      JSON.stringify(rejected.messages),
      JSON.stringify(monitorLog.lines),
    ].join('\n');
    for (const password of Object.values(PASSWORDS)) expect(everything).not.toContain(password);
  });
});
