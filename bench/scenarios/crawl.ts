/**
 * Crawl benchmark (issues 8 and 15): the fixture site crawled end to end through the real path — seed fed to
 * Kafka `<p>.incoming` → kafka-monitor handler (local MSK source) → Redis frontier → crawler worker
 * processes (functions/crawler/main.ts) → `<p>.crawled_firehose` — with 1 and 2 workers, against the raw
 * limit measured in the same run on the same site (bench/lib/raw.ts, bare undici), and against the peers
 * (bench/lib/peers.ts) on the same site, seeds, maxdepth and concurrency: Crawlee's CheerioCrawler, Scrapy,
 * and scrapy-redis on the bench's Redis.
 *
 * - Site: BENCH_PAGES (5000; 20000 in the issue) pages with BENCH_LINKS (20) links over three host names
 *   resolved to 127.0.0.1 through the site's host map (our crawler's CRAWLER_HOST_MAP, the raw loop's
 *   lookup, Crawlee's got `dnsLookup`, Scrapy's TWISTED_DNS_RESOLVER), in its own process; crawled from the
 *   fewest evenly spaced seeds that reach every page within maxdepth 3 (the schema's maximum).
 * - Page shapes, BENCH_PAGE_SHAPES (article,plain): `article` pages of ~BENCH_PAGE_BYTES (30000, ~400 nodes)
 *   and light `plain` pages (~3.5 KB, ~50 nodes: bench/lib/site-config.ts), where the fixed per-page cost of
 *   Kafka and Redis shows. Each shape is a full round (raw, ours, peers, raw); article numbers carry no
 *   prefix, the others `<shape>_`.
 * - Throttle wide open: moderated, BENCH_CRAWL_HITS (100000) hits per 1 s window. Moderated spacing is
 *   ceil(1000 / hits) ms = 1 ms per domain (≤ 1000 pages/s per domain, far above what a worker does);
 *   BENCH_CRAWL_MODERATED=false uses the sliding-window log instead, whose state is O(hits) per lease.
 * - pages/s: from the first page to the last (ours: page messages' Kafka CreateTime; peers and raw: as each
 *   page completes), after an unmeasured warm-up crawl; each worker count gets a fresh cluster (topics, key
 *   prefix). Redis: bench/lib/redis.ts.
 * - CPU ms/page per process kind from /proc: ours `worker` + `redis` + `kafka` (the broker), a peer's
 *   own process + `redis` (scrapy-redis). "Per core" = that sum: a peer's CPU ms/page over ours (1 worker),
 *   so ≥ 3 means we crawl 3× the pages per CPU second. The site's CPU and the bench's are not counted.
 * - raw reference: the mean of a raw pass before and one after the crawls (a shared machine's load moves).
 * - publish floor, BENCH_FLOOR (true): after the first raw pass, the raw loop with the crawler's fetcher that also
 *   builds each page's message and produces it to Kafka as a worker does (bench/lib/floor.ts): `floor_*` numbers,
 *   `floor_vs_raw_cpu` and `worker_vs_floor_cpu_1w`. It shows what publishing costs any crawler that keeps the
 *   contract, and what our frontier and worker add on top.
 * - Rounds: BENCH_CRAWL_ROUNDS (3) full rounds per shape; every number is the median over the rounds (ratios taken
 *   within each round), with each round's value in `<metric>_rounds` (bench/lib/rounds.ts): a single round decides
 *   nothing on a shared machine. The DOM pass runs in the first.
 * - BENCH_CRAWL_WORKERS (1,2), BENCH_CONCURRENCY (16 per worker and per peer), BENCH_CRAWL_TIMEOUT_S (600),
 *   BENCH_PEERS (crawlee,scrapy,scrapy-redis; `false` or `none` skips them).
 * - The cost of a DOM (issue 17): with BENCH_DOM_SPIDER (true), one more 1-worker pass crawls through the example
 *   plugin spider `products` (examples/json-ld-products, via CRAWLER_PLUGINS), which builds a cheerio document on
 *   every page; `dom_worker_cpu_ms_extra_per_page` is its worker CPU per page above the `link` spider's.
 * - Compression (issue 33), BENCH_CRAWL_COMPRESSION (`none,gzip`: none, the local default, and gzip, the AWS fleet's,
 *   cdk/runtime-env.ts; `zstd` may be added): the passes above run with KAFKA_COMPRESSION=none; each other codec
 *   gets one more 1-worker pass per round (bench/lib/crawl-codecs.ts): `<codec>_bytes_per_page` (the firehose's log
 *   growth on the broker per page: bytes on the wire and on disk; `bytes_per_page_1w` for none),
 *   `<codec>_compression_ratio`, `<codec>_worker_cpu_ms_per_page`, `<codec>_kafka_cpu_ms_per_page`,
 *   `<codec>_cpu_ms_per_page` (worker + Redis + Kafka) and `<codec>_cpu_ms_extra_per_page` over none. The bytes need
 *   the broker of this configuration's services dir (CRAWL_SERVICES_DIR): for a broker started elsewhere they are
 *   left out (and its CPU, without its pid, reads 0).
 */

