/**
 * The Kafka-outage drill (issue 48 item 5): a crawl through the real path (bench/lib/cluster.ts) on a broker of its
 * own (test/helpers/private-kafka.ts), with short leases (`LEASE_TIMEOUT` 5 s) and reclaim every second, so that a
 * lease left to lapse while its page waits on Kafka is reclaimed, with a try counted, many times over. Partway
 * through, the broker is stopped for a while, then started again. Afterwards it counts what the site and a client
 * saw: pages fetched while the broker was down, fetches per page, failed pages, page messages per URL.
 *
 * Used by the `sizes-kafka-outage` scenario at production size and by an e2e test at a small one.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSite } from '../../localstack/site/site.ts';
import { startPrivateKafka } from '../../test/helpers/private-kafka.ts';
import { type BenchCluster, crawlToCompletion, startBenchCluster } from './cluster.ts';
import { readUrls } from './firehose-urls.ts';
import type { ScenarioContext } from './scenario.ts';

export interface KafkaOutageDrillOptions {
  /** Pages of the fixture site (those within maxdepth 3 of page 0 are crawled). */
  pages: number;
  hosts: number;
  workers: number;
  /** The broker stops once this many pages are done. */
  downAfterPages: number;
  /** For this long (s). */
  downForS: number;
  timeoutS: number;
}

export interface KafkaOutageDrillResult {
  pages: number;
  completed: number;
  failed: number;
  pageMessages: number;
  urls: number;
  duplicateShare: number;
  maxFetchesPerPage: number;
  /** Page fetches the site served between the broker's stop and its start. */
  fetchedWhileDown: number;
  /** Page fetches the site served from the stop until the crawlers stopped fetching (the first second without). */
  fetchedBeforeHalt: number;
  /** From the stop to the last of those fetches (ms). */
  haltMs: number;
  downSeconds: number;
  seconds: number;
  timedOut: boolean;
}

/** Runs the drill; see the module note. */
export async function kafkaOutageDrill(
  ctx: ScenarioContext,
  o: KafkaOutageDrillOptions,
): Promise<KafkaOutageDrillResult> {
  const hosts = Array.from({ length: o.hosts }, (_, i) => `outage-${i}.test`);
  const links = Math.max(60, Math.ceil(Math.cbrt(o.pages) * 5));
  const fetchTimes: number[] = [];
  const site = await startSite({
    pages: o.pages,
    links,
    hosts,
    pageBytes: 800,
    onRequest: (path, _host, atMs) => {
      if (path.startsWith('/p/')) fetchTimes.push(atMs);
    },
  });
  const expected = site.reachable(0, 3).size;
  const broker = await startPrivateKafka();
  let c: BenchCluster | undefined;
  try {
    c = await startBenchCluster(ctx, {
      workers: o.workers,
      scheduleEveryMs: 1000,
      overrides: {
        KAFKA_BROKERS: broker.brokers,
        CRAWLER_HOST_MAP: site.hostMap,
        LEASE_TIMEOUT: 5,
        QUEUE_HITS: 50,
        QUEUE_WINDOW: 1,
        QUEUE_MODERATED: false,
        RETRY_BASE_DELAY_MS: 200,
        CRAWLER_CONCURRENCY: 16,
      },
      origins: hosts.map((h) => `http://${h}:${site.port}`),
    });
    const cluster = c;
    const crawlid = `outage${randomBytes(3).toString('hex')}`;
    const crawl = crawlToCompletion(cluster, ctx, { urls: [site.url(0)], maxdepth: 3, crawlid }, o.timeoutS, 'crawl');
    const outage = (async () => {
      for (;;) {
        const info = await cluster.frontier.crawlInfo('link', 'bench', crawlid);
        if ((info?.done ?? 0) + (info?.failed ?? 0) >= o.downAfterPages) break;
        await sleep(100);
      }
      const stoppedAt = Date.now();
      await broker.stop();
      ctx.progress(`  broker stopped; down for ${o.downForS} s`);
      await sleep(o.downForS * 1000);
      const startedAt = Date.now();
      await broker.start();
      ctx.progress('  broker started again');
      return { stoppedAt, startedAt };
    })();
    const progress = await crawl;
    const { stoppedAt, startedAt } = await outage;
    const perUrl = new Map<string, number>();
    await readUrls(cluster, expected, perUrl, 120);
    const messages = [...perUrl.values()].reduce((a, b) => a + b, 0);
    const fetches = [...site.hits.entries()].filter(([path]) => path.startsWith('/p/')).map(([, n]) => n);
    const down = fetchTimes.filter((t) => t >= stoppedAt && t < startedAt).sort((a, b) => a - b);
    // Fetching halted at the first gap of a second in the fetches after the stop.
    let halt = down.length;
    for (let i = 0; i < down.length; i++) {
      const next = down[i + 1] ?? startedAt;
      if (next - (down[i] as number) >= 1000) {
        halt = i + 1;
        break;
      }
    }
    return {
      pages: expected,
      completed: progress.timedOut ? 0 : progress.done + progress.failed,
      failed: progress.failed,
      pageMessages: messages,
      urls: perUrl.size,
      duplicateShare: perUrl.size === 0 ? 0 : (messages - perUrl.size) / perUrl.size,
      maxFetchesPerPage: Math.max(0, ...fetches),
      fetchedWhileDown: down.length,
      fetchedBeforeHalt: halt,
      haltMs: halt === 0 ? 0 : (down[halt - 1] as number) - stoppedAt,
      downSeconds: (startedAt - stoppedAt) / 1000,
      seconds: progress.seconds,
      timedOut: progress.timedOut,
    };
  } finally {
    await c?.stop();
    await broker.remove();
    await site.close();
  }
}
