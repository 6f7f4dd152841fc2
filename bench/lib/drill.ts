/**
 * Fault drills (issue 48 items 4 and 5): a crawl of the fixture site through the real path (bench/lib/cluster.ts),
 * interrupted once its crawl has done `after` pages by a disruption that holds for `forS` seconds:
 *
 * - `redis-full`: the bench's private Redis refuses every write (`CONFIG SET maxmemory` 1 byte, with
 *   `maxmemory-policy noeviction`, as ElastiCache runs the frontier): leases, acks, children;
 * - `kafka-down`: the crawl's broker (test/helpers/private-kafka.ts, a broker of the drill's own) is stopped, with
 *   short leases (`LEASE_TIMEOUT` 5 s) and reclaim every second, so that a lease left to lapse while its page waits on
 *   Kafka is reclaimed, with a try counted, many times over.
 *
 * Afterwards it counts what a client and the site saw: page messages per URL on the firehose, fetches per page, pages
 * fetched after the disruption began, and whether the crawl completed with every page. Used by the `sizes-redis-full`
 * and `sizes-kafka-outage` scenarios at production size and by e2e tests at a small one (bench/lib/standalone-context.ts).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Variables } from '../../lib/config/index.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { settlesWithin } from '../../lib/timeout.ts';
import { startSite } from '../../localstack/site/site.ts';
import { type PrivateKafka, startPrivateKafka } from '../../test/helpers/private-kafka.ts';
import { type BenchCluster, crawlToCompletion, startBenchCluster } from './cluster.ts';
import type { ScenarioContext } from './scenario.ts';

type Disruption = 'redis-full' | 'kafka-down';

export interface DrillOptions {
  disruption: Disruption;
  /** Pages of the fixture site (those within maxdepth 3 of page 0 are crawled). */
  pages: number;
  hosts: number;
  workers: number;
  /** The disruption begins once this many pages are done. */
  after: number;
  /** It holds this long (s). */
  forS: number;
  timeoutS: number;
}

export interface DrillResult {
  pages: number;
  /** Pages the crawl's counts say are done or failed once nothing is queued or leased; 0 when it timed out. */
  completed: number;
  failed: number;
  pageMessages: number;
  /** Distinct URLs among the page messages. */
  urls: number;
  /** Page messages beyond one per URL, over the URLs. */
  duplicateShare: number;
  maxMessagesPerUrl: number;
  /** The most fetches the site served for one page. */
  maxFetchesPerPage: number;
  /** Page fetches the site served while the disruption held. */
  fetchedDuring: number;
  /** Of those, the ones before the crawlers stopped fetching (the first second without a fetch). */
  fetchedBeforeHalt: number;
  /** From the start of the disruption to the last of those fetches (ms). */
  haltMs: number;
  /** How long the disruption held (s). */
  disruptedS: number;
  seconds: number;
  timedOut: boolean;
}

/** The configuration each disruption crawls with, on top of a wide-open throttle. */
function overridesFor(disruption: Disruption, broker: PrivateKafka | undefined): Partial<Variables> {
  if (disruption === 'redis-full') return { QUEUE_HITS: 100_000 };
  return { KAFKA_BROKERS: broker?.brokers, LEASE_TIMEOUT: 5, QUEUE_HITS: 50 };
}

/** Begins the disruption; returns what ends it. */
async function disrupt(
  o: DrillOptions,
  redis: RedisClient,
  broker: PrivateKafka | undefined,
  progress: (m: string) => void,
): Promise<() => Promise<void>> {
  if (o.disruption === 'redis-full') {
    // 1 byte: over the limit for the whole window, whatever acks free or client buffers come and go, as a node that
    // filled up is. Redis then refuses every command that may grow memory, and a script's first such write; a script
    // whose first write frees (an ack's ZREM of its lease) may go on writing, so acks without children still pass.
    const used = Number(/used_memory:(\d+)/.exec(String(await redis.info('memory')))?.[1]);
    const limit = 1;
    await redis.config('SET', 'maxmemory-policy', 'noeviction');
    await redis.config('SET', 'maxmemory', String(limit));
    progress(`  Redis full (maxmemory ${limit} bytes, ${used} used) for ${o.forS} s`);
    return async () => {
      await redis.config('SET', 'maxmemory', '0');
      progress('  Redis has room again');
    };
  }
  await broker?.stop();
  progress(`  broker stopped for ${o.forS} s`);
  return async () => {
    await broker?.start();
    progress('  broker started again');
  };
}

