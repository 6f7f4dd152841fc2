/**
 * The real web (issue 32): every system crawls the same simulated internet (localstack/site/internet.ts, served from
 * a child process by internet-server.ts: hosts on their own 127.0.0.x addresses, log-normal latencies with a slow
 * tail, a dead and a drip host, pages of 5 KB to 2 MB, 5xx / 429 / resets, robots.txt per host) from the same seeds to
 * the same maxdepth, in the same run:
 *
 * - `ours_1w`, `ours_2w`: crawl-cluster through the real path (bench/lib/realweb-pass.ts) with DEFAULT settings
 *   (adaptive concurrency), 1 and 2 crawler workers; throttle wide open as in `crawl`;
 * - `ours_fixed_1w`: the same with CRAWLER_CONCURRENCY fixed at BENCH_REALWEB_FIXED (16, yesterday's default; 0 skips);
 * - `raw`: the raw undici + extractLinks loop (bench/lib/raw.ts) at BENCH_REALWEB_RAW_CONCURRENCY (200), with our
 *   fetcher's timeouts (10 s connect/headers/body, 60 s a fetch), no retries, robots.txt not read, and as many
 *   connections per origin as its concurrency;
 * - `raw_capped`: the same loop with BENCH_REALWEB_RAW_PER_ORIGIN (16; 0 skips) connections per origin, the cap our
 *   fetcher keeps (and our per-domain in-flight cap, CRAWLER_DOMAIN_CONCURRENCY): while a crawl's work sits on its few
 *   seed hosts, as in its first seconds, the raw loop at 200 fetches 50+ pages of one host at once, which no polite
 *   crawler does. The target is against `raw`; `ours_1w_vs_raw_capped` says how much of the gap the cap is;
 * - `floor`: the publish floor (bench/lib/floor.ts) on the same internet: the raw loop at the same concurrency with the
 *   crawler's fetcher, each page's message built and produced to Kafka as a worker does (BENCH_REALWEB_FLOOR, on by
 *   default). Its CPU is this process's and the broker's: what any crawler that keeps the wire contract pays per page
 *   without a frontier, so `floor_percore_vs_<peer>` says how far per core a contract-keeping crawler can lead a peer,
 *   and `ours_1w_vs_floor_cpu` what our frontier, politeness and bookkeeping add;
 * - peers (bench/lib/peers.ts) at their own defaults, BENCH_PEERS (default `crawlee`; also `scrapy`,
 *   `scrapy-autothrottle`; `none`): Crawlee's AutoscaledPool, Scrapy's 16 / 8 per domain. Scrapy builds bench/.venv
 *   from PyPI on first use. Their timeouts are theirs (Crawlee 60 s x 4 tries, Scrapy 180 s x 3): on the dead host
 *   their crawls end minutes after ours, which pages/s to 90 % leaves out. Scrapy's measured crawl is closed after
 *   BENCH_REALWEB_PEER_LIMIT_S (300; its CLOSESPIDER_TIMEOUT): at its defaults a dead host's requests hold 8 of its 16
 *   slots for 180 s a try, and with AutoThrottle it had not crawled the 2,900 pages after 16 minutes. Its numbers are
 *   then those of the pages it crawled by the limit (`<peer>_closed_at_limit` 1, and a note).
 *
 * Every crawl starts cold (no warm-up crawl: the ramp is measured; a peer fetches one seed page before its crawl), on
 * a freshly started internet (its 503/429 pages fail on their first request again). Rounds: BENCH_REALWEB_ROUNDS (3),
 * each system once per round, the order reversed every other round; numbers are medians over the rounds
 * (bench/lib/rounds.ts), ratios taken within a round.
 *
 * Per system (bench/lib/ramp.ts): `p90_pages_per_s` (first page to 90 % of its pages: the headline), `pages_per_s`
 * (first to last), `steady_pages_per_s`, `converge_s` (from the first page until the rate reaches 90 % of steady: how
 * fast concurrency converges), `cpu_ms_per_page` (ours: workers + Redis + Kafka; raw: this process; peers: their
 * process), `peak_rss_mb` (VmHWM; ours: the workers summed).
 *
 * Knobs: BENCH_REALWEB_HOSTS (50), BENCH_REALWEB_PAGES (3000), BENCH_REALWEB_LATENCY_MS (300, the median),
 * BENCH_REALWEB_LINKS (20), BENCH_REALWEB_FLOOR (true), BENCH_REALWEB_SEED (1), BENCH_REALWEB_MAXDEPTH (3), BENCH_REALWEB_SEEDS (the fewest
 * evenly spaced good seeds that reach 95 % of the pages), BENCH_REALWEB_WORKERS (1,2), BENCH_REALWEB_RAW_CONCURRENCY
 * (200), BENCH_REALWEB_RAW_PER_ORIGIN (16), BENCH_REALWEB_FIXED (16), BENCH_REALWEB_ROUNDS (3), BENCH_PEERS, BENCH_REALWEB_PEER_LIMIT_S (300),
 * BENCH_CRAWL_TIMEOUT_S (600), BENCH_REALWEB_TIMES_DIR (our passes' page times as JSON there), BENCH_REALWEB_PROFILE_DIR.
 * Smoke: BENCH_REALWEB_HOSTS=10 BENCH_REALWEB_PAGES=300 BENCH_REALWEB_ROUNDS=1 BENCH_PEERS=none.
 */

