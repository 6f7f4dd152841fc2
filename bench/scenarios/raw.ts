/**
 * Raw benchmark (issue 8): the physical limit of crawling the fixture site on this machine — fetch + the
 * crawler's link extraction (of the pages below maxdepth, whose links are followed) in a tight loop at the crawl's concurrency, breadth first from page 0 to the
 * depth that reaches every page, no Redis, no Kafka, no politeness (bench/lib/raw.ts). The site runs in
 * its own process (localstack/site/process.ts).
 *
 * Two passes: bare undici (the headline, the reference of the `crawl` ratios) and the crawler's own
 * UndiciFetcher (what the fetcher adds).
 *
 * Page shapes: BENCH_PAGE_SHAPES (`article` by default; `article,plain` runs both, the plain numbers prefixed
 * `plain_`). Sizes: BENCH_PAGES, BENCH_LINKS, BENCH_PAGE_BYTES, BENCH_PLAIN_PAGE_BYTES, BENCH_SITE_LATENCY_MS, BENCH_CONCURRENCY
 * (bench/lib/site-config.ts); BENCH_RAW_BUDGET_S caps each pass (default 300).
 */

import { startSiteProcess } from '../../localstack/site/process.ts';
import { CpuMeter } from '../lib/cpu.ts';
import { envInt } from '../lib/env.ts';
import { type RawClient, type RawResult, rawPass, siteRawInputs } from '../lib/raw.ts';
import type { Numbers, ScenarioContext } from '../lib/scenario.ts';
import {
  benchConcurrency,
  benchPageShapes,
  benchSiteOptions,
  benchWarmup,
  benchWarmupMaxdepth,
  type PageShape,
  recordSiteInputs,
  seedPlan,
  shapePrefix,
} from '../lib/site-config.ts';
import { round } from '../lib/timing.ts';

export const description = 'Physical limit: undici fetch + extractLinks in a tight loop (no Redis, no Kafka)';

export const headline: [string, string][] = [
  ['pages', 'pages'],
  ['concurrency', 'concurrency'],
  ['pages_per_s', 'pages/s (undici)'],
  ['fetcher_pages_per_s', 'pages/s (UndiciFetcher)'],
  ['client_cpu_ms_per_page', 'client CPU ms/page'],
];

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const out: Numbers = {};
  for (const shape of benchPageShapes(['article'])) {
    const prefix = shapePrefix(shape);
    for (const [k, v] of Object.entries(await runShape(ctx, shape))) out[`${prefix}${k}`] = v;
  }
  return out;
}

async function runShape(ctx: ScenarioContext, shape: PageShape): Promise<Numbers> {
  const options = benchSiteOptions(undefined, shape);
  const concurrency = benchConcurrency();
  const budgetS = envInt('BENCH_RAW_BUDGET_S', 300);
  const site = await startSiteProcess(options);
  const out: Numbers = { concurrency };
  try {
    const plan = seedPlan(site);
    const { maxdepth, reachable } = plan;
    const warm = benchWarmup(site.pages, plan.seeds);
    if (shape === 'article') recordSiteInputs(ctx, options, plan);
    else ctx.input(`${shape}_page_bytes`, options.pageBytes ?? 0);
    ctx.input('concurrency', concurrency);
    ctx.note(
      `site served by a child process; pages/s = (pages - 1) / (last page - first page); each pass after an unmeasured warm-up crawl from ${warm.from} to maxdepth ${benchWarmupMaxdepth(maxdepth)} (BENCH_WARMUP_MAXDEPTH)`,
    );
    const pass = async (client: RawClient): Promise<RawResult & { cpu: Record<string, number> }> => {
      ctx.progress(
        `raw/${client} (${shape} pages): ${reachable} pages from ${plan.seeds.length} seeds at maxdepth ${maxdepth}, concurrency ${concurrency}`,
      );
      const meter = new CpuMeter(() => ({ site: [site.pid] }));
      const r = await rawPass({
        ...siteRawInputs(site, plan, warm, concurrency, ctx.progress),
        beforeMeasure: () => meter.start(),
        client,
        budgetS,
      });
      const cpu = meter.stop();
      ctx.progress(
        `  ${r.pages} pages in ${r.seconds.toFixed(1)} s = ${r.pagesPerS.toFixed(0)} pages/s, ${r.errors} errors${r.errors ? ` (e.g. ${r.errorSamples.join('; ')})` : ''}, cpu ${JSON.stringify(cpu)}`,
      );
      if (r.timedOut) ctx.note(`raw/${client} stopped by the ${budgetS} s budget`);
      return { ...r, cpu };
    };
    const bare = await pass('undici');
    const own = await pass('fetcher');
    Object.assign(out, {
      pages: bare.pages,
      errors: bare.errors,
      seconds: round(bare.seconds, 2),
      pages_per_s: round(bare.pagesPerS, 1),
      mb_per_s: round(bare.bytes / 1e6 / bare.seconds, 1),
      links_per_page: round(bare.links / bare.pages, 1),
      client_cpu_ms_per_page: round(((bare.cpu.bench ?? 0) * 1000) / bare.pages, 3),
      site_cpu_ms_per_page: round(((bare.cpu.site ?? 0) * 1000) / bare.pages, 3),
      fetcher_pages: own.pages,
      fetcher_errors: own.errors,
      fetcher_pages_per_s: round(own.pagesPerS, 1),
      fetcher_client_cpu_ms_per_page: round(((own.cpu.bench ?? 0) * 1000) / own.pages, 3),
      fetcher_vs_undici: round(own.pagesPerS / bare.pagesPerS, 3),
    });
  } finally {
    await site.close();
  }
  return out;
}
