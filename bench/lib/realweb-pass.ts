/**
 * One measured crawl of the simulated internet (localstack/site/internet.ts) by our crawler through the real path
 * (bench/lib/cluster.ts), as the `realweb` scenario runs it: a fresh cluster with `workers` crawler worker processes
 * at their DEFAULT concurrency (adaptive) or a fixed one, every other setting at its default but the throttle, wide
 * open as in the `crawl` scenario (crawl-pass.ts `openThrottle`); no warm-up crawl (a task starts cold, and the
 * adaptive controller's ramp is part of what is measured). The crawl from the seeds to `maxdepth` is timed by every
 * page message's Kafka CreateTime (bench/lib/ramp.ts), with the CPU of every process involved and the workers' peak RSS.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Variables } from '../../lib/config/index.ts';
import type { InternetGeometry } from '../../localstack/site/internet.ts';
import { type BenchCluster, crawlToCompletion, readFirehose, startBenchCluster } from './cluster.ts';
import { CpuMeter } from './cpu.ts';
import { openThrottle } from './crawl-pass.ts';
import { envInt } from './env.ts';
import { procStatusKb } from './peers.ts';
import { type Ramp, ramp } from './ramp.ts';
import type { ScenarioContext } from './scenario.ts';

export interface RealwebPassOptions {
  workers: number;
  /** CRAWLER_CONCURRENCY: undefined keeps the default (0: adaptive). */
  concurrency?: number;
  seeds: number[];
  maxdepth: number;
  sitePid: number;
  label: string;
  overrides?: Partial<Variables>;
}

export interface RealwebPassResult extends Ramp {
  /** Pages the frontier reports done and failed. */
  done: number;
  failed: number;
  feedToDoneS: number;
  timedOut: boolean;
  /** CPU seconds per process kind (worker, redis, kafka, site, bench). */
  cpu: Record<string, number>;
  /** Peak resident set (VmHWM) of the worker processes, summed, MiB. */
  workerPeakRssMb: number;
}

/** Every page message's CreateTime at or after `sinceMs` on `<p>.crawled_firehose`, until `expected` (or `timeoutS`). */
async function readArrivals(c: BenchCluster, expected: number, sinceMs: number, timeoutS = 120): Promise<number[]> {
  const times: number[] = [];
  await readFirehose(c, sinceMs, timeoutS, (t) => times.push(t) >= expected);
  return times;
}

export async function realwebPass(
  ctx: ScenarioContext,
  web: InternetGeometry,
  o: RealwebPassOptions,
): Promise<RealwebPassResult> {
  const origins = web.hostNames.map((h) => `http://${h}:${web.port}`);
  const slots = o.concurrency === undefined ? 'default (adaptive) concurrency' : `CRAWLER_CONCURRENCY=${o.concurrency}`;
  ctx.progress(`${o.label}: starting the cluster with ${o.workers} crawler worker(s), ${slots}`);
  const cluster = await startBenchCluster(ctx, {
    overrides: {
      CRAWLER_HOST_MAP: web.hostMap,
      ...openThrottle(),
      ...(o.concurrency === undefined ? {} : { CRAWLER_CONCURRENCY: o.concurrency }),
      ...o.overrides,
    },
    workers: o.workers,
    origins,
    // BENCH_REALWEB_PROFILE_DIR: the workers run under `--cpu-prof`, their profiles written there (summarize one
    // with bench/lib/cpuprofile.ts); the numbers are then slower than unprofiled ones.
    ...(process.env.BENCH_REALWEB_PROFILE_DIR ? { profileDir: process.env.BENCH_REALWEB_PROFILE_DIR } : {}),
  });
  try {
    const bench = await ctx.redis();
    const meter = new CpuMeter(() => ({
      worker: cluster.workerPids(),
      redis: bench.pid ? [bench.pid] : [],
      kafka: cluster.kafkaPid ? [cluster.kafkaPid] : [],
      site: [o.sitePid],
    }));
    meter.start();
    const fedAt = Date.now();
    const progress = await crawlToCompletion(
      cluster,
      ctx,
      {
        urls: o.seeds.map(web.url),
        maxdepth: o.maxdepth,
        crawlid: `realweb-${randomBytes(3).toString('hex')}`,
      },
      envInt('BENCH_CRAWL_TIMEOUT_S', 600),
      o.label,
    );
    const cpu = meter.stop();
    const peakKb = cluster.workerPids().reduce((sum, pid) => sum + procStatusKb(pid, 'VmHWM'), 0);
    const total = progress.done + progress.failed;
    const times = await readArrivals(cluster, total, fedAt);
    const r = ramp(times);
    // BENCH_REALWEB_TIMES_DIR: every page message's CreateTime (and when the crawl was fed) as <label>.json there, to
    // bucket a crawl's first seconds (bench/PROFILE.md).
    const timesDir = process.env.BENCH_REALWEB_TIMES_DIR;
    if (timesDir) {
      mkdirSync(timesDir, { recursive: true });
      writeFileSync(join(timesDir, `${o.label.replaceAll(/[^\w.-]+/g, '_')}.json`), JSON.stringify({ fedAt, times }));
    }
    ctx.progress(
      `${o.label}: ${r.pages} page messages (${progress.failed} failed), ${r.p90PagesPerS.toFixed(0)} pages/s to 90 %, ${r.pagesPerS.toFixed(0)} first→last, converged in ${r.convergeS} s, cpu ${JSON.stringify(cpu)}`,
    );
    return {
      ...r,
      done: progress.done,
      failed: progress.failed,
      feedToDoneS: progress.seconds,
      timedOut: progress.timedOut,
      cpu,
      workerPeakRssMb: Math.round(peakKb / 102.4) / 10,
    };
  } finally {
    await cluster.stop();
  }
}