import { DELIVERIES_PER_FETCH } from '../../lib/crawl/crawler/delivery.ts';
import type { InternetOptions } from '../../localstack/site/internet.ts';
import { type ChildInternet, startInternetProcess } from '../../localstack/site/internet-server.ts';
import { CpuMeter } from '../lib/cpu.ts';
import { envBool, envInt, envIntList, envNumber } from '../lib/env.ts';
import { floorRun } from '../lib/floor.ts';
import { type PeerName, runPeer } from '../lib/peers.ts';
import { type Ramp, ramp } from '../lib/ramp.ts';
import { parseHostMap, rawCrawl } from '../lib/raw.ts';
import { realwebPass } from '../lib/realweb-pass.ts';
import { mergeRounds } from '../lib/rounds.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { round } from '../lib/timing.ts';

export const description =
  'A simulated internet (50 hosts, 300 ms, errors, dead hosts): ours at defaults vs fixed 16, the raw loop at 200, peers';

/** The peers this scenario can run: name, the peer runner's name, AutoThrottle. */
const PEER_SYSTEMS: Record<string, [PeerName, boolean]> = {
  crawlee: ['crawlee', false],
  scrapy: ['scrapy', false],
  'scrapy-autothrottle': ['scrapy', true],
};

export const targets: Target[] = [
  { metric: 'ours_1w_vs_raw', op: '>=', value: 0.8, label: 'ours 1w (defaults) / raw at 200, pages/s to 90 %' },
  { metric: 'ours_1w_converge_s', op: '<=', value: 10, label: 'ours 1w converges (s)' },
  { metric: 'ours_1w_peak_rss_mb', op: '<=', value: 2048, label: 'ours 1w peak RSS MiB' },
  { metric: 'percore_vs_crawlee', op: '>=', value: 5, label: 'per core vs Crawlee' },
  { metric: 'percore_vs_scrapy_autothrottle', op: '>=', value: 5, label: 'per core vs Scrapy + AutoThrottle' },
  { metric: 'speed_vs_crawlee', op: '>=', value: 8, label: 'pages/s vs Crawlee' },
  { metric: 'speed_vs_scrapy_autothrottle', op: '>=', value: 8, label: 'pages/s vs Scrapy + AutoThrottle' },
];

/** Metric stem of a system. */
const stem = (system: string) => system.replaceAll('-', '_');

