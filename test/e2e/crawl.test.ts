/**
 * Real crawls end to end: requests fed to Kafka, the kafka-monitor handler, the Redis frontier, crawler
 * worker PROCESSES (functions/crawler/main.ts, as on Fargate) fetching a fixture site on loopback over
 * several host names, pages read back from `<p>.crawled_firehose`.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { partitionKeys } from '../../lib/redis/keys.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { type Collector, completeNotice, crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import { CONTRACT_PAGE_FIELDS } from '../helpers/contract.ts';
import { clusterRedis, waitUntil } from '../helpers/services.ts';

describe('crawling a fixture site with crawler worker processes', () => {
  let site: FixtureSite;
  let t: E2eCluster;
  let pages: Collector;
  let outbound: Collector;

  beforeAll(async () => {
    site = await startSite({ pages: 120, links: 4 });
    t = await startE2eCluster({ RETRY_BASE_DELAY_MS: 100, CRAWLER_CONCURRENCY: 8 }, { site, crawlerWorkers: 2 });
    ({ pages, outbound } = t);
  });
  afterAll(async () => {
    await t?.stop();
    await site?.close();
  });

  const pagesOf = (crawlid: string) => crawlPages(pages, crawlid);
  const complete = (crawlid: string) => completeNotice(outbound, crawlid, 60_000);

  test.each([0, 1, 2])('maxdepth %i crawls exactly the pages within that many hops, each once', async (maxdepth) => {
    const crawlid = `depth${maxdepth}`;
    await t.feed([{ url: site.url(0), appid: 'e2e', crawlid, maxdepth }]);
    const done = await complete(crawlid);
    const expected = [...site.reachable(0, maxdepth)].map((n) => site.url(n)).sort();
    // The notice and the pages travel on different topics: the last pages may arrive just after it.
    await waitUntil('every page', () => pagesOf(crawlid).length >= expected.length, 15_000);
    const got = pagesOf(crawlid).map((m) => m.url as string);
    expect([...got].sort()).toEqual(expected);
    expect(done).toMatchObject({ total_pages: expected.length, total_failed: 0, appid: 'e2e', spiderid: 'link' });
  });

  test('every page message has the contract fields, the real reason phrase, links and depth', async () => {
    const page = pagesOf('depth1').find((m) => m.url === site.url(0));
    expect(page).toBeDefined();
    for (const f of CONTRACT_PAGE_FIELDS) expect(page).toHaveProperty(f);
    expect(page).toMatchObject({ status_code: 200, status_msg: 'OK', success: true, encoding: 'utf-8', depth: 0 });
    // As Scrapy Cluster sends them: Title-Case header names, attrs None when the request had none.
    expect(page?.response_headers).toHaveProperty('Content-Type');
    expect(page?.request_headers).toHaveProperty('User-Agent');
    expect(page?.attrs).toBeNull();
    expect(((page?.links ?? []) as { url: string }[]).map((l) => l.url)).toEqual(
      expect.arrayContaining(site.linksOf(0).map((n) => site.url(n))),
    );
    expect(page?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
  });

  test('allowed_domains keeps the crawl on the allowed host', async () => {
    const host = site.hosts[0] as string;
    await t.feed([{ url: site.url(0), appid: 'e2e', crawlid: 'allowed', maxdepth: 2, allowed_domains: [host] }]);
    await complete('allowed');
    const expected = [...site.reachable(0, 2, (h) => h === host)].map((n) => site.url(n)).sort();
    await waitUntil('every page', () => pagesOf('allowed').length >= expected.length, 15_000);
    expect(
      pagesOf('allowed')
        .map((m) => m.url as string)
        .sort(),
    ).toEqual(expected);
  });

  test('domain_max_pages=4 crawls exactly 4 pages of a domain', async () => {
    await t.feed([{ url: site.url(0), appid: 'e2e', crawlid: 'cap', maxdepth: 3, domain_max_pages: 4 }]);
    const done = await complete('cap');
    await waitUntil('every page of the notice', () => pagesOf('cap').length >= (done.total_pages as number), 15_000);
    const perHost = new Map<string, number>();
    for (const m of pagesOf('cap')) {
      const host = new URL(m.url as string).hostname;
      perHost.set(host, (perHost.get(host) ?? 0) + 1);
    }
    expect(perHost.get(site.hosts[0] as string)).toBe(4);
    for (const n of perHost.values()) expect(n).toBeLessThanOrEqual(4);
  });

  test('robots.txt disallow and exhausted retries each produce one success:false page', async () => {
    const base = `http://${site.hosts[1]}:${site.port}`;
    await t.feed([
      { url: `${base}/private/secret`, appid: 'e2e', crawlid: 'robots' },
      { url: `${base}/always-500`, appid: 'e2e', crawlid: 'broken' },
      { url: `${base}/flaky/2`, appid: 'e2e', crawlid: 'flaky' },
    ]);
    await Promise.all([complete('robots'), complete('broken'), complete('flaky')]);
    expect(pagesOf('robots')).toHaveLength(1);
    expect(pagesOf('robots')[0]).toMatchObject({ success: false, exception: expect.stringMatching(/robots/) });
    expect(pagesOf('broken')).toHaveLength(1);
    expect(pagesOf('broken')[0]).toMatchObject({ success: false, status_code: 500, retry_times: 3 });
    expect(site.hits.get('/always-500')).toBe(4);
    expect(pagesOf('flaky')).toHaveLength(1);
    expect(pagesOf('flaky')[0]).toMatchObject({ success: true, status_code: 200, retry_times: 2 });
  });

  test('gzip, ISO-8859-1 and binary responses come through decoded', async () => {
    const base = `http://${site.hosts[2]}:${site.port}`;
    await t.feed([
      { url: `${base}/gzip`, appid: 'e2e', crawlid: 'enc' },
      { url: `${base}/latin1`, appid: 'e2e', crawlid: 'enc' },
      { url: `${base}/image.png`, appid: 'e2e', crawlid: 'enc' },
    ]);
    await waitUntil('three pages', () => pagesOf('enc').length >= 3, 30_000);
    const byPath = (p: string) => pagesOf('enc').find((m) => (m.url as string).endsWith(p));
    expect(byPath('/gzip')?.body).toContain('gzip ok');
    expect(byPath('/latin1')).toMatchObject({ encoding: 'windows-1252' });
    expect(byPath('/latin1')?.body).toContain('café naïve');
    expect(byPath('/image.png')).toMatchObject({ encoding: 'latin-1', body_encoding: 'base64', success: true });
    // Scrapy Cluster's `kafkadump.py dump -d` runs `base64.b64decode(item['body']).decode(item['encoding'])` on each
    // item (it stopped at the first binary page while encoding was null): run that very line in Python.
    const decoded = execFileSync(
      'python3',
      [
        '-c',
        "import base64,json,sys; i=json.load(sys.stdin); print(base64.b64decode(i['body']).decode(i['encoding']).encode('latin-1').hex())",
      ],
      { input: JSON.stringify(byPath('/image.png')), encoding: 'utf8' },
    );
    expect(decoded.trim()).toBe('89504e470d0a1a0a00000000');
  });

  test('a crawler worker killed with SIGKILL mid-crawl loses nothing: after reclaim every page arrives', async () => {
    const [victim] = t.cluster.workers();
    // The same host names on a site that answers in 400 ms: the crawl (4 generations) is still under way when the
    // test sees its first pages, however fast the workers are.
    const slow = await startSite({ pages: 120, links: 4, latencyMs: 400 });
    onTestFinished(() => slow.close());
    await t.feed([{ url: slow.url(3), appid: 'e2e', crawlid: 'kill', maxdepth: 3 }]);
    // A worker leases at most its CRAWLER_CONCURRENCY (8): more leases than that means both workers hold some, so
    // the victim surely dies holding leases (an idle worker asks less and less often, up to QUIET_MAX_MS, so a fixed
    // wait could find it between turns, or the crawl already done).
    const redis = clusterRedis();
    onTestFinished(() => redis.disconnect());
    const jumping = new Frontier(redis, { ...frontierOptions(t.vars), redisClock: false });
    const leaseKeys = jumping.partitionsOf('link').map((p) => partitionKeys(p).leases);
    const held = async () => {
      let n = 0;
      for (const key of leaseKeys) n += await redis.zcard(key);
      return n;
    };
    await waitUntil('both workers to hold leases', async () => (await held()) > 8, 30_000);
    process.kill(victim as number, 'SIGKILL');
    // Leases of the dead worker expire after LEASE_TIMEOUT; the reclaim timer returns them. The test jumps ahead
    // in time, so it reclaims through a frontier on its own clock (production ones use Redis's TIME).
    expect(await jumping.reclaim('link', Date.now() + 10 * 60_000)).toBeGreaterThan(0);
    const done = await complete('kill');
    // A page's depth is the path it was first found on (the dupefilter keeps the first sighting, as Scrapy Cluster's
    // does). The killed worker's pages come back late, so a page may be found first on a longer path and, at
    // maxdepth, not followed: which pages the crawl holds depends on timing. "Loses nothing" is what does not: every
    // page the crawl counted arrives, and every link of an arrived page within maxdepth was crawled.
    const total = done.total_pages as number;
    await waitUntil('every page', () => new Set(pagesOf('kill').map((m) => m.url)).size >= total, 15_000);
    const arrived = pagesOf('kill');
    const urls = new Set(arrived.map((m) => m.url as string));
    expect(urls.size).toBe(total);
    expect(done).toMatchObject({ total_failed: 0 });
    const within = new Set([...slow.reachable(3, 3)].map((n) => slow.url(n)));
    for (const url of urls) expect(within.has(url), url).toBe(true);
    for (const m of arrived) {
      if ((m.depth as number) >= 3) continue;
      const n = Number(/\/p\/(\d+)$/.exec(m.url as string)?.[1]);
      for (const c of slow.linksOf(n)) expect(urls.has(slow.url(c)), `${m.url} -> ${slow.url(c)}`).toBe(true);
    }
    // At least the pages no late worker can push past maxdepth: the seed's own links and theirs.
    for (const n of slow.reachable(3, 2)) expect(urls.has(slow.url(n)), slow.url(n)).toBe(true);
  });
});