/** Runs a drill; see the module note. */
export async function runDrill(ctx: ScenarioContext, o: DrillOptions): Promise<DrillResult> {
  const hosts = Array.from({ length: o.hosts }, (_, i) => `drill-${i}.test`);
  // 60 links a page reach every page of a 3,000-page site within depth 3 (site.ts link geometry); more pages more.
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
  let broker: PrivateKafka | undefined;
  let c: BenchCluster | undefined;
  try {
    if (o.disruption === 'kafka-down') broker = await startPrivateKafka();
    c = await startBenchCluster(ctx, {
      workers: o.workers,
      scheduleEveryMs: o.disruption === 'kafka-down' ? 1000 : undefined,
      overrides: {
        CRAWLER_HOST_MAP: site.hostMap,
        QUEUE_WINDOW: 1,
        QUEUE_MODERATED: false,
        RETRY_BASE_DELAY_MS: 200,
        CRAWLER_CONCURRENCY: 16,
        ...overridesFor(o.disruption, broker),
      },
      origins: hosts.map((h) => `http://${h}:${site.port}`),
    });
    const cluster = c;
    const crawlid = `drill${randomBytes(3).toString('hex')}`;
    const crawl = crawlToCompletion(cluster, ctx, { urls: [site.url(0)], maxdepth: 3, crawlid }, o.timeoutS, 'crawl');
    const window = (async () => {
      for (;;) {
        const info = await cluster.frontier.crawlInfo('link', 'bench', crawlid);
        if ((info?.done ?? 0) + (info?.failed ?? 0) >= o.after) break;
        await sleep(100);
      }
      const end = await disrupt(o, cluster.redis, broker, ctx.progress);
      // From the moment the disruption is in effect.
      const from = Date.now();
      const info = await cluster.frontier.crawlInfo('link', 'bench', crawlid).catch(() => undefined);
      ctx.progress(`  disrupted with ${(info?.done ?? 0) + (info?.failed ?? 0)} pages done`);
      await sleep(o.forS * 1000);
      await end();
      return { from, to: Date.now() };
    })();
    const progress = await crawl;
    const { from, to } = await window;
    const perUrl = new Map<string, number>();
    await readUrls(cluster, expected, perUrl, 120);
    const messages = [...perUrl.values()].reduce((a, b) => a + b, 0);
    const fetches = [...site.hits.entries()].filter(([path]) => path.startsWith('/p/')).map(([, n]) => n);
    const during = fetchTimes.filter((t) => t >= from && t < to).sort((a, b) => a - b);
    // Fetching halted at the first gap of a second in the fetches after the disruption began.
    let halt = during.length;
    for (let i = 0; i < during.length; i++) {
      if ((during[i + 1] ?? to) - (during[i] as number) >= 1000) {
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
      maxMessagesPerUrl: Math.max(0, ...perUrl.values()),
      maxFetchesPerPage: Math.max(0, ...fetches),
      fetchedDuring: during.length,
      fetchedBeforeHalt: halt,
      haltMs: halt === 0 ? 0 : (during[halt - 1] as number) - from,
      disruptedS: (to - from) / 1000,
      seconds: progress.seconds,
      timedOut: progress.timedOut,
    };
  } finally {
    if (o.disruption === 'redis-full') await c?.redis.config('SET', 'maxmemory', '0').catch(() => undefined);
    await c?.stop();
    await broker?.remove();
    await site.close();
  }
}

/** The numbers of a drill as a scenario reports them. */
export function drillNumbers(r: DrillResult): Record<string, number> {
  return {
    pages: r.pages,
    completed: r.completed,
    failed: r.failed,
    missing_pages: r.pages - r.completed,
    page_messages: r.pageMessages,
    urls: r.urls,
    duplicate_share: Number(r.duplicateShare.toFixed(4)),
    max_messages_per_url: r.maxMessagesPerUrl,
    max_fetches_per_page: r.maxFetchesPerPage,
    fetched_during: r.fetchedDuring,
    fetched_before_halt: r.fetchedBeforeHalt,
    halt_ms: r.haltMs,
    disrupted_s: Number(r.disruptedS.toFixed(1)),
    seconds: Number(r.seconds.toFixed(1)),
  };
}

/** Counts the firehose's page messages per URL until `expected` distinct URLs were seen (or `timeoutS`). */
async function readUrls(c: BenchCluster, expected: number, perUrl: Map<string, number>, timeoutS: number) {
  const consumer = c.kafka.consumer({ groupId: `drill-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: c.topics.crawledFirehose, fromBeginning: true });
    let seen!: () => void;
    const all = new Promise<void>((resolve) => {
      seen = resolve;
    });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const url = (JSON.parse(String(message.value)) as { url: string }).url;
        perUrl.set(url, (perUrl.get(url) ?? 0) + 1);
        if (perUrl.size >= expected) seen();
      },
    });
    await settlesWithin(all, timeoutS * 1000);
    // Late duplicates of the last pages arrive within a linger or two.
    await sleep(1000);
  } finally {
    await consumer.disconnect();
  }
}
