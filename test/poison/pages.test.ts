/**
 * Poison tier, pages (issue "Poison-proof", defects 4, 5, 6): a crawler worker PROCESS crawls a site of
 * hostile pages through the real local cluster, with per-app topics on and the per-app topic missing.
 * Every hostile page yields exactly one page message that fits the message limit, is fetched once (not
 * refetched forever), and a normal crawl fed after them completes.
 */
import { ConfigResourceTypes } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Collector, completeNotice, crawlPages, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { HOSTILE_PATHS, type HostileSite, startHostileSite } from '../helpers/hostile-site.ts';
import { waitUntil } from '../helpers/services.ts';

const APPID = 'poisonpages';
/** MSK's default limit is 1 MB; the local broker allows 10 MB, so ours is set to MSK's. */
const MAX_MESSAGE_BYTES = 1_000_000;
/** MSK's default `max.message.bytes` (1 MiB + 12). */
const MSK_DEFAULT_MAX_BYTES = 1_048_588;

describe('hostile pages through the local cluster', () => {
  let t: TestCluster;
  let site: HostileSite;
  let worker: CrawlerProcess;
  let pages: Collector;
  let outbound: Collector;

  beforeAll(async () => {
    site = await startHostileSite();
    // KAFKA_APPID_TOPICS on, and `<p>.crawled_poisonpages` never created: per-app copies must be best effort.
    t = await startTestCluster({
      ALLOW_PRIVATE_NETWORKS: true,
      QUEUE_HITS: 1000,
      QUEUE_WINDOW: 1,
      KAFKA_APPID_TOPICS: true,
      KAFKA_MAX_MESSAGE_BYTES: MAX_MESSAGE_BYTES,
      RETRY_BASE_DELAY_MS: 100,
      LOG_LEVEL: 'ERROR',
    });
    // The local broker allows 10 MB messages; the firehose gets MSK's default limit (1 MB), so a page message
    // that does not fit is refused here as it would be on AWS.
    const admin = t.kafka.admin();
    await admin.connect();
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: t.topics.crawledFirehose,
          configEntries: [{ name: 'max.message.bytes', value: String(MSK_DEFAULT_MAX_BYTES) }],
        },
      ],
    });
    await admin.disconnect();
    pages = await t.collect(t.topics.crawledFirehose);
    outbound = await t.collect(t.topics.outboundFirehose);
    // A links cap of its own (CRAWLER_MAX_LINKS, 10,000 by default) and its warnings printed: the cap goes from the
    // environment to the page, and the cut is logged.
    worker = startCrawlerProcess(t.vars, {
      CRAWLER_HOST_MAP: site.hostMap,
      CRAWLER_CONCURRENCY: 4,
      CRAWLER_MAX_LINKS: 5000,
      LOG_LEVEL: 'WARN',
    });
    const crawlids = HOSTILE_PATHS.map((path) => `hostile${path.replaceAll('/', '-')}`);
    // At maxdepth 1 each page is spidered (a page at maxdepth is not parsed at all: lib/crawl/spiders/link.ts), and
    // deny_regex keeps its links from being followed, so each crawl is its one hostile page.
    await t.feed(
      HOSTILE_PATHS.map((path, i) => ({
        url: site.url(path),
        appid: APPID,
        crawlid: crawlids[i],
        maxdepth: 1,
        deny_regex: ['.*'],
      })),
    );
    await Promise.all(crawlids.map((c) => completeNotice(outbound, c, 150_000)));
    // The page topic's collector may lag the notices.
    await waitUntil(
      'every hostile page on the firehose',
      () => crawlids.every((c) => crawlPages(pages, c).length > 0),
      30_000,
    );
  }, 240_000);
  afterAll(async () => {
    await worker?.stop();
    await t?.stop();
    await site?.close();
  });

  test.each(HOSTILE_PATHS)('%s yields one page message within the limit and is fetched once', (path) => {
    const got = crawlPages(pages, `hostile${path.replaceAll('/', '-')}`);
    expect(got, worker.output().slice(-2000)).toHaveLength(1);
    expect(Buffer.byteLength(JSON.stringify(got[0]))).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect(site.hits.get(path)).toBe(1);
  });

  test('a page of 500,000 links is published with its first CRAWLER_MAX_LINKS (5,000) links and a cut body, saying why, and logged once', () => {
    const [page] = crawlPages(pages, 'hostile-links-500k');
    expect(page).toMatchObject({ success: true, body_truncated: true });
    expect(page?.links_stopped).toBe('link extraction stopped at 5000 links');
    const links = page?.links as { url: string }[];
    expect(links).toHaveLength(5000);
    expect(links[0]?.url).toBe(site.url('/l/0'));
    // One line per page cut (this one and the page of 100,000 links), with its URL, what it had and the cap.
    const cuts = worker
      .output()
      .split('\n')
      .filter((line) => line.includes('page links cut at CRAWLER_MAX_LINKS') && line.includes(page?.url as string));
    expect(cuts, worker.output().slice(-2000)).toHaveLength(1);
    expect(cuts[0]).toContain('more than 5000');
  });

  test('1,000,000 nested divs and 200,000 spans in a link still give their link', () => {
    for (const crawlid of ['hostile-divs-1m', 'hostile-spans-in-a', 'hostile-nested-80k']) {
      const [page] = crawlPages(pages, crawlid);
      expect(page?.success, crawlid).toBe(true);
      expect(
        ((page?.links ?? []) as { url: string }[]).map((l) => l.url),
        crawlid,
      ).toContain(site.url('/ok'));
    }
  });

  test('after every hostile page, a normal crawl completes', async () => {
    await t.feed([{ url: site.url('/ok'), appid: APPID, crawlid: 'after-pages' }]);
    await completeNotice(outbound, 'after-pages', 60_000);
    expect(crawlPages(pages, 'after-pages')).toMatchObject([{ success: true }]);
  });
});
