/**
 * Crawlee benchmark (issue 8): Crawlee's CheerioCrawler (bench/lib/crawlee.ts) and our crawl through the
 * real path with 1 worker (bench/lib/crawl-pass.ts) on the SAME URL set at the same concurrency, plus the
 * raw limit (bench/lib/raw.ts, mean of a pass first and one last) for scale, all in this run.
 *
 * The site here has one host, 127.0.0.1: Crawlee's HTTP client (got-scraping) resolves names with the
 * system resolver, which knows nothing of the fixture's `*.test` names, while our crawler and the raw loop
 * resolve through a host map. Serving every page under 127.0.0.1 gives all three the identical URL set with
 * no resolver tricks; it costs our crawler nothing (the throttle is wide open; one domain still allows 1000
 * leases/s). Each crawler gets an unmeasured warm-up crawl of the whole site first (BENCH_WARMUP_SEEDS, BENCH_WARMUP_MAXDEPTH).
 *
 * Sizes: BENCH_CRAWLEE_PAGES (5000; Crawlee runs several times below raw, so its crawl is the long one),
 * BENCH_LINKS, BENCH_PAGE_BYTES, BENCH_SITE_LATENCY_MS, BENCH_CONCURRENCY.
 */

import { startSiteProcess } from '../../localstack/site/process.ts';
import { CpuMeter } from '../lib/cpu.ts';
import { crawlPass, passNumbers } from '../lib/crawl-pass.ts';
import { crawleeCrawl } from '../lib/crawlee.ts';
import { envInt } from '../lib/env.ts';
import { rawPass, siteRawInputs } from '../lib/raw.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import {
  benchConcurrency,
  benchSiteOptions,
  benchWarmup,
  benchWarmupMaxdepth,
  recordSiteInputs,
  seedPlan,
} from '../lib/site-config.ts';
import { round } from '../lib/timing.ts';

export const description = "Crawlee's CheerioCrawler vs our crawl (1 worker) on the same URL set and concurrency";

export const targets: Target[] = [{ metric: 'ours_vs_crawlee', op: '>=', value: 4, label: 'ours/Crawlee' }];

export const headline: [string, string][] = [
  ['pages', 'pages'],
  ['raw_pages_per_s', 'raw pages/s'],
  ['crawlee_pages_per_s', 'Crawlee pages/s'],
  ['ours_pages_per_s', 'ours pages/s (1 worker)'],
  ['ours_vs_crawlee', 'ours/Crawlee'],
  ['raw_vs_crawlee', 'raw/Crawlee'],
  ['crawlee_cpu_ms_per_page', 'Crawlee CPU ms/page'],
];

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const options = { ...benchSiteOptions(['127.0.0.1']), pages: envInt('BENCH_CRAWLEE_PAGES', 5000) };
  const concurrency = benchConcurrency();
  const site = await startSiteProcess(options);
  const out: Numbers = { concurrency };
  try {
    const plan = seedPlan(site);
    recordSiteInputs(ctx, options, plan);
    ctx.input('concurrency', concurrency);
    ctx.input('crawlee', '@crawlee/cheerio 3.18.1 CheerioCrawler, MemoryStorage without persistence');
    ctx.note('one host (127.0.0.1) for all three crawlers: the identical URL set (see the scenario doc)');
    ctx.note('pages/s = (pages - 1) / (last - first page); Crawlee pages counted as its requestHandler ends');

    const seeds = plan.seeds.map(site.url);
    const warm = benchWarmup(site.pages, plan.seeds);
    ctx.progress(`${plan.reachable} pages from ${seeds.length} seeds at maxdepth ${plan.maxdepth}`);

    const rawOnce = () => rawPass({ ...siteRawInputs(site, plan, warm, concurrency, ctx.progress), client: 'undici' });
    ctx.progress('raw (bare undici + extractLinks)');
    const rawBefore = await rawOnce();
    ctx.progress(`raw (before): ${rawBefore.pages} pages, ${rawBefore.pagesPerS.toFixed(0)} pages/s`);

    const warmDepth = benchWarmupMaxdepth(plan.maxdepth);
    ctx.progress(`Crawlee: warm-up crawl (maxdepth ${warmDepth} from ${warm.from}, unmeasured)`);
    await crawleeCrawl({
      seeds: warm.seeds.map(site.url),
      maxdepth: warmDepth,
      concurrency,
      progress: () => {},
    });
    ctx.progress(`Crawlee: crawling, concurrency ${concurrency}`);
    const meter = new CpuMeter(() => ({ site: [site.pid] }));
    meter.start();
    const crawlee = await crawleeCrawl({ seeds, maxdepth: plan.maxdepth, concurrency, progress: ctx.progress });
    const cpu = meter.stop();
    ctx.progress(`Crawlee: ${crawlee.pages} pages, ${crawlee.pagesPerS.toFixed(0)} pages/s, ${crawlee.failed} failed`);

    const ours = await crawlPass(ctx, site, {
      workers: 1,
      concurrency,
      seeds: plan.seeds,
      maxdepth: plan.maxdepth,
      sitePid: site.pid,
      label: 'ours 1w',
    });
    const rawAfter = await rawOnce();
    ctx.progress(`raw (after): ${rawAfter.pages} pages, ${rawAfter.pagesPerS.toFixed(0)} pages/s`);
    const raw = (rawBefore.pagesPerS + rawAfter.pagesPerS) / 2;
    const mine = passNumbers(ours, '1w', raw);
    Object.assign(out, {
      pages: rawBefore.pages,
      raw_pages_per_s: round(raw, 1),
      raw_before_pages_per_s: round(rawBefore.pagesPerS, 1),
      raw_after_pages_per_s: round(rawAfter.pagesPerS, 1),
      crawlee_pages: crawlee.pages,
      crawlee_failed: crawlee.failed,
      crawlee_pages_per_s: round(crawlee.pagesPerS, 1),
      crawlee_cpu_ms_per_page: round(((cpu.bench ?? 0) * 1000) / Math.max(1, crawlee.pages), 3),
      ours_pages: ours.messages,
      ours_pages_per_s: round(ours.pagesPerS, 1),
      ours_worker_cpu_ms_per_page: mine.worker_cpu_ms_per_page_1w as number,
      ours_vs_crawlee: round(ours.pagesPerS / crawlee.pagesPerS, 3),
      raw_vs_crawlee: round(raw / crawlee.pagesPerS, 3),
      ours_vs_raw: round(ours.pagesPerS / raw, 3),
    });
  } finally {
    await site.close();
  }
  return out;
}