import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DELIVERIES_PER_FETCH } from '../../lib/crawl/crawler/delivery.ts';
import type { KafkaCompression } from '../../lib/kafka/codecs.ts';
import { startSiteProcess } from '../../localstack/site/process.ts';
import { CpuMeter } from '../lib/cpu.ts';
import { codecHeadline, codecNumbers, codecRows, codecWithinRound, crawlCodecs } from '../lib/crawl-codecs.ts';
import { type CrawlPassResult, crawlPass, passNumbers } from '../lib/crawl-pass.ts';
import { envBool, envInt, envIntList } from '../lib/env.ts';
import { floorRun } from '../lib/floor.ts';
import { PEERS, type PeerName, type PeerResult, runPeer } from '../lib/peers.ts';
import { parseHostMap, rawPass, siteRawInputs } from '../lib/raw.ts';
import { mergeRounds } from '../lib/rounds.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import {
  benchConcurrency,
  benchPageShapes,
  benchSiteOptions,
  benchWarmup,
  benchWarmupMaxdepth,
  MAX_DEPTH,
  type PageShape,
  recordSiteInputs,
  seedPlan,
  shapePrefix,
} from '../lib/site-config.ts';
import { round } from '../lib/timing.ts';

export const description =
  'End-to-end crawl (Kafka → kafka-monitor → Redis → crawler workers → Kafka) vs raw, Crawlee, Scrapy, scrapy-redis';

const SHAPES = benchPageShapes(['article', 'plain']);
/** The codecs crawled besides none (BENCH_CRAWL_COMPRESSION). */
const CODECS = crawlCodecs();

/** Metric stem of a peer (`scrapy-redis` → `scrapy_redis`). */
const stem = (peer: PeerName) => peer.replace('-', '_');

/** The plugin the DOM pass loads (BENCH_DOM_SPIDER): builds a cheerio document on every HTML page. */
const DOM_PLUGIN = fileURLToPath(new URL('../../examples/json-ld-products/products.ts', import.meta.url));

/** Per-core targets of issue 15: our pages per CPU second over each peer's. */
const PER_CORE: [PeerName, number, string][] = [
  ['crawlee', 3, 'Crawlee'],
  ['scrapy', 4, 'Scrapy'],
  ['scrapy-redis', 6, 'scrapy-redis'],
];