export const headline: [string, string][] = [
  ['pages_reachable', 'pages reachable'],
  ['raw_p90_pages_per_s', 'raw pages/s (to 90 %)'],
  ['ours_1w_p90_pages_per_s', 'ours 1w defaults pages/s'],
  ['ours_1w_vs_raw', 'ours 1w / raw'],
  ['raw_capped_p90_pages_per_s', 'raw, 16 per origin, pages/s'],
  ['ours_1w_vs_raw_capped', 'ours 1w / raw 16 per origin'],
  ['ours_2w_p90_pages_per_s', 'ours 2w defaults pages/s'],
  ['ours_fixed_1w_p90_pages_per_s', 'ours 1w fixed pages/s'],
  ['ours_1w_converge_s', 'ours 1w converge s'],
  ['ours_1w_cpu_ms_per_page', 'ours 1w CPU ms/page'],
  ['floor_cpu_ms_per_page', 'publish floor CPU ms/page'],
  ['ours_1w_vs_floor_cpu', 'ours 1w / publish floor CPU'],
  ['ours_1w_peak_rss_mb', 'ours 1w peak RSS MiB'],
  ...Object.keys(PEER_SYSTEMS).flatMap((p): [string, string][] => [
    [`${stem(p)}_p90_pages_per_s`, `${p} pages/s`],
    [`percore_vs_${stem(p)}`, `per core vs ${p}`],
    [`floor_percore_vs_${stem(p)}`, `publish floor per core vs ${p}`],
  ]),
];

/** BENCH_PEERS: the peer systems (default crawlee). */
function peersWanted(): string[] {
  const raw = process.env.BENCH_PEERS?.trim().toLowerCase();
  if (raw === undefined || raw === '') return ['crawlee'];
  if (['0', 'false', 'no', 'off', 'none'].includes(raw)) return [];
  if (['1', 'true', 'yes', 'on', 'all'].includes(raw)) return Object.keys(PEER_SYSTEMS);
  const list = raw.split(',').map((s) => s.trim());
  for (const p of list)
    if (!(p in PEER_SYSTEMS))
      throw new Error(`BENCH_PEERS: ${Object.keys(PEER_SYSTEMS).join(', ')} or none (got ${p})`);
  return list;
}

function internetOptions(): InternetOptions {
  return {
    seed: envInt('BENCH_REALWEB_SEED', 1),
    hosts: envInt('BENCH_REALWEB_HOSTS', 50),
    pages: envInt('BENCH_REALWEB_PAGES', 3000),
    links: envInt('BENCH_REALWEB_LINKS', 20),
    medianLatencyMs: envNumber('BENCH_REALWEB_LATENCY_MS', 300),
  };
}

/** The fewest evenly spaced good, allowed seeds (1, 2, 3, 4, 5, 8, ...) reaching 95 % of the pages within maxdepth. */
function seedPlan(web: ChildInternet, maxdepth: number): { seeds: number[]; reachable: number } {
  const counts = process.env.BENCH_REALWEB_SEEDS
    ? [envInt('BENCH_REALWEB_SEEDS', 5)]
    : [1, 2, 3, 4, 5, 8, 10, 16, 20, 32, 50];
  let plan = { seeds: [] as number[], reachable: 0 };
  for (const count of counts) {
    const seeds: number[] = [];
    for (let i = 0; i < count; i++) {
      let n = Math.floor((i * web.pages) / count);
      while (n < web.pages - 1 && !(web.good(n) && web.allowed(n) && web.page(n).error === 'none')) n++;
      if (!seeds.includes(n)) seeds.push(n);
    }
    plan = { seeds, reachable: web.reachable(seeds, maxdepth).size };
    if (plan.reachable >= 0.95 * web.pages) break;
  }
  return plan;
}

/** One system's numbers under its stem. */
function systemNumbers(key: string, r: Ramp, cpuS: number, rssMb: number | undefined): Numbers {
  const out: Numbers = {
    [`${key}_pages`]: r.pages,
    [`${key}_p90_pages_per_s`]: round(r.p90PagesPerS, 1),
    [`${key}_pages_per_s`]: round(r.pagesPerS, 1),
    [`${key}_seconds`]: round(r.seconds, 1),
    [`${key}_steady_pages_per_s`]: r.steadyPagesPerS,
    [`${key}_converge_s`]: r.convergeS,
    [`${key}_cpu_ms_per_page`]: round((cpuS * 1000) / Math.max(1, r.pages), 3),
    [`${key}_first_seconds`]: r.firstBuckets.join(' '),
  };
  if (rssMb !== undefined) out[`${key}_peak_rss_mb`] = rssMb;
  return out;
}

