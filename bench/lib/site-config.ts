/**
 * The fixture site the throughput scenarios (raw, crawl, profile) share, sized by environment variables:
 * BENCH_PAGES (5000: each scenario finishes in 1–2 min on a 2-core machine; the full size is
 * BENCH_PAGES=20000), BENCH_LINKS (20), BENCH_PAGE_BYTES (30000; BENCH_PLAIN_PAGE_BYTES (2000) for the light
 * `plain` shape), BENCH_SITE_LATENCY_MS (0), and the
 * concurrency every crawler under test gets, BENCH_CONCURRENCY (16).
 */
import type { SiteGeometry, SiteOptions } from '../../localstack/site/site.ts';
import { envInt, envNumber } from './env.ts';
import type { ScenarioContext } from './scenario.ts';

export function benchSiteOptions(hosts?: string[], shape: PageShape = 'article'): SiteOptions {
  return {
    pages: envInt('BENCH_PAGES', 5000),
    links: envInt('BENCH_LINKS', 20),
    pageBytes: shape === 'article' ? envInt('BENCH_PAGE_BYTES', 30_000) : envInt('BENCH_PLAIN_PAGE_BYTES', 2000),
    latencyMs: envNumber('BENCH_SITE_LATENCY_MS', 0),
    template: shape,
    ...(hosts ? { hosts } : {}),
  };
}

/**
 * Page shapes (the site's templates): `article` (~BENCH_PAGE_BYTES, ~400 nodes: the default) and `plain`
 * (a light page: one paragraph of BENCH_PLAIN_PAGE_BYTES (2000) filler and the links in a list, ~50 nodes),
 * where the fixed per-page cost of Kafka and Redis is not hidden behind parsing.
 */
export type PageShape = 'article' | 'plain';

/** Metric prefix of a shape: none for article (the numbers of issue 8), `<shape>_` otherwise. */
export function shapePrefix(shape: PageShape): string {
  return shape === 'article' ? '' : `${shape}_`;
}

/** The shapes BENCH_PAGE_SHAPES names (`article,plain`), else `fallback`. */
export function benchPageShapes(fallback: PageShape[]): PageShape[] {
  const raw = process.env.BENCH_PAGE_SHAPES;
  if (!raw) return fallback;
  const list = raw.split(',').map((s) => s.trim());
  for (const s of list)
    if (s !== 'article' && s !== 'plain') throw new Error(`BENCH_PAGE_SHAPES: article or plain (got ${s})`);
  return list as PageShape[];
}

export function benchConcurrency(): number {
  return envInt('BENCH_CONCURRENCY', 16);
}

/** A crawl request's largest maxdepth (lib/schemas/crawl.schema.json). */
export const MAX_DEPTH = 3;

/**
 * The maxdepth of the unmeasured warm-up crawl ({@link benchWarmup}) that every system (raw loop, ours, each peer) runs before
 * its measured crawl: BENCH_WARMUP_MAXDEPTH (3), at most the measured crawl's. A shallower warm-up leaves a JIT cold
 * for the measured crawl, while a fleet's bill is its steady state (bench/PROFILE.md, "Method").
 */
export function benchWarmupMaxdepth(maxdepth: number): number {
  const raw = process.env.BENCH_WARMUP_MAXDEPTH;
  const v = raw === undefined || raw === '' ? MAX_DEPTH : Number(raw);
  if (!Number.isInteger(v) || v < 0 || v > MAX_DEPTH)
    throw new Error(`BENCH_WARMUP_MAXDEPTH: an integer from 0 to ${MAX_DEPTH} (got ${raw})`);
  return Math.min(v, maxdepth);
}

/** Where the unmeasured warm-up crawl starts ({@link benchWarmup}). */
export interface Warmup {
  /** Its seed pages. */
  seeds: number[];
  /** How progress lines and notes name them: `the measured crawl's 5 seed(s)`, `page 1`, `4 pages`. */
  from: string;
}

/**
 * The pages the unmeasured warm-up crawl starts from, the same for every system (each to {@link benchWarmupMaxdepth}):
 * by default the measured crawl's own seeds (`measured`), so every system crawls the whole site once before it is
 * measured, and a JIT (V8's: our workers, Crawlee, the raw loop) has compiled its hot paths as it has after minutes
 * in a fleet; a warm-up that reaches only part of the site leaves TurboFan compilations in the measured crawl.
 * BENCH_WARMUP_SEEDS=n: n evenly spaced pages from page 1 instead (1: page 1 alone).
 */
export function benchWarmup(pages: number, measured: readonly number[]): Warmup {
  const raw = process.env.BENCH_WARMUP_SEEDS;
  if (raw === undefined || raw === '')
    return { seeds: [...measured], from: `the measured crawl's ${measured.length} seed(s)` };
  const count = Number(raw);
  if (!Number.isInteger(count) || count < 1 || count > Math.max(1, pages))
    throw new Error(`BENCH_WARMUP_SEEDS: an integer from 1 to the site's pages (${pages}) (got ${raw})`);
  const seeds = Array.from({ length: count }, (_, i) => (1 + Math.floor((i * pages) / count)) % Math.max(1, pages));
  return { seeds, from: count === 1 ? 'page 1' : `${count} pages` };
}

export interface SeedPlan {
  /** Seed pages, evenly spaced over the site. */
  seeds: number[];
  maxdepth: number;
  /** Pages reachable from the seeds within maxdepth (seeds included). */
  reachable: number;
}

/**
 * The seeds every throughput scenario crawls from: the fewest evenly spaced seeds (1, 2, 3, 4, 5, 8, 10,
 * 16, 20, ...) whose pages within maxdepth 3 (the schema's maximum) cover the whole site, so the crawl is
 * the whole site and the same page set for every crawler. BENCH_SEEDS forces a count.
 */
export function seedPlan(site: Pick<SiteGeometry, 'reachable' | 'pages'>): SeedPlan {
  const counts = process.env.BENCH_SEEDS
    ? [envInt('BENCH_SEEDS', 1)]
    : [1, 2, 3, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 160, 200];
  let plan: SeedPlan = { seeds: [0], maxdepth: MAX_DEPTH, reachable: 0 };
  for (const count of counts) {
    const seeds = Array.from({ length: Math.min(count, site.pages) }, (_, i) => Math.floor((i * site.pages) / count));
    const pages = new Set<number>();
    for (const s of seeds) for (const n of site.reachable(s, MAX_DEPTH)) pages.add(n);
    plan = { seeds, maxdepth: MAX_DEPTH, reachable: pages.size };
    if (pages.size === site.pages) break;
  }
  return plan;
}

/** Records the site's inputs on the results file. */
export function recordSiteInputs(ctx: ScenarioContext, options: SiteOptions, plan: SeedPlan): void {
  ctx.input('site_pages', options.pages ?? 0);
  ctx.input('site_links_per_page', options.links ?? 0);
  ctx.input('site_page_bytes', options.pageBytes ?? 0);
  ctx.input('site_latency_ms', options.latencyMs ?? 0);
  ctx.input('site_template', options.template ?? 'plain');
  ctx.input('site_hosts', (options.hosts ?? ['site-a.test', 'site-b.test', 'www.site-c.test']).join(','));
  ctx.input('seeds', plan.seeds.length);
  ctx.input('maxdepth', plan.maxdepth);
  ctx.input('pages_reachable', plan.reachable);
}