/** Issue 15's targets, on every page shape. */
export const targets: Target[] = SHAPES.flatMap((shape): Target[] => {
  const p = shapePrefix(shape);
  const t = (metric: string, op: Target['op'], value: number, label: string): Target => ({
    metric: `${p}${metric}`,
    op,
    value,
    label: `${label} (${shape})`,
  });
  return [
    t('worker_vs_raw_cpu_1w', '<=', 1.5, 'worker CPU / raw CPU'),
    t('kafka_cpu_ms_per_page_1w', '<=', 0.3, 'Kafka CPU ms/page'),
    t('redis_cpu_ms_per_page_1w', '<=', 0.2, 'Redis CPU ms/page'),
    t('ratio_1w', '>=', 0.6, 'crawl/raw pages/s (1 worker)'),
    t('speedup_2w', '>', 1, '2 workers / 1 worker pages/s'),
    t('worker_peak_rss_mb_1w', '<=', 300, 'worker peak RSS MiB'),
    ...PER_CORE.map(([peer, value, label]) => t(`percore_vs_${stem(peer)}`, '>=', value, `per core vs ${label}`)),
  ];
});

/** Ratios of one round's own numbers (the medians of the rounds are taken of these, not recomputed from medians). */
function withinRound(n: Numbers): Numbers {
  const ratio = (a: unknown, b: unknown): number | undefined =>
    typeof a === 'number' && typeof b === 'number' && b > 0 ? round(a / b, 3) : undefined;
  const out: Numbers = {};
  const cpu = ratio(n.worker_cpu_ms_per_page_1w, n.raw_cpu_ms_per_page);
  if (cpu !== undefined) out.worker_vs_raw_cpu_1w = cpu;
  const vsFloor = ratio(n.worker_cpu_ms_per_page_1w, n.floor_cpu_ms_per_page);
  if (vsFloor !== undefined) out.worker_vs_floor_cpu_1w = vsFloor;
  const floor = ratio(n.floor_cpu_ms_per_page, n.raw_cpu_ms_per_page);
  if (floor !== undefined) out.floor_vs_raw_cpu = floor;
  const floorPace = ratio(n.floor_pages_per_s, n.raw_pages_per_s);
  if (floorPace !== undefined) out.floor_ratio = floorPace;
  const speedup = ratio(n.pages_per_s_2w, n.pages_per_s_1w);
  if (speedup !== undefined) out.speedup_2w = speedup;
  return out;
}

export const headline: [string, string][] = SHAPES.flatMap((shape): [string, string][] => {
  const p = shapePrefix(shape);
  const s = shape === 'article' ? '' : ` (${shape})`;
  return [
    [`${p}pages`, `pages${s}`],
    [`${p}raw_pages_per_s`, `raw pages/s${s}`],
    [`${p}pages_per_s_1w`, `pages/s 1 worker${s}`],
    [`${p}ratio_1w`, `ratio 1w/raw${s}`],
    [`${p}pages_per_s_2w`, `pages/s 2 workers${s}`],
    [`${p}speedup_2w`, `2w/1w pages/s${s}`],
    [`${p}cpu_ms_per_page_1w`, `CPU ms/page (worker+Redis+Kafka)${s}`],
    [`${p}raw_cpu_ms_per_page`, `raw CPU ms/page${s}`],
    [`${p}worker_vs_raw_cpu_1w`, `worker/raw CPU${s}`],
    [`${p}floor_cpu_ms_per_page`, `publish floor CPU ms/page${s}`],
    [`${p}floor_vs_raw_cpu`, `publish floor/raw CPU${s}`],
    [`${p}worker_vs_floor_cpu_1w`, `worker/publish floor CPU${s}`],
    [`${p}worker_peak_rss_mb_1w`, `worker peak RSS MiB${s}`],
    ...codecHeadline(p, s, CODECS),
    [`${p}pages_per_s_dom_1w`, `pages/s 1 worker, DOM plugin spider${s}`],
    [`${p}dom_worker_cpu_ms_extra_per_page`, `DOM extra worker CPU ms/page${s}`],
    ...PEERS.flatMap((peer): [string, string][] => [
      [`${p}${stem(peer)}_pages_per_s`, `${peer} pages/s${s}`],
      [`${p}${stem(peer)}_total_cpu_ms_per_page`, `${peer} CPU ms/page${s}`],
      [`${p}${stem(peer)}_peak_rss_mb`, `${peer} peak RSS MiB${s}`],
      [`${p}percore_vs_${stem(peer)}`, `per core vs ${peer}${s}`],
    ]),
  ];
});