interface Round {
  options: InternetOptions;
  maxdepth: number;
  seeds: number[];
}

/** Runs one system on a fresh internet; returns its numbers. */
async function runSystem(ctx: ScenarioContext, system: string, r: Round, label: string): Promise<Numbers> {
  const web = await startInternetProcess(r.options);
  try {
    if (system === 'raw' || system === 'raw_capped') {
      const times: number[] = [];
      const meter = new CpuMeter(() => ({}));
      meter.start();
      const res = await rawCrawl({
        seeds: r.seeds.map(web.url),
        maxdepth: r.maxdepth,
        concurrency: envInt('BENCH_REALWEB_RAW_CONCURRENCY', 200),
        ...(system === 'raw_capped' ? { connectionsPerOrigin: envInt('BENCH_REALWEB_RAW_PER_ORIGIN', 16) } : {}),
        resolve: parseHostMap(web.hostMap),
        client: 'undici',
        progress: ctx.progress,
        timeoutMs: 10_000,
        totalTimeoutMs: 60_000,
        times,
      });
      const cpu = meter.stop();
      const rr = ramp(times);
      ctx.progress(`${label}: ${rr.pages} pages, ${res.errors} errors, ${rr.p90PagesPerS.toFixed(0)} pages/s to 90 %`);
      return { ...systemNumbers(system, rr, cpu.bench ?? 0, undefined), [`${system}_errors`]: res.errors };
    }
    if (system === 'floor') return await floorSystem(ctx, web, r, label);
    if (system.startsWith('ours_')) {
      const fixed = system === 'ours_fixed_1w' ? envInt('BENCH_REALWEB_FIXED', 16) : undefined;
      const res = await realwebPass(ctx, web, {
        workers: system === 'ours_fixed_1w' ? 1 : Number(system.slice(5, -1)),
        concurrency: fixed,
        seeds: r.seeds,
        maxdepth: r.maxdepth,
        sitePid: web.pid,
        label,
      });
      const per = (s: number | undefined) => round(((s ?? 0) * 1000) / Math.max(1, res.pages), 3);
      return {
        ...systemNumbers(
          system,
          res,
          (res.cpu.worker ?? 0) + (res.cpu.redis ?? 0) + (res.cpu.kafka ?? 0),
          res.workerPeakRssMb,
        ),
        [`${system}_failed`]: res.failed,
        [`${system}_worker_cpu_ms_per_page`]: per(res.cpu.worker),
        [`${system}_redis_cpu_ms_per_page`]: per(res.cpu.redis),
        [`${system}_kafka_cpu_ms_per_page`]: per(res.cpu.kafka),
        [`${system}_feed_to_done_s`]: round(res.feedToDoneS, 1),
      };
    }
    const [peer, autothrottle] = PEER_SYSTEMS[system] as [PeerName, boolean];
    const res = await runPeer(
      peer,
      {
        seeds: r.seeds.map(web.url),
        warmSeeds: r.seeds.slice(0, 1).map(web.url),
        warmMaxdepth: 0,
        maxdepth: r.maxdepth,
        concurrency: 0,
        autothrottle,
        keepTimes: true,
        closeAfterS: envInt('BENCH_REALWEB_PEER_LIMIT_S', 300),
        hostMap: parseHostMap(web.hostMap),
      },
      { site: [web.pid] },
      ctx.progress,
      envInt('BENCH_PEER_TIMEOUT_S', 1200),
    );
    const rr = ramp((res.detail.times as number[] | undefined) ?? []);
    ctx.progress(`${label}: ${rr.pages} pages (${res.failed} failed), ${rr.p90PagesPerS.toFixed(0)} pages/s to 90 %`);
    const cut = res.detail.finish === 'closespider_timeout';
    if (cut) ctx.note(`${label}: closed after BENCH_REALWEB_PEER_LIMIT_S with ${res.pages} pages: measured on those`);
    return {
      ...systemNumbers(stem(system), rr, res.cpu.crawler ?? 0, res.peakRssMb),
      [`${stem(system)}_failed`]: res.failed,
      [`${stem(system)}_closed_at_limit`]: cut ? 1 : 0,
    };
  } finally {
    await web.close();
  }
}

