/**
 * One measured crawl of the fixture site through the real path (bench/lib/cluster.ts), as the `crawl` and
 * `crawlee` scenarios run it: cluster up with the throttle wide open, an unmeasured warm-up crawl (site-config.ts
 * `benchWarmup`, `benchWarmupMaxdepth`: the whole site, so the workers' JIT is warm as the raw loop's is), then the crawl from
 * the seeds to `maxdepth`, timed from its first to its last page message (Kafka CreateTime), with the CPU time of
 * every process involved, the Redis server time per page and the bytes the crawl's page messages take on the wire
 * (the growth of `<p>.crawled_firehose`'s log on the broker over the measured crawl: bench/lib/kafka.ts).
 * `compression` sets the workers' KAFKA_COMPRESSION (none by default, whatever this process's environment says).
 */
import { randomBytes } from 'node:crypto';
import type { Variables } from '../../lib/config/index.ts';
import type { KafkaCompression } from '../../lib/kafka/codecs.ts';
import type { FixtureSite } from '../../localstack/site/site.ts';
import { type BenchCluster, crawlToCompletion, readPageTimes, startBenchCluster } from './cluster.ts';
import { CpuMeter } from './cpu.ts';
import { envBool, envInt } from './env.ts';
import { procStatusKb } from './peers.ts';
import { commandBreakdown, commandStats, scriptStats } from './redis.ts';
import type { Numbers, ScenarioContext } from './scenario.ts';
import { benchWarmup, benchWarmupMaxdepth } from './site-config.ts';
import { round } from './timing.ts';

export interface CrawlPassOptions {
  workers: number;
  concurrency: number;
  /** Seed pages and maxdepth (bench/lib/site-config.ts seedPlan). */
  seeds: number[];
  maxdepth: number;
  /** Spawn the workers under `--cpu-prof`, writing profiles here. */
  profileDir?: string;
  /** Pid of the site's process, when it has its own (CPU accounting). */
  sitePid?: number;
  label: string;
  /** The spider type the crawl names. @default 'link' */
  spiderid?: string;
  /** More variables for the cluster and its workers (e.g. CRAWLER_PLUGINS). */
  overrides?: Partial<Variables>;
  /** The workers' KAFKA_COMPRESSION (their page messages' codec). @default 'none' */
  compression?: KafkaCompression;
}

export interface CrawlPassResult {
  pages: number;
  failed: number;
  messages: number;
  seconds: number;
  pagesPerS: number;
  meanMessageBytes: number;
  /** Bytes the measured crawl added to the firehose's log on the broker (NaN when its data dir is unknown). */
  firehoseBytes: number;
  /** The workers' KAFKA_COMPRESSION. */
  compression: KafkaCompression;
  /** Feed of the seed to the frontier reporting the crawl done (includes the first lease's idle wait). */
  feedToDoneS: number;
  timedOut: boolean;
  /** CPU seconds per process kind during the measured crawl. */
  cpu: Record<string, number>;
  /** Redis server time per page: Lua scripts (their commands included) and the plain commands the crawl sends. */
  redisServerUsPerPage: number;
  redisBreakdown: string;
  throttle: string;
  /** Peak resident set (VmHWM) of the crawler worker processes, summed, MiB. */
  workerPeakRssMb: number;
}

/** The throttle "wide open" (see the crawl scenario's doc): BENCH_CRAWL_MODERATED, BENCH_CRAWL_HITS. */
export function openThrottle(): { QUEUE_HITS: number; QUEUE_WINDOW: number; QUEUE_MODERATED: boolean } {
  return {
    QUEUE_HITS: envInt('BENCH_CRAWL_HITS', 100_000),
    QUEUE_WINDOW: 1,
    QUEUE_MODERATED: envBool('BENCH_CRAWL_MODERATED', true),
  };
}