/** BENCH_PEERS: the peers to run (all by default; `false`/`none`/`0` for none). */
function peersWanted(): PeerName[] {
  const raw = process.env.BENCH_PEERS?.trim().toLowerCase();
  if (raw === undefined || raw === '' || ['1', 'true', 'yes', 'on', 'all'].includes(raw)) return [...PEERS];
  if (['0', 'false', 'no', 'off', 'none'].includes(raw)) return [];
  const list = raw.split(',').map((s) => s.trim());
  for (const p of list)
    if (!PEERS.includes(p as PeerName)) throw new Error(`BENCH_PEERS: ${PEERS.join(', ')} or false (got ${p})`);
  return list as PeerName[];
}

function peerNumbers(r: PeerResult, raw: number, ours: CrawlPassResult | undefined, oursMs: number): Numbers {
  const s = stem(r.peer);
  const per = (v: number | undefined) => round(((v ?? 0) * 1000) / Math.max(1, r.pages), 3);
  const total = per((r.cpu.crawler ?? 0) + (r.cpu.redis ?? 0));
  const out: Numbers = {
    [`${s}_pages`]: r.pages,
    [`${s}_ok`]: r.ok,
    [`${s}_failed`]: r.failed,
    [`${s}_seconds`]: round(r.seconds, 2),
    [`${s}_pages_per_s`]: round(r.pagesPerS, 1),
    [`${s}_vs_raw`]: round(r.pagesPerS / raw, 3),
    [`${s}_crawler_cpu_ms_per_page`]: per(r.cpu.crawler),
    [`${s}_total_cpu_ms_per_page`]: total,
    [`${s}_site_cpu_ms_per_page`]: per(r.cpu.site),
    [`${s}_peak_rss_mb`]: r.peakRssMb,
  };
  if (r.peer === 'scrapy-redis') out[`${s}_redis_cpu_ms_per_page`] = per(r.cpu.redis);
  if (ours) {
    out[`ours_vs_${s}`] = round(ours.pagesPerS / r.pagesPerS, 3);
    out[`percore_vs_${s}`] = oursMs > 0 ? round(total / oursMs, 3) : Number.NaN;
  }
  return out;
}