/** The publish floor on this internet: the raw loop with the crawler's fetcher, every page published to Kafka. */
async function floorSystem(ctx: ScenarioContext, web: ChildInternet, r: Round, label: string): Promise<Numbers> {
  const concurrency = envInt('BENCH_REALWEB_RAW_CONCURRENCY', 200);
  const times: number[] = [];
  const run = await floorRun(ctx, (publish, startMeter) => {
    startMeter();
    return rawCrawl({
      seeds: r.seeds.map(web.url),
      maxdepth: r.maxdepth,
      concurrency,
      resolve: parseHostMap(web.hostMap),
      client: 'fetcher',
      publish,
      maxPublishing: concurrency * DELIVERIES_PER_FETCH,
      progress: ctx.progress,
      times,
    });
  });
  if (run.stored !== run.published) ctx.note(`${label}: ${run.stored} messages stored of ${run.published} published`);
  const rr = ramp(times);
  const per = (s: number | undefined) => round(((s ?? 0) * 1000) / Math.max(1, rr.pages), 3);
  ctx.progress(
    `${label}: ${rr.pages} pages published, ${run.result.errors} errors, ${rr.p90PagesPerS.toFixed(0)} pages/s to 90 %, CPU ms/page ${per(run.cpu.bench)} + Kafka ${per(run.cpu.kafka)}`,
  );
  return {
    ...systemNumbers('floor', rr, (run.cpu.bench ?? 0) + (run.cpu.kafka ?? 0), undefined),
    floor_errors: run.result.errors,
    floor_crawler_cpu_ms_per_page: per(run.cpu.bench),
    floor_kafka_cpu_ms_per_page: per(run.cpu.kafka),
  };
}

/** Ratios within one round: ours to raw, per core and pages/s against each peer. */
function withinRound(n: Numbers, peers: string[]): Numbers {
  const num = (k: string) => (typeof n[k] === 'number' ? (n[k] as number) : Number.NaN);
  const out: Numbers = {};
  const raw = num('raw_p90_pages_per_s');
  for (const s of ['ours_1w', 'ours_2w', 'ours_fixed_1w'])
    if (n[`${s}_p90_pages_per_s`] !== undefined) out[`${s}_vs_raw`] = round(num(`${s}_p90_pages_per_s`) / raw, 3);
  if (n.raw_capped_p90_pages_per_s !== undefined && n.ours_1w_p90_pages_per_s !== undefined)
    out.ours_1w_vs_raw_capped = round(num('ours_1w_p90_pages_per_s') / num('raw_capped_p90_pages_per_s'), 3);
  if (n.floor_cpu_ms_per_page !== undefined && n.ours_1w_cpu_ms_per_page !== undefined)
    out.ours_1w_vs_floor_cpu = round(num('ours_1w_cpu_ms_per_page') / num('floor_cpu_ms_per_page'), 3);
  for (const p of peers.map(stem)) {
    if (n[`${p}_p90_pages_per_s`] !== undefined && n.floor_cpu_ms_per_page !== undefined)
      out[`floor_percore_vs_${p}`] = round(num(`${p}_cpu_ms_per_page`) / num('floor_cpu_ms_per_page'), 3);
    if (n[`${p}_p90_pages_per_s`] === undefined || n.ours_1w_cpu_ms_per_page === undefined) continue;
    out[`percore_vs_${p}`] = round(num(`${p}_cpu_ms_per_page`) / num('ours_1w_cpu_ms_per_page'), 3);
    out[`speed_vs_${p}`] = round(num('ours_1w_p90_pages_per_s') / num(`${p}_p90_pages_per_s`), 3);
  }
  return out;
}

