/**
 * Crawl benchmark (issue 8): the fixture site crawled end to end through the real path — seed fed to
 * Kafka `<p>.incoming` → kafka-monitor handler (local MSK source) → Redis frontier → crawler worker
 * processes (functions/crawler/main.ts) → `<p>.crawled_firehose` — with 1 and 2 workers, against the raw
 * limit measured in the same run on the same site (bench/lib/raw.ts, bare undici).
 *
 * - Site: BENCH_PAGES (5000; 20000 in the issue) article pages of ~BENCH_PAGE_BYTES (30000) with BENCH_LINKS (20) links over
 *   three host names resolved to 127.0.0.1 by the crawler's host map, in its own process; crawled from the
 *   fewest evenly spaced seeds that reach every page within maxdepth 3 (the schema's maximum), one crawl id.
 * - Throttle wide open: moderated, BENCH_CRAWL_HITS (100000) hits per 1 s window. Moderated spacing is
 *   ceil(1000 / hits) ms = 1 ms per domain (≤ 1000 pages/s per domain, far above what a worker does);
 *   BENCH_CRAWL_MODERATED=false uses the sliding-window log instead, whose state is O(hits) per lease.
 * - pages/s: page messages from the first to the last (Kafka CreateTime), after an unmeasured warm-up
 *   crawl; each worker count gets a fresh cluster (topics, key prefix). Redis: bench/lib/redis.ts.
 * - raw reference: the mean of a raw pass before and one after the crawls (a shared machine's load moves).
 * - BENCH_CRAWL_WORKERS (1,2), BENCH_CONCURRENCY (16 per worker), BENCH_CRAWL_TIMEOUT_S (600).
 */

import { startSiteProcess } from '../../localstack/site/process.ts';
import { type CrawlPassResult, crawlPass, passNumbers } from '../lib/crawl-pass.ts';
import { envIntList } from '../lib/env.ts';
import { parseHostMap, rawPass } from '../lib/raw.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { benchConcurrency, benchSiteOptions, recordSiteInputs, seedPlan } from '../lib/site-config.ts';
import { round } from '../lib/timing.ts';

export const description = 'End-to-end crawl (Kafka → kafka-monitor → Redis → crawler workers → Kafka) vs raw';

export const targets: Target[] = [{ metric: 'ratio_1w', op: '>=', value: 0.6, label: 'crawl/raw (1 worker)' }];

export const headline: [string, string][] = [
  ['pages', 'pages'],
  ['raw_pages_per_s', 'raw pages/s'],
  ['pages_per_s_1w', 'pages/s 1 worker'],
  ['ratio_1w', 'ratio 1w/raw'],
  ['pages_per_s_2w', 'pages/s 2 workers'],
  ['ratio_2w', 'ratio 2w/raw'],
  ['worker_cpu_ms_per_page_1w', 'worker CPU ms/page'],
  ['redis_us_per_page_1w', 'Redis µs/page'],
];

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const options = benchSiteOptions();
  const concurrency = benchConcurrency();
  const workerCounts = envIntList('BENCH_CRAWL_WORKERS', [1, 2]);
  const site = await startSiteProcess(options);
  const out: Numbers = {};
  try {
    const plan = seedPlan(site);
    const { maxdepth, reachable } = plan;
    recordSiteInputs(ctx, options, plan);
    ctx.input('concurrency_per_worker', concurrency);
    ctx.input('workers', workerCounts.join(','));
    ctx.note('pages/s = (page messages - 1) / (last - first page message CreateTime), after a warm-up crawl');
    ctx.note(
      'raw = bare undici + extractLinks at the same concurrency (one process): mean of a pass before and after the crawls',
    );
    ctx.note('CPU ms/page from /proc per process kind (worker, redis, kafka, site, bench = monitors + this)');

    ctx.progress(
      `raw reference: ${reachable} pages from ${plan.seeds.length} seeds at maxdepth ${maxdepth}, concurrency ${concurrency}`,
    );
    const rawOnce = () =>
      rawPass({
        url: site.url,
        seeds: plan.seeds,
        maxdepth,
        concurrency,
        resolve: parseHostMap(site.hostMap),
        client: 'undici',
        progress: ctx.progress,
      });
    const rawBefore = await rawOnce();
    ctx.progress(`raw (before): ${rawBefore.pages} pages, ${rawBefore.pagesPerS.toFixed(0)} pages/s`);
    const passes: [number, CrawlPassResult][] = [];
    for (const workers of workerCounts) {
      const r = await crawlPass(ctx, site, {
        workers,
        concurrency,
        seeds: plan.seeds,
        maxdepth,
        sitePid: site.pid,
        label: `crawl ${workers}w`,
      });
      if (r.timedOut) ctx.note(`crawl with ${workers} worker(s) hit the timeout`);
      if (r.messages !== rawBefore.pages)
        ctx.note(`crawl with ${workers} worker(s): ${r.messages} page messages vs ${rawBefore.pages} raw pages`);
      passes.push([workers, r]);
    }
    // Raw again after the crawls: on a shared machine the load moves, and the mean of both is the reference.
    const rawAfter = await rawOnce();
    ctx.progress(`raw (after): ${rawAfter.pages} pages, ${rawAfter.pagesPerS.toFixed(0)} pages/s`);
    const raw = (rawBefore.pagesPerS + rawAfter.pagesPerS) / 2;
    Object.assign(out, {
      pages: rawBefore.pages,
      raw_pages_per_s: round(raw, 1),
      raw_before_pages_per_s: round(rawBefore.pagesPerS, 1),
      raw_after_pages_per_s: round(rawAfter.pagesPerS, 1),
    });
    for (const [workers, r] of passes) {
      Object.assign(out, passNumbers(r, `${workers}w`, raw));
      out.throttle ??= r.throttle;
    }
  } finally {
    await site.close();
  }
  return out;
}
