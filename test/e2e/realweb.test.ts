/**
 * A crawler worker process at its DEFAULT settings (adaptive concurrency, issue 32) on the simulated internet
 * (localstack/site/internet.ts: hosts on their own loopback addresses, ~300 ms per response): it grows past the
 * fetches at once it starts with, as far as the sites keep it busy, and every page it fetches arrives.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { INITIAL_SLOTS } from '../../lib/crawl/crawler/concurrency.ts';
import { liveLoads } from '../../lib/monitor/fleet-metrics.ts';
import { type Internet, startInternet } from '../../localstack/site/internet-server.ts';
import { type Collector, completeNotice, crawlPages, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { waitUntil } from '../helpers/services.ts';

describe('adaptive concurrency on the simulated internet', () => {
  let net: Internet;
  let t: TestCluster;
  let pages: Collector;
  let outbound: Collector;
  let worker: CrawlerProcess;

  beforeAll(async () => {
    // Every host answers (no dead or drip host, no errors): the crawl's size is known, the test is about how many
    // fetches run at once.
    net = await startInternet({
      hosts: 30,
      pages: 1500,
      deadShare: 0,
      dripShare: 0,
      e500Share: 0,
      e503Share: 0,
      e429Share: 0,
      resetShare: 0,
      bigShare: 0,
      crawlDelayShare: 0,
    });
    t = await startTestCluster(
      { ALLOW_PRIVATE_NETWORKS: true, QUEUE_HITS: 1000, QUEUE_WINDOW: 1, LOG_LEVEL: 'WARN' },
      { crawlerWorkers: 0 },
    );
    pages = await t.collect(t.topics.crawledFirehose);
    outbound = await t.collect(t.topics.outboundFirehose);
    // Nothing but the host map: CRAWLER_CONCURRENCY is left at its default (0, adaptive).
    worker = startCrawlerProcess(t.vars, { CRAWLER_HOST_MAP: net.hostMap });
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    await net?.close();
  });

  test('a worker at default settings grows past the fetches at once it starts with (INITIAL_SLOTS), and loses no page', async () => {
    // One seed per host, two hops: hundreds of requests due at once on 30 sites that answer in ~300 ms each.
    const seeds = net.hosts.map((_, k) => k);
    await t.feed(seeds.map((n) => ({ url: net.url(n), appid: 'e2e', crawlid: 'web', maxdepth: 2 })));
    expect(net.reachable(seeds, 2, true).size).toBeGreaterThan(500);
    await waitUntil('500 pages', () => crawlPages(pages, 'web').length >= 500, 120_000);
    expect(net.inFlight.peak, worker.output()).toBeGreaterThan(INITIAL_SLOTS);
    // Its heartbeat (every 10 s) reports what it sustains, through Redis, to what the stats function reads to size
    // the fleet (docs/design.md §8 "Fleet sizing").
    const [load] = await waitUntil(
      'a load report with pages',
      async () => {
        const loads = await liveLoads(t.deps.ctx, Date.now());
        return loads.length === 1 && (loads[0]?.pagesPerSec ?? 0) > 0 ? loads : undefined;
      },
      30_000,
    );
    expect(load?.slotsInUse).toBeGreaterThan(0);
    expect(load?.slotLimit).toBeGreaterThanOrEqual(8);
    expect(load?.slotLimit).toBeLessThanOrEqual(256);
    // A page's depth is the path it was first found on (the dupefilter keeps the first sighting, as Scrapy
    // Cluster's does): at these latencies a page two hops away can be found first at depth 2 via another site and
    // not followed, so which pages a maxdepth crawl holds depends on timing. What does not: everything the crawl
    // counted arrives, every link of a page below maxdepth was crawled, links robots.txt disallows arrive as
    // success:false pages, and nothing outside two hops is fetched.
    const done = await completeNotice(outbound, 'web', 120_000);
    const total = (done.total_pages as number) + (done.total_failed as number);
    await waitUntil('every counted page', () => new Set(crawlPages(pages, 'web').map((m) => m.url)).size >= total);
    const got = crawlPages(pages, 'web');
    const numberOf = (url: unknown) => Number(/\/(\d+)$/.exec(url as string)?.[1]);
    const fetched = new Set(got.filter((m) => m.success === true).map((m) => numberOf(m.url)));
    const within = net.reachable(seeds, 2, true);
    for (const n of fetched) expect(within.has(n), net.url(n)).toBe(true);
    for (const n of net.reachable(seeds, 1, true)) expect(fetched.has(n), net.url(n)).toBe(true);
    const crawled = new Set(got.map((m) => numberOf(m.url)));
    for (const m of got.filter((p) => p.success === true && (p.depth as number) < 2))
      for (const c of net.linksOf(numberOf(m.url))) expect(crawled.has(c), `${m.url} -> ${net.url(c)}`).toBe(true);
    for (const m of got.filter((p) => p.success !== true)) {
      expect(m.exception).toMatch(/robots\.txt disallows/);
      expect(net.allowed(numberOf(m.url))).toBe(false);
    }
  });
});
