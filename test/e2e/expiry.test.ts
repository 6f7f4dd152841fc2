/**
 * `expires` end to end (issue 34): requests fed to Kafka, the real monitors, a crawler worker PROCESS fetching a
 * fixture site, and the expiry function on a slow timer (10 s, as a stand-in for AWS's minute). No page of a crawl
 * is fetched once its `expires` has passed, because the lease checks it (lib/redis/scripts/lease.lua); the timer
 * only sends the `expired` notice. Before, pages were fetched until the timer stopped the crawl (6.5 s late).
 */
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { startSite } from '../../localstack/site/site.ts';
import { type Collector, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { startCrawlerProcess } from '../helpers/crawler-process.ts';
import { waitUntil } from '../helpers/services.ts';

describe('crawl expiry with a crawler worker process', () => {
  let t: TestCluster;
  let outbound: Collector;

  beforeAll(async () => {
    t = await startTestCluster(
      { ALLOW_PRIVATE_NETWORKS: true, QUEUE_MODERATED: true, LOG_LEVEL: 'WARN' },
      { crawlerWorkers: 0, scheduleEveryMs: 10_000 },
    );
    outbound = await t.collect(t.topics.outboundFirehose);
  });
  afterAll(async () => {
    await t?.stop();
  });

  test('no page of a crawl is fetched after its expires has passed; the expired notice counts what was left', async () => {
    const hits: { path: string; atMs: number }[] = [];
    const s = await startSite({
      pages: 100,
      links: 4,
      hosts: ['expires.test'],
      onRequest: (path, _host, atMs) => hits.push({ path, atMs }),
    });
    onTestFinished(() => s.close());
    // 4 fetches a second: the crawl (65 pages) would take 16 s; it expires after 7 to 8.
    const worker = startCrawlerProcess(t.vars, {
      CRAWLER_HOST_MAP: s.hostMap,
      QUEUE_HITS: 4,
      QUEUE_WINDOW: 1,
      CRAWLER_CONCURRENCY: 4,
    });
    onTestFinished(async () => {
      await worker.stop();
    });
    // The consumers of a fresh cluster may take seconds to join their groups on a loaded machine: a crawl fed then
    // could arrive already expired. One page of a warm-up crawl first shows the pipeline is running.
    await t.feed([{ url: `http://expires.test:${s.port}/latin1`, appid: 'expiry', crawlid: 'warm-up' }]);
    await outbound.waitFor((m) => m.action === 'complete' && m.crawlid === 'warm-up', 'the warm-up crawl', 60_000);
    const expires = Math.floor(Date.now() / 1000) + 8;
    await t.feed([{ url: s.url(0), appid: 'expiry', crawlid: 'expires', maxdepth: 3, expires }]);
    const pageHits = () => hits.filter((h) => h.path.startsWith('/p/'));
    // Under way well before it expires (at 4 a second, about 20 of its 65 pages are fetched in time).
    await waitUntil('the crawl to be under way', () => pageHits().length >= 3, 60_000);
    expect(Date.now()).toBeLessThan(expires * 1000);
    const notice = await outbound.waitFor(
      (m) => m.action === 'expired' && m.crawlid === 'expires',
      'the expired notice',
      60_000,
    );
    expect(notice).toMatchObject({ appid: 'expiry', spiderid: 'link', total_expired: expect.any(Number) });
    expect(notice.total_expired).toBeGreaterThan(0);
    const fetched = pageHits();
    expect(fetched.length).toBeLessThan(s.reachable(0, 3).size);
    // A lease taken just before the second of `expires` reaches the site a little later (an event-loop turn or two
    // on a loaded machine); none is taken after it, however late the timer's notice comes.
    const late = fetched.filter((h) => h.atMs >= expires * 1000 + 1000);
    expect(late, JSON.stringify({ expires, late })).toEqual([]);
  });
});
