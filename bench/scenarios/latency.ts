/**
 * Latency benchmark (issue 8): single-page crawls (maxdepth 0) fed one at a time through the real path
 * (Kafka `<p>.incoming` → kafka-monitor → Redis → 1 crawler worker process → `<p>.crawled_firehose` → a
 * consumer here), each waited for before the next: feed → page message received, minus the page's own
 * fetch time (`fetched_ms` in the page message).
 *
 * - Breakdown per crawl (medians reported): ingest = feed → kafka-monitor handler done (includes the MSK
 *   batching window); pickup = handler done → page built (page `timestamp`) minus fetched_ms: the time a
 *   worker takes to notice and lease the request, plus robots check and extraction; publish = page built →
 *   page message CreateTime; delivery = CreateTime → received by the consumer here.
 * - The kafka-monitor's batching window is BENCH_LATENCY_WINDOW_MS (default 0: the latency-minimal
 *   setting; Lambda's MSK event source defaults to 500 ms, which adds up to that much to `ingest`).
 * - Throttle wide open (as in `crawl`): the numbers are the pipeline's, not politeness waits.
 * - Crawls are fed after a pseudo-random pause of 0–BENCH_LATENCY_PAUSE_MS (1000) ms, as requests arriving
 *   at random times would: a fixed or short pause locks the feeds in step with the workers' idle polling
 *   (1 s), which then decides the numbers (e.g. a 0–250 ms pause lands every feed ~850 ms before the next
 *   poll). BENCH_LATENCY_WARMUP (10) unmeasured crawls first.
 * - BENCH_LATENCY_CRAWLS (200). Site in this process (one request at a time is no load).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { prng } from '../../localstack/site/prng.ts';
import { startSite } from '../../localstack/site/site.ts';
import { startBenchCluster } from '../lib/cluster.ts';
import { openThrottle } from '../lib/crawl-pass.ts';
import { envInt, envNumber } from '../lib/env.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { percentile, round } from '../lib/timing.ts';

export const description = 'Feed → page message latency of single-page crawls, minus the fetch time';

export const targets: Target[] = [{ metric: 'over_fetch_p50_ms', op: '<', value: 50, label: 'p50 ms over fetch' }];

export const headline: [string, string][] = [
  ['crawls', 'crawls'],
  ['over_fetch_p50_ms', 'p50 ms over fetch'],
  ['over_fetch_p95_ms', 'p95'],
  ['over_fetch_p99_ms', 'p99'],
  ['fetch_p50_ms', 'fetch p50 ms'],
  ['ingest_p50_ms', 'ingest p50'],
  ['pickup_p50_ms', 'pickup p50'],
  ['publish_p50_ms', 'publish p50'],
  ['delivery_p50_ms', 'delivery p50'],
];

interface Sample {
  total: number;
  fetched: number;
  ingest: number;
  pickup: number;
  publish: number;
  delivery: number;
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const crawls = envInt('BENCH_LATENCY_CRAWLS', 200);
  const warmup = envInt('BENCH_LATENCY_WARMUP', 10);
  const windowMs = envNumber('BENCH_LATENCY_WINDOW_MS', 0);
  const pauseMs = envNumber('BENCH_LATENCY_PAUSE_MS', 1000);
  const pageBytes = envInt('BENCH_PAGE_BYTES', 30_000);
  const site = await startSite({ pages: 1000, links: 20, pageBytes, template: 'article' });
  for (const [k, v] of Object.entries({
    crawls,
    warmup,
    batching_window_ms: windowMs,
    pause_ms_max: pauseMs,
    page_bytes: pageBytes,
    workers: 1,
    concurrency: 16,
    throttle: JSON.stringify(openThrottle()),
  }))
    ctx.input(k, v);
  ctx.note('times from Date.now() in this process, the crawler (page timestamp) and Kafka CreateTime: one host');
  let kmDone: number[] = [];
  const cluster = await startBenchCluster(ctx, {
    overrides: { CRAWLER_HOST_MAP: site.hostMap, CRAWLER_CONCURRENCY: 16, ...openThrottle() },
    workers: 1,
    batchingWindowMs: windowMs,
    origins: site.hosts.map((h) => `http://${h}:${site.port}`),
    onBatch: (fn) => {
      if (fn === 'kafka-monitor') kmDone.push(Date.now());
    },
  });
  const waiting = new Map<string, (m: { page: Record<string, unknown>; at: number; ts: number }) => void>();
  const consumer = cluster.kafka.consumer({ groupId: `bench-latency-${Date.now()}`, maxWaitTimeInMs: 100 });
  const samples: Sample[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: cluster.topics.crawledFirehose, fromBeginning: true });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    await consumer.run({
      eachMessage: async ({ message }) => {
        const at = Date.now();
        const page = JSON.parse(message.value?.toString('utf8') ?? '{}') as Record<string, unknown>;
        waiting.get(page.crawlid as string)?.({ page, at, ts: Number(message.timestamp) });
      },
    });
    await joined;
    const rand = prng(0x1a7e);
    const total = warmup + crawls;
    ctx.progress(`${warmup} warm-up + ${crawls} single-page crawls, batching window ${windowMs} ms`);
    for (let i = 0; i < total; i++) {
      await sleep(Math.floor(rand() * pauseMs));
      const crawlid = `lat-${i}`;
      const got = new Promise<{ page: Record<string, unknown>; at: number; ts: number }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no page message for ${crawlid} within 30 s`)), 30_000);
        waiting.set(crawlid, (m) => {
          clearTimeout(timer);
          resolve(m);
        });
      });
      kmDone = [];
      const fed = Date.now();
      await cluster.feed([{ url: site.url(i % site.pages), appid: 'bench', crawlid, maxdepth: 0, spiderid: 'link' }]);
      const { page, at, ts } = await got;
      waiting.delete(crawlid);
      if (i < warmup) continue;
      const fetched = Number(page.fetched_ms ?? 0);
      const built = Date.parse(`${page.timestamp as string}Z`);
      const km = kmDone[0] ?? fed;
      samples.push({
        total: at - fed,
        fetched,
        ingest: km - fed,
        pickup: built - km - fetched,
        publish: ts - built,
        delivery: at - ts,
      });
      if (samples.length % 25 === 0) {
        const over = samples.map((s) => s.total - s.fetched).sort((a, b) => a - b);
        ctx.progress(`  ${samples.length}/${crawls}: p50 over fetch ${percentile(over, 50)} ms`);
      }
    }
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await cluster.stop();
    await site.close();
  }
  const p = (f: (s: Sample) => number, q: number) =>
    round(
      percentile(
        samples.map(f).sort((a, b) => a - b),
        q,
      ),
      1,
    );
  return {
    crawls: samples.length,
    over_fetch_p50_ms: p((s) => s.total - s.fetched, 50),
    over_fetch_p95_ms: p((s) => s.total - s.fetched, 95),
    over_fetch_p99_ms: p((s) => s.total - s.fetched, 99),
    total_p50_ms: p((s) => s.total, 50),
    total_p99_ms: p((s) => s.total, 99),
    fetch_p50_ms: p((s) => s.fetched, 50),
    fetch_p99_ms: p((s) => s.fetched, 99),
    ingest_p50_ms: p((s) => s.ingest, 50),
    ingest_p95_ms: p((s) => s.ingest, 95),
    pickup_p50_ms: p((s) => s.pickup, 50),
    pickup_p95_ms: p((s) => s.pickup, 95),
    publish_p50_ms: p((s) => s.publish, 50),
    delivery_p50_ms: p((s) => s.delivery, 50),
    delivery_p95_ms: p((s) => s.delivery, 95),
  };
}
