/**
 * Throttle benchmark (issue 8): BENCH_THROTTLE_WORKERS (4) crawler worker processes (16 concurrent loops
 * each) crawl ONE domain whose throttle is QUEUE_HITS=10 per QUEUE_WINDOW=5 s, for BENCH_THROTTLE_SECONDS
 * (60) from the first page fetch. The fixture site (in this process) records when each page request
 * arrives; from those times:
 *
 * - max per window: the most page requests in any 5 s window [t, t + 5 s) starting at a request, over the
 *   complete windows of the measurement (configured: 10), and how many such windows held more;
 * - mean rate: requests in [first, first + duration) / duration (configured: 10 / 5 s = 2/s), and its
 *   error in percent; also the gaps between successive requests (moderated: window / hits = 500 ms).
 *
 * The crawl has far more work than the throttle lets through (one seed, maxdepth 3, 20 links per page), so
 * the throttle alone sets the pace. BENCH_THROTTLE_MODERATED (true, the default of QUEUE_MODERATED: evenly
 * spaced) or false (a sliding window: bursts of up to `hits`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startSite } from '../../localstack/site/site.ts';
import { startBenchCluster } from '../lib/cluster.ts';
import { envBool, envInt } from '../lib/env.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { percentile, round } from '../lib/timing.ts';

export const description = 'Cluster-wide politeness: 4 workers on one domain, hits=10 per 5 s window';

export const targets: Target[] = [
  { metric: 'max_per_window', op: '<=', value: 10.5, label: 'max per 5 s window (10 ± 5%)' },
  { metric: 'rate_abs_error_pct', op: '<=', value: 5, label: 'mean rate |error| %' },
];

export const headline: [string, string][] = [
  ['workers', 'workers'],
  ['seconds', 'seconds'],
  ['requests', 'page requests'],
  ['configured_per_s', 'configured /s'],
  ['mean_per_s', 'observed /s'],
  ['rate_error_pct', 'rate error %'],
  ['max_per_window', 'max per window'],
  ['gap_min_ms', 'min gap ms'],
  ['gap_p50_ms', 'gap p50 ms'],
];

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const workers = envInt('BENCH_THROTTLE_WORKERS', 4);
  const seconds = envInt('BENCH_THROTTLE_SECONDS', 60);
  const hits = envInt('BENCH_THROTTLE_HITS', 10);
  const windowS = envInt('BENCH_THROTTLE_WINDOW_S', 5);
  const moderated = envBool('BENCH_THROTTLE_MODERATED', true);
  for (const [k, v] of Object.entries({
    workers,
    concurrency_per_worker: 16,
    seconds,
    hits,
    window_s: windowS,
    moderated,
  }))
    ctx.input(k, v);
  const times: number[] = [];
  const site = await startSite({
    pages: 2000,
    links: 20,
    hosts: ['throttle.test'],
    onRequest: (path, _host, at) => {
      if (path.startsWith('/p/')) times.push(at);
    },
  });
  const cluster = await startBenchCluster(ctx, {
    overrides: {
      CRAWLER_HOST_MAP: site.hostMap,
      CRAWLER_CONCURRENCY: 16,
      QUEUE_HITS: hits,
      QUEUE_WINDOW: windowS,
      QUEUE_MODERATED: moderated,
    },
    workers,
    origins: [`http://throttle.test:${site.port}`],
  });
  const windowMs = windowS * 1000;
  const durationMs = seconds * 1000;
  try {
    ctx.progress(`${workers} workers up; crawling one domain for ${seconds} s from the first fetch`);
    await cluster.feed([{ url: site.url(0), appid: 'bench', crawlid: 'throttle', maxdepth: 3, spiderid: 'link' }]);
    const deadline = Date.now() + 30_000;
    while (times.length === 0) {
      if (Date.now() > deadline) throw new Error('no page fetched within 30 s of the feed');
      await sleep(50);
    }
    const t0 = times[0] as number;
    for (;;) {
      const left = t0 + durationMs + 200 - Date.now();
      if (left <= 0) break;
      await sleep(Math.min(left, 10_000));
      ctx.progress(`  ${times.length} page requests in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    }
  } finally {
    await cluster.stop();
    await site.close();
  }
  const t0 = times[0] as number;
  const inRange = times.filter((t) => t < t0 + durationMs).sort((a, b) => a - b);
  // Windows [t, t + window) starting at each request, complete within the measurement.
  const perWindow: number[] = [];
  let j = 0;
  for (let i = 0; i < inRange.length; i++) {
    const start = inRange[i] as number;
    if (start + windowMs > t0 + durationMs) break;
    if (j < i) j = i;
    while (j < inRange.length && (inRange[j] as number) < start + windowMs) j++;
    perWindow.push(j - i);
  }
  const maxPerWindow = Math.max(...perWindow);
  const fixed: number[] = [];
  for (let w = 0; (w + 1) * windowMs <= durationMs; w++) {
    fixed.push(inRange.filter((t) => t >= t0 + w * windowMs && t < t0 + (w + 1) * windowMs).length);
  }
  const gaps = inRange
    .slice(1)
    .map((t, i) => t - (inRange[i] as number))
    .sort((a, b) => a - b);
  const configured = hits / windowS;
  const mean = inRange.length / seconds;
  const error = (mean / configured - 1) * 100;
  return {
    workers,
    seconds,
    requests: inRange.length,
    configured_per_s: configured,
    mean_per_s: round(mean, 3),
    rate_error_pct: round(error, 2),
    rate_abs_error_pct: round(Math.abs(error), 2),
    configured_per_window: hits,
    max_per_window: maxPerWindow,
    // The first request also fetched robots.txt and opened the connection: windows starting later.
    max_per_window_after_first: Math.max(...perWindow.slice(1)),
    windows_over_limit: perWindow.filter((n) => n > hits).length,
    windows: perWindow.length,
    max_per_fixed_window: Math.max(...fixed),
    min_per_fixed_window: Math.min(...fixed),
    gap_min_ms: gaps[0] ?? Number.NaN,
    gap_p50_ms: percentile(gaps, 50),
    gap_p99_ms: percentile(gaps, 99),
    gap_max_ms: gaps[gaps.length - 1] ?? Number.NaN,
  };
}