/** One line per system: pages/s, vs raw, CPU ms/page per process kind, peak RSS, per core. */
function printTable(ctx: ScenarioContext, title: string, n: Numbers, peers: readonly PeerName[]): void {
  const f = (v: number | string | undefined, d = 2) => (typeof v === 'number' ? v.toFixed(d) : '–').padStart(8);
  const rows = [
    `${'system'.padEnd(16)} ${'pages/s'.padStart(8)} ${'vs raw'.padStart(8)} ${'crawler'.padStart(8)} ${'redis'.padStart(8)} ${'kafka'.padStart(8)} ${'total'.padStart(8)} ${'RSS MiB'.padStart(8)} ${'per core'.padStart(8)}`,
    `${'raw'.padEnd(16)} ${f(n.raw_pages_per_s, 0)} ${f(1)} ${f(n.raw_cpu_ms_per_page)} ${f(undefined)} ${f(undefined)} ${f(n.raw_cpu_ms_per_page)} ${f(undefined)} ${f(undefined)}`,
  ];
  if (n.floor_pages_per_s !== undefined) {
    rows.push(
      `${'publish floor'.padEnd(16)} ${f(n.floor_pages_per_s, 0)} ${f(n.floor_ratio)} ${f(n.floor_cpu_ms_per_page)} ${f(undefined)} ${f(n.floor_kafka_cpu_ms_per_page)} ${f(n.floor_total_cpu_ms_per_page)} ${f(undefined)} ${f(undefined)}`,
    );
  }
  for (const w of ['1w', '2w']) {
    if (n[`pages_per_s_${w}`] === undefined) continue;
    rows.push(
      `${`crawl-cluster ${w}`.padEnd(16)} ${f(n[`pages_per_s_${w}`], 0)} ${f(n[`ratio_${w}`])} ${f(n[`worker_cpu_ms_per_page_${w}`])} ${f(n[`redis_cpu_ms_per_page_${w}`])} ${f(n[`kafka_cpu_ms_per_page_${w}`])} ${f(n[`cpu_ms_per_page_${w}`])} ${f(n[`worker_peak_rss_mb_${w}`], 0)} ${f(w === '1w' ? 1 : undefined)}`,
    );
  }
  for (const peer of peers) {
    const s = stem(peer);
    if (n[`${s}_pages_per_s`] === undefined) continue;
    rows.push(
      `${peer.padEnd(16)} ${f(n[`${s}_pages_per_s`], 0)} ${f(n[`${s}_vs_raw`])} ${f(n[`${s}_crawler_cpu_ms_per_page`])} ${f(peer === 'scrapy-redis' ? n[`${s}_redis_cpu_ms_per_page`] : undefined)} ${f(undefined)} ${f(n[`${s}_total_cpu_ms_per_page`])} ${f(n[`${s}_peak_rss_mb`], 0)} ${f(n[`percore_vs_${s}`])}`,
    );
  }
  ctx.progress(`${title}:`);
  for (const row of [...rows, ...codecRows(n, CODECS)]) ctx.progress(`  ${row}`);
}