function printTable(ctx: ScenarioContext, title: string, n: Numbers, systems: string[]): void {
  const f = (v: number | string | undefined, d = 1) => (typeof v === 'number' ? v.toFixed(d) : '–').padStart(9);
  const cols = ['pages', 'p90 p/s', 'vs raw', '1st→last', 'steady', 'conv s', 'CPU ms/p', 'RSS MiB'];
  ctx.progress(`${title}:`);
  ctx.progress(`  ${'system'.padEnd(20)}${cols.map((c) => c.padStart(9)).join('')}`);
  for (const s of systems) {
    const k = stem(s);
    if (n[`${k}_pages`] === undefined) continue;
    const vsRaw =
      k === 'raw'
        ? 1
        : typeof n[`${k}_p90_pages_per_s`] === 'number'
          ? Number(n[`${k}_p90_pages_per_s`]) / Number(n.raw_p90_pages_per_s)
          : undefined;
    ctx.progress(
      `  ${s.padEnd(20)}${f(n[`${k}_pages`], 0)}${f(n[`${k}_p90_pages_per_s`])}${f(vsRaw, 2)}${f(n[`${k}_pages_per_s`])}${f(n[`${k}_steady_pages_per_s`], 0)}${f(n[`${k}_converge_s`], 0)}${f(n[`${k}_cpu_ms_per_page`], 2)}${f(n[`${k}_peak_rss_mb`], 0)}`,
    );
  }
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const options = internetOptions();
  const maxdepth = envInt('BENCH_REALWEB_MAXDEPTH', 3);
  const peers = peersWanted();
  const fixed = envNumber('BENCH_REALWEB_FIXED', 16);
  const systems = [
    'raw',
    ...(envNumber('BENCH_REALWEB_RAW_PER_ORIGIN', 16) > 0 ? ['raw_capped'] : []),
    ...(envBool('BENCH_REALWEB_FLOOR', true) ? ['floor'] : []),
    ...envIntList('BENCH_REALWEB_WORKERS', [1, 2]).map((w) => `ours_${w}w`),
    ...(fixed > 0 ? ['ours_fixed_1w'] : []),
    ...peers,
  ];
  const probe = await startInternetProcess(options);
  const plan = seedPlan(probe, maxdepth);
  await probe.close();
  for (const [k, v] of Object.entries({
    ...options,
    maxdepth,
    seeds: plan.seeds.length,
    pages_reachable: plan.reachable,
  }))
    ctx.input(k, v as number);
  ctx.input('systems', systems.join(','));
  ctx.input('raw_concurrency', envInt('BENCH_REALWEB_RAW_CONCURRENCY', 200));
  ctx.input('raw_capped_per_origin', envInt('BENCH_REALWEB_RAW_PER_ORIGIN', 16));
  ctx.note(
    "pages/s to 90 % = (0.9 N - 1) / (first page → the page at 90 % of N), N each system's own pages; first→last also recorded",
  );
  ctx.note(
    'ours: DEFAULT settings (CRAWLER_CONCURRENCY=0, adaptive) but the throttle wide open; fixed = CRAWLER_CONCURRENCY set',
  );
  ctx.note('CPU ms/page: ours workers + Redis + Kafka, raw this process, peers their process; site not counted');
  ctx.note(
    'converge s = from the first page until a 2 s average reaches 90 % of the steady pages/s (median 1 s rate between 10 % and 90 % of pages)',
  );
  ctx.note('every crawl is cold (no warm-up crawl) on a freshly started simulated internet');
  const rounds = envInt('BENCH_REALWEB_ROUNDS', 3);
  const list: Numbers[] = [];
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? systems : [...systems].reverse();
    const out: Numbers = { pages_reachable: plan.reachable };
    for (const system of order) {
      const label = `round ${i + 1}/${rounds}: ${system}`;
      try {
        Object.assign(out, await runSystem(ctx, system, { options, maxdepth, seeds: plan.seeds }, label));
      } catch (error) {
        ctx.progress(`${label} failed: ${(error as Error).message}`);
        ctx.note(`round ${i + 1}: ${system} failed: ${(error as Error).message.split('\n')[0]}`);
      }
    }
    Object.assign(out, withinRound(out, peers));
    printTable(ctx, `round ${i + 1}/${rounds}`, out, systems);
    list.push(out);
  }
  const merged = mergeRounds(list);
  if (rounds > 1) printTable(ctx, `medians of ${rounds} rounds`, merged, systems);
  return merged;
}