export async function crawlPass(
  ctx: ScenarioContext,
  site: FixtureSite,
  o: CrawlPassOptions,
): Promise<CrawlPassResult> {
  const throttle = openThrottle();
  const compression = o.compression ?? 'none';
  const origins = [...new Set(site.hosts)].map((h) => `http://${h}:${site.port}`);
  ctx.progress(
    `${o.label}: starting the cluster with ${o.workers} crawler worker(s), concurrency ${o.concurrency} each, KAFKA_COMPRESSION=${compression}`,
  );
  const cluster: BenchCluster = await startBenchCluster(ctx, {
    overrides: {
      CRAWLER_HOST_MAP: site.hostMap,
      CRAWLER_CONCURRENCY: o.concurrency,
      // Three host names on one loopback server: every slot may go to one of them, as the raw loop's and the peers'
      // may (the per-domain cap is for the web's slow sites; realweb measures it at its default).
      CRAWLER_DOMAIN_CONCURRENCY: o.concurrency,
      RETRY_BASE_DELAY_MS: 100,
      ...throttle,
      ...o.overrides,
      KAFKA_COMPRESSION: compression,
    },
    workers: o.workers,
    profileDir: o.profileDir,
    origins,
  });
  const timeoutS = envInt('BENCH_CRAWL_TIMEOUT_S', 600);
  try {
    const id = randomBytes(3).toString('hex');
    const warmDepth = benchWarmupMaxdepth(o.maxdepth);
    const warm = benchWarmup(site.pages, o.seeds);
    ctx.progress(`${o.label}: warm-up crawl (maxdepth ${warmDepth} from ${warm.from}, unmeasured)`);
    await crawlToCompletion(
      cluster,
      ctx,
      {
        urls: warm.seeds.map(site.url),
        maxdepth: warmDepth,
        crawlid: `warm-${id}`,
        spiderid: o.spiderid,
      },
      120,
      `${o.label} warm-up`,
    );

    const bench = await ctx.redis();
    const meter = new CpuMeter(() => ({
      worker: cluster.workerPids(),
      redis: bench.pid ? [bench.pid] : [],
      kafka: cluster.kafkaPid ? [cluster.kafkaPid] : [],
      site: o.sitePid ? [o.sitePid] : [],
    }));
    // Every warm-up page is in the log already: a worker acks a page only once the broker has acked its message.
    const logBytes0 = cluster.firehoseLogBytes();
    const cmd0 = await commandStats(bench.client);
    const scripts0 = await scriptStats(bench.client);
    meter.start();
    const fedAt = Date.now();
    ctx.progress(`${o.label}: crawling from ${o.seeds.length} seed(s) to maxdepth ${o.maxdepth}`);
    const progress = await crawlToCompletion(
      cluster,
      ctx,
      { urls: o.seeds.map(site.url), maxdepth: o.maxdepth, crawlid: `main-${id}`, spiderid: o.spiderid },
      timeoutS,
      o.label,
    );
    const cpu = meter.stop();
    const peakKb = cluster.workerPids().reduce((sum, pid) => sum + procStatusKb(pid, 'VmHWM'), 0);
    const cmd1 = await commandStats(bench.client);
    const scripts1 = await scriptStats(bench.client);
    const total = progress.done + progress.failed;
    ctx.progress(
      `${o.label}: ${total} pages in ${progress.seconds.toFixed(1)} s (feed to done); reading page message times`,
    );
    const times = await readPageTimes(cluster, total, fedAt);
    const firehoseBytes = cluster.firehoseLogBytes() - logBytes0;
    // Script time (EVALSHA, commands inside included) plus the plain commands' (PING, SADD, ZADD...).
    let usec = scripts1.usec - scripts0.usec;
    for (const name of ['zadd', 'zremrangebyscore', 'sadd', 'smembers', 'zrangebyscore', 'get', 'set', 'setex'])
      usec += (cmd1.get(name)?.[1] ?? 0) - (cmd0.get(name)?.[1] ?? 0);
    const seconds = (times.lastMs - times.firstMs) / 1000;
    const result: CrawlPassResult = {
      pages: progress.done,
      failed: progress.failed,
      messages: times.messages,
      seconds,
      pagesPerS: times.messages > 1 && seconds > 0 ? (times.messages - 1) / seconds : 0,
      meanMessageBytes: times.meanBytes,
      firehoseBytes,
      compression,
      feedToDoneS: progress.seconds,
      timedOut: progress.timedOut,
      cpu,
      redisServerUsPerPage: total ? usec / total : 0,
      redisBreakdown: commandBreakdown(cmd0, cmd1, 6),
      throttle: `${throttle.QUEUE_HITS} hits / ${throttle.QUEUE_WINDOW} s, moderated=${throttle.QUEUE_MODERATED}`,
      workerPeakRssMb: Math.round(peakKb / 102.4) / 10,
    };
    ctx.progress(
      `${o.label}: ${result.messages} page messages, ${result.pagesPerS.toFixed(0)} pages/s first→last, ${firehosePerPage(result)} B/page on the wire (${compression}), cpu ${JSON.stringify(cpu)}, redis ${result.redisServerUsPerPage.toFixed(0)} µs/page`,
    );
    return result;
  } finally {
    await cluster.stop();
  }
}

/** The numbers of one pass, suffixed (`pages_per_s_1w`...); `ratio_<suffix>` is to `rawPagesPerS`. */
export function passNumbers(r: CrawlPassResult, suffix: string, rawPagesPerS: number): Numbers {
  const per = (s: number | undefined) => round(((s ?? 0) * 1000) / Math.max(1, r.messages), 3);
  return {
    [`pages_${suffix}`]: r.messages,
    [`failed_${suffix}`]: r.failed,
    [`seconds_${suffix}`]: round(r.seconds, 2),
    [`pages_per_s_${suffix}`]: round(r.pagesPerS, 1),
    [`ratio_${suffix}`]: round(r.pagesPerS / rawPagesPerS, 3),
    [`feed_to_done_s_${suffix}`]: round(r.feedToDoneS, 2),
    [`message_bytes_${suffix}`]: Math.round(r.meanMessageBytes),
    [`worker_cpu_ms_per_page_${suffix}`]: per(r.cpu.worker),
    [`redis_cpu_ms_per_page_${suffix}`]: per(r.cpu.redis),
    [`kafka_cpu_ms_per_page_${suffix}`]: per(r.cpu.kafka),
    [`site_cpu_ms_per_page_${suffix}`]: per(r.cpu.site),
    [`bench_cpu_ms_per_page_${suffix}`]: per(r.cpu.bench),
    // What runs the crawl, as the per-core comparison with the peers counts it.
    [`cpu_ms_per_page_${suffix}`]: per((r.cpu.worker ?? 0) + (r.cpu.redis ?? 0) + (r.cpu.kafka ?? 0)),
    [`worker_peak_rss_mb_${suffix}`]: r.workerPeakRssMb,
    [`redis_us_per_page_${suffix}`]: round(r.redisServerUsPerPage, 1),
    [`redis_breakdown_${suffix}`]: r.redisBreakdown,
    // On the wire and on disk, record batch headers included: the firehose log's growth over the pages.
    ...(Number.isFinite(r.firehoseBytes) ? { [`bytes_per_page_${suffix}`]: firehosePerPage(r) } : {}),
  };
}

/** Firehose bytes on the wire per page message (NaN when the broker's data dir is unknown). */
function firehosePerPage(r: CrawlPassResult): number {
  return Math.round(r.firehoseBytes / Math.max(1, r.messages));
}