/** One round of a shape: raw, ours (1 and 2 workers, the DOM pass in the first round only), the peers, raw again. */
async function runShape(
  ctx: ScenarioContext,
  shape: PageShape,
  peers: PeerName[],
  roundNo: number,
  rounds: number,
): Promise<Numbers> {
  const options = benchSiteOptions(undefined, shape);
  const concurrency = benchConcurrency();
  const workerCounts = envIntList('BENCH_CRAWL_WORKERS', [1, 2]);
  const site = await startSiteProcess(options);
  const out: Numbers = {};
  try {
    const plan = seedPlan(site);
    const warm = benchWarmup(site.pages, plan.seeds);
    const { maxdepth, reachable } = plan;
    if (shape === SHAPES[0] && roundNo === 0) {
      recordSiteInputs(ctx, options, plan);
      ctx.input('warmup_seeds', warm.from);
    }
    ctx.input(`${shapePrefix(shape) || 'article_'}page_bytes`, options.pageBytes ?? 0);
    const label = (s: string) => (rounds > 1 ? `${shape} round ${roundNo + 1}/${rounds}: ${s}` : `${shape}: ${s}`);
    ctx.progress(
      label(
        `raw reference: ${reachable} pages from ${plan.seeds.length} seeds at maxdepth ${maxdepth}, concurrency ${concurrency}`,
      ),
    );
    // What the raw loop and the publish floor crawl: the same seeds, depth and concurrency as every system.
    const crawlInputs = siteRawInputs(site, plan, warm, concurrency, ctx.progress);
    // The raw loop runs in this process: its CPU is this process's (the floor of any crawler's CPU per page).
    const rawOnce = async () => {
      const meter = new CpuMeter(() => ({}));
      const r = await rawPass({ ...crawlInputs, client: 'undici', beforeMeasure: () => meter.start() });
      const cpuMsPerPage = ((meter.stop().bench ?? 0) * 1000) / Math.max(1, r.pages);
      if (r.errors > 0) ctx.note(`${shape}: raw pass: ${r.errors} errors, e.g. ${r.errorSamples.join('; ')}`);
      return { ...r, cpuMsPerPage };
    };
    const rawBefore = await rawOnce();
    ctx.progress(label(`raw (before): ${rawBefore.pages} pages, ${rawBefore.pagesPerS.toFixed(0)} pages/s`));
    // The publish floor (bench/lib/floor.ts): the raw loop with the crawler's fetcher, each page's message built and
    // produced to Kafka as a worker does. Its CPU is this process's; the broker's is counted apart.
    const floorOnce = async () => {
      const {
        result: r,
        cpu,
        published,
        stored,
      } = await floorRun(ctx, (publish, startMeter) =>
        rawPass({
          ...crawlInputs,
          client: 'fetcher',
          publish,
          maxPublishing: concurrency * DELIVERIES_PER_FETCH,
          beforeMeasure: startMeter,
        }),
      );
      if (r.errors > 0 || stored !== published)
        ctx.note(
          `${shape}: publish floor: ${r.errors} errors (${r.errorSamples.join('; ') || 'none'}), ${stored} messages stored of ${published} published`,
        );
      const per = (s: number | undefined) => round(((s ?? 0) * 1000) / Math.max(1, r.pages), 3);
      return { ...r, cpuMsPerPage: per(cpu.bench), kafkaCpuMsPerPage: per(cpu.kafka) };
    };
    if (envBool('BENCH_FLOOR', true)) {
      const floor = await floorOnce();
      ctx.progress(
        label(
          `publish floor: ${floor.pages} pages, ${floor.pagesPerS.toFixed(0)} pages/s, ${floor.cpuMsPerPage} CPU ms/page (+ Kafka ${floor.kafkaCpuMsPerPage})`,
        ),
      );
      if (floor.pages !== rawBefore.pages)
        ctx.note(`${shape}: publish floor: ${floor.pages} pages vs ${rawBefore.pages} raw pages`);
      Object.assign(out, {
        floor_pages_per_s: round(floor.pagesPerS, 1),
        floor_cpu_ms_per_page: floor.cpuMsPerPage,
        floor_kafka_cpu_ms_per_page: floor.kafkaCpuMsPerPage,
        floor_total_cpu_ms_per_page: round(floor.cpuMsPerPage + floor.kafkaCpuMsPerPage, 3),
      });
    }
    const passes: [number, CrawlPassResult][] = [];
    for (const workers of workerCounts) {
      const r = await crawlPass(ctx, site, {
        workers,
        concurrency,
        seeds: plan.seeds,
        maxdepth,
        sitePid: site.pid,
        label: label(`crawl ${workers}w`),
      });
      if (r.timedOut) ctx.note(`${shape}: crawl with ${workers} worker(s) hit the timeout`);
      // The site's pages, not the raw loop's count: the raw loop and the peers also fetch each host's
      // /files/doc.pdf link, which the link spider's default deny_extensions skips (as Scrapy Cluster's does).
      if (r.messages !== reachable)
        ctx.note(
          `${shape}: crawl with ${workers} worker(s): ${r.messages} page messages vs ${reachable} reachable pages`,
        );
      passes.push([workers, r]);
    }
    // The AWS fleet's compression (and any other codec asked for): the 1-worker crawl with the page messages compressed.
    const codecPasses: [KafkaCompression, CrawlPassResult][] = [];
    for (const compression of CODECS) {
      const r = await crawlPass(ctx, site, {
        workers: 1,
        concurrency,
        seeds: plan.seeds,
        maxdepth,
        sitePid: site.pid,
        label: label(`crawl 1w, KAFKA_COMPRESSION=${compression}`),
        compression,
      });
      if (r.messages !== reachable)
        ctx.note(`${shape}: ${compression} crawl: ${r.messages} page messages vs ${reachable} reachable pages`);
      codecPasses.push([compression, r]);
    }
    // The cost of a DOM: the same crawl with 1 worker through a plugin spider that builds a cheerio document on
    // every page (examples/json-ld-products, loaded as a user would, through CRAWLER_PLUGINS).
    let dom: CrawlPassResult | undefined;
    if (envBool('BENCH_DOM_SPIDER', true) && roundNo === 0) {
      dom = await crawlPass(ctx, site, {
        workers: 1,
        concurrency,
        seeds: plan.seeds,
        maxdepth,
        sitePid: site.pid,
        label: label('crawl 1w, DOM plugin spider'),
        spiderid: 'products',
        overrides: { CRAWLER_PLUGINS: DOM_PLUGIN },
      });
      if (dom.messages !== reachable)
        ctx.note(`${shape}: DOM plugin crawl: ${dom.messages} page messages vs ${reachable} reachable pages`);
    }
    const bench = peers.length ? await ctx.redis() : undefined;
    const peerResults: PeerResult[] = [];
    for (const peer of peers) {
      ctx.progress(
        label(
          `${peer}: starting (warm-up crawl, maxdepth ${benchWarmupMaxdepth(maxdepth)} from ${warm.from}, unmeasured)`,
        ),
      );
      let r: PeerResult;
      try {
        r = await runPeer(
          peer,
          {
            seeds: plan.seeds.map(site.url),
            warmSeeds: warm.seeds.map(site.url),
            warmMaxdepth: benchWarmupMaxdepth(maxdepth),
            maxdepth,
            concurrency,
            hostMap: parseHostMap(site.hostMap),
            redisUrl: bench ? `redis://${bench.address}` : undefined,
            redisPrefix: `bench-${peer}-${randomBytes(3).toString('hex')}`,
          },
          { site: [site.pid], ...(peer === 'scrapy-redis' && bench?.pid ? { redis: [bench.pid] } : {}) },
          ctx.progress,
        );
      } catch (error) {
        // A peer that cannot run (no Python, no PyPI for the first venv build...) costs its numbers, not the run.
        ctx.progress(label(`${peer} failed: ${(error as Error).message}`));
        ctx.note(`${shape}: ${peer} failed: ${(error as Error).message.split('\n')[0]}`);
        continue;
      }
      ctx.progress(
        label(
          `${peer}: ${r.pages} pages (${r.ok} ok, ${r.failed} failed), ${r.pagesPerS.toFixed(0)} pages/s, cpu ${JSON.stringify(r.cpu)}, peak RSS ${r.peakRssMb} MiB`,
        ),
      );
      if (r.pages !== rawBefore.pages)
        ctx.note(`${shape}: ${peer} fetched ${r.pages} pages vs ${rawBefore.pages} raw pages (the reachable set)`);
      peerResults.push(r);
    }
    // Raw again after the crawls: on a shared machine the load moves, and the mean of both is the reference.
    const rawAfter = await rawOnce();
    ctx.progress(label(`raw (after): ${rawAfter.pages} pages, ${rawAfter.pagesPerS.toFixed(0)} pages/s`));
    const raw = (rawBefore.pagesPerS + rawAfter.pagesPerS) / 2;
    Object.assign(out, {
      pages: rawBefore.pages,
      pages_reachable: reachable,
      raw_pages_per_s: round(raw, 1),
      raw_before_pages_per_s: round(rawBefore.pagesPerS, 1),
      raw_after_pages_per_s: round(rawAfter.pagesPerS, 1),
      raw_cpu_ms_per_page: round((rawBefore.cpuMsPerPage + rawAfter.cpuMsPerPage) / 2, 3),
    });
    for (const [workers, r] of passes) {
      Object.assign(out, passNumbers(r, `${workers}w`, raw));
      out.throttle ??= r.throttle;
    }
    if (dom) {
      const d = passNumbers(dom, 'dom_1w', raw);
      Object.assign(out, d);
      const linkMs = Number(out.worker_cpu_ms_per_page_1w ?? 0);
      const domMs = Number(out.worker_cpu_ms_per_page_dom_1w ?? 0);
      if (linkMs > 0) out.dom_worker_cpu_ms_extra_per_page = round(domMs - linkMs, 3);
    }
    for (const [compression, r] of codecPasses) Object.assign(out, codecNumbers(compression, r, raw));
    Object.assign(out, codecWithinRound(out, CODECS));
    const one = passes.find(([w]) => w === 1)?.[1];
    const oursMs = Number(out.cpu_ms_per_page_1w ?? 0);
    for (const r of peerResults) Object.assign(out, peerNumbers(r, raw, one, oursMs));
    Object.assign(out, withinRound(out));
    printTable(ctx, label("CPU ms/page by process kind (per core = its total / crawl-cluster 1w's)"), out, peers);
  } finally {
    await site.close();
  }
  return out;
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const peers = peersWanted();
  ctx.input('page_shapes', SHAPES.join(','));
  ctx.input('concurrency_per_worker', benchConcurrency());
  ctx.input('workers', envIntList('BENCH_CRAWL_WORKERS', [1, 2]).join(','));
  ctx.input('peers', peers.join(',') || 'none');
  ctx.input('compression', ['none', ...CODECS].join(','));
  ctx.input(
    'peer_versions',
    '@crawlee/cheerio 3.18.1; Scrapy 2.19.0, scrapy-redis 0.9.1, redis-py 8.1.0 (bench/peers/requirements.txt)',
  );
  ctx.note('pages/s = (pages - 1) / (last - first page), after a warm-up crawl; ours from page message CreateTime');
  ctx.note(
    'raw = bare undici + extractLinks of the pages below maxdepth (those whose links are followed) at the same concurrency (one process): mean of a pass before and after the crawls',
  );
  ctx.note(
    'CPU ms/page from /proc per process kind: ours worker + redis + kafka (the broker), peers their process (+ redis for scrapy-redis); site and bench not counted',
  );
  ctx.note(
    'per core vs X = X CPU ms/page / ours (1 worker); ours publishes every page to Kafka and keeps its frontier in Redis, the peers store nothing (no items)',
  );
  ctx.note('peak RSS = VmHWM of the crawler process(es): our workers (summed), each peer process');
  ctx.note('raw CPU ms/page = this process during the raw passes (the raw loop runs here): the floor for any crawler');
  ctx.note(
    "publish floor (BENCH_FLOOR, bench/lib/floor.ts) = the raw loop with the crawler's fetcher, each page's message built and produced to Kafka as a worker does (page message, linger batching, producer), no Redis: the floor of a crawler that keeps the contract; its CPU is this process's, its broker's is the kafka column. worker/publish floor = what the frontier, politeness and the worker add",
  );
  if (CODECS.length)
    ctx.note(
      `KAFKA_COMPRESSION: the passes run with none (the local default) and ${CODECS.join(', ')} in one more 1-worker pass each (gzip is the AWS fleet's, cdk/runtime-env.ts); bytes/page = the firehose topic's log growth on the broker over the crawl / pages (on the wire = on disk, record batches included); <codec>_compression_ratio = page message bytes / that`,
    );
  ctx.note('Kafka is the shared dev broker (services up): other clients of it while the crawl runs add to its CPU');
  const rounds = envInt('BENCH_CRAWL_ROUNDS', 3);
  ctx.input('rounds', rounds);
  ctx.input('warmup_maxdepth', benchWarmupMaxdepth(MAX_DEPTH));
  ctx.note(
    `every number is the median of ${rounds} round(s) (each a full raw / ours / peers / raw sequence; ratios are taken within a round); each round's values are in <metric>_rounds`,
  );
  const out: Numbers = {};
  for (const shape of SHAPES) {
    const list: Numbers[] = [];
    for (let r = 0; r < rounds; r++) list.push(await runShape(ctx, shape, peers, r, rounds));
    const merged = mergeRounds(list);
    if (rounds > 1) printTable(ctx, `${shape}: medians of ${rounds} rounds`, merged, peers);
    for (const [k, v] of Object.entries(merged)) out[`${shapePrefix(shape)}${k}`] = v;
  }
  return out;
}
