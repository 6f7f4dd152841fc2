/**
 * Queue benchmark (docs/design.md §3 and §9): the Redis frontier under a large backlog.
 *
 * 1. enqueue N URLs (default 1M) over D domains (default 10k) for a handful of crawls, in batches of 500
 *    through `Frontier.enqueue` (batch b+1 is prepared while batch b runs, as a monitor would);
 * 2. Redis bytes per queued URL: `INFO memory` used_memory before/after, and `MEMORY USAGE` per key to
 *    split the queue from the dupefilter and the counters;
 * 3. info latency: `crawlInfo` of the biggest crawl (spans every domain at 4 priorities: O(domains ×
 *    priorities), the heavy case), p50 of 5;
 * 4. lease latency: first one lease per domain (nothing throttled yet, unmeasured warm-up that leaves every
 *    domain throttled), then L leases (default 20k) on a simulated clock (`now` passed explicitly) that
 *    advances just slower than the domains' throttle frees them, so ~92% of domains are throttled
 *    (waiting) at any moment; then the same with 4 concurrent callers for throughput;
 * 5. stop latency: one `stop` of a crawl with ~25% of the backlog (O(1): the purge is lazy); then the
 *    background settlement of its counters that stop leaves to the sweep, timed as the `backlog` read that
 *    runs it (bounded chunks); then leases again, which meet the stopped crawl's requests and drop them;
 * 6. cleanup: UNLINK of the partition's known keys and dupefilters (no KEYS, no SCAN, no FLUSHDB).
 *
 * Sizes: BENCH_QUEUE_URLS, BENCH_QUEUE_DOMAINS, BENCH_QUEUE_LEASES; BENCH_QUEUE_ENQUEUE_BUDGET_S caps the
 * enqueue phase (the size reached is reported). Redis: bench/lib/redis.ts (`BENCH_REDIS`).
 */
import { randomBytes } from 'node:crypto';
import { config } from '../../lib/config/index.ts';
import { registrableDomain } from '../../lib/crawl/domain.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import type { CrawlRef, CrawlSettings, EnqueueOutcome, QueueRequest } from '../../lib/frontier-model.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { crawlKey, dupefilterKey, partitionKeys, spidersKey } from '../../lib/redis/keys.ts';
import { allScripts } from '../../lib/redis/scripts.ts';
import { prng } from '../../localstack/site/prng.ts';
import { commandBreakdown, commandStats, memoryUsage, scriptStats, usecPerCall, usedMemory } from '../lib/redis.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { msSince, nowNs, round, summarize } from '../lib/timing.ts';

export const description = 'Redis frontier: enqueue/lease rates, bytes per queued URL, info/stop/lease latency';

export const targets: Target[] = [
  { metric: 'bytes_per_url', op: '<=', value: 200, label: 'bytes/URL' },
  { metric: 'info_p50_ms', op: '<', value: 100, label: 'info p50 ms' },
  { metric: 'stop_ms', op: '<', value: 100, label: 'stop ms' },
  { metric: 'lease_p99_ms', op: '<', value: 2, label: 'lease p99 ms' },
];

export const headline: [string, string][] = [
  ['urls_queued', 'URLs queued'],
  ['domains', 'domains'],
  ['enqueue_urls_per_s', 'enqueue URLs/s'],
  ['bytes_per_url', 'bytes/URL'],
  ['bytes_per_url_queue', 'bytes/URL queue zset'],
  ['bytes_per_url_dupefilter', 'bytes/URL dupefilter'],
  ['info_p50_ms', 'info p50 ms'],
  ['stop_ms', 'stop ms'],
  ['stop_settle_ms', 'stop settle ms (background)'],
  ['lease_per_s', 'lease/s (1 caller)'],
  ['lease_per_s_concurrent', 'lease/s (4 callers)'],
  ['lease_p50_ms', 'lease p50 ms'],
  ['lease_p99_ms', 'lease p99 ms'],
  ['lease_throttled_share', 'domains throttled'],
];

const SPIDER = 'link';
const BATCH = 500;

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

const WORDS = [
  'acme',
  'blue',
  'city',
  'data',
  'echo',
  'fern',
  'gold',
  'hill',
  'iron',
  'jade',
  'kite',
  'lime',
  'moon',
  'nova',
  'oak',
  'pine',
  'quay',
  'rock',
  'sun',
  'tide',
];
const TLDS = ['com', 'com', 'com', 'net', 'org', 'de', 'co.uk', 'fr', 'io', 'com.au'];
const SUBDOMAINS = ['www.', 'www.', 'www.', '', 'blog.', 'shop.'];
const SECTIONS = ['news', 'products', 'blog', 'articles', 'category/shoes', 'help/faq', '2024/05', 'docs/api'];
const SLUG = 'the-quick-guide-to-autumn-garden-care-and-winter-storage-for-small-city-balconies';

/** Crawls sharing the backlog: [crawlid, appid, share]. The first is the info subject, the second is stopped. */
const CRAWLS: [string, string, number][] = [
  ['main', 'bench-app', 0.72],
  ['stop-me', 'bench-app', 0.25],
  ['small-a', 'bench-other', 0.015],
  ['small-b', 'bench-other', 0.015],
];
/** Depth distribution of queued requests; priority = 50 - 10 × depth (children get priority - 10). */
const DEPTH_WEIGHTS = [0.01, 0.2, 0.4, 0.39];

class UrlSource {
  readonly #rand = prng(0x5eed);
  readonly #hosts: string[];
  #n = 0;
  urlChars = 0;

  constructor(domains: number) {
    this.#hosts = Array.from({ length: domains }, (_, i) => {
      const name = `${WORDS[i % 20]}${WORDS[Math.floor(i / 20) % 20]}${i}`;
      return `${SUBDOMAINS[i % SUBDOMAINS.length]}${name}.${TLDS[Math.floor(i / 7) % TLDS.length]}`;
    });
  }

  /** A realistic URL of 60–90 characters on a uniformly chosen host, unique across the run. */
  next(): { url: string; depth: number; crawl: number } {
    const r = this.#rand;
    const host = this.#hosts[Math.floor(r() * this.#hosts.length)] as string;
    const section = SECTIONS[Math.floor(r() * SECTIONS.length)] as string;
    const id = (this.#n++).toString(36);
    const length = 60 + Math.floor(r() * 31);
    const fixed = `https://${host}/${section}/-${id}.html`.length;
    const start = Math.floor(r() * 20);
    const slug = SLUG.slice(start, start + Math.max(3, length - fixed)).replace(/^-|-$/g, 'x');
    const url = `https://${host}/${section}/${slug}-${id}.html`;
    this.urlChars += url.length;
    let x = r();
    let depth = 0;
    while (depth < DEPTH_WEIGHTS.length - 1 && x >= (DEPTH_WEIGHTS[depth] as number)) {
      x -= DEPTH_WEIGHTS[depth] as number;
      depth++;
    }
    let y = r();
    let crawl = 0;
    while (crawl < CRAWLS.length - 1 && y >= (CRAWLS[crawl] as [string, string, number])[2]) {
      y -= (CRAWLS[crawl] as [string, string, number])[2];
      crawl++;
    }
    return { url, depth, crawl };
  }
}

function settingsOf(crawlid: string, appid: string): CrawlSettings {
  return {
    appid,
    crawlid,
    spiderid: SPIDER,
    priority: 50,
    maxdepth: 3,
    expires: 0,
    useragent: 'crawl-cluster-bench/1.0 (+https://example.com/bot)',
    attrs: { source: 'bench', campaign: 'queue' },
  };
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const nUrls = envInt('BENCH_QUEUE_URLS', 1_000_000);
  const nDomains = envInt('BENCH_QUEUE_DOMAINS', 10_000);
  const nLeases = envInt('BENCH_QUEUE_LEASES', 20_000);
  const budgetS = envInt('BENCH_QUEUE_ENQUEUE_BUDGET_S', 150);
  const bench = await ctx.redis();
  const redis: RedisClient = bench.client;
  const prefix = `bench-q-${randomBytes(4).toString('hex')}`;
  // Its own clock: the leases run on a simulated clock (below), so not Redis's TIME.
  const options = { ...frontierOptions(config()), prefix, redisClock: false };
  const frontier = new Frontier(redis, options);
  const p = frontier.partitionFor(SPIDER);
  const pk = partitionKeys(p);
  const crawlRefs = CRAWLS.map(([crawlid, appid]) => ({ appid, crawlid }) satisfies CrawlRef);
  const dupeKeys = crawlRefs.map((c) => dupefilterKey(p, crawlKey(c.appid, c.crawlid, SPIDER)));
  const allKeys = [...Object.values(pk), ...dupeKeys, spidersKey(prefix)];

  for (const [k, v] of Object.entries({
    urls_target: nUrls,
    domains: nDomains,
    batch: BATCH,
    crawls: CRAWLS.map(([id, app, share]) => `${app}/${id} ${share}`).join(', '),
    priorities: DEPTH_WEIGHTS.map((w, d) => `${50 - 10 * d}:${w}`).join(' '),
    leases_measured: nLeases,
    enqueue_budget_s: budgetS,
    throttle: `${options.hits} hits / ${options.windowSec} s, moderated=${options.moderated}`,
    redis_client: 'ioredis standalone (createRedis, cluster: false, autopipelining)',
    key_prefix: prefix,
  }))
    ctx.input(k, v);
  ctx.note(
    bench.mode === 'private'
      ? 'private redis-server (no AOF/RDB, no other clients): memory and server-side µs are exact'
      : 'shared standalone Redis (AOF on, other clients possible): memory and server-side µs are approximate',
  );
  ctx.note('latencies are client round trips over loopback (ioredis + Lua); *_server_us are INFO commandstats');

  const out: Numbers = { urls_target: nUrls, domains: nDomains };
  // Loaded up front, as in a long-running process: no NOSCRIPT round trip inside a measurement.
  for (const s of allScripts()) await redis.script('LOAD', s.source);
  try {
    // ---- enqueue -------------------------------------------------------------------------------------
    const source = new UrlSource(nDomains);
    const seen = new Set<number>();
    const tally: Record<EnqueueOutcome, number> = {
      queued: 0,
      duplicate: 0,
      stopped: 0,
      expired: 0,
      capped: 0,
      unknown_crawl: 0,
    };
    const perCrawl: number[] = CRAWLS.map(() => 0);
    let prepNs = 0n;
    const makeBatch = (size: number) => {
      const t = nowNs();
      const items: { crawl: CrawlRef; request: QueueRequest }[] = [];
      const crawls: number[] = [];
      for (let i = 0; i < size; i++) {
        const { url, depth, crawl } = source.next();
        const ref = crawlRefs[crawl] as CrawlRef;
        const first = !seen.has(crawl);
        seen.add(crawl);
        items.push({
          crawl: first ? { ...ref, settings: settingsOf(ref.crawlid, ref.appid) } : ref,
          request: {
            url,
            domain: registrableDomain(url),
            fingerprint: requestFingerprint(url),
            priority: 50 - 10 * depth,
            depth,
          },
        });
        crawls.push(crawl);
      }
      prepNs += nowNs() - t;
      return { items, crawls };
    };

    const memBefore = await usedMemory(redis);
    const statsBefore = await scriptStats(redis);
    const cmdBefore = await commandStats(redis);
    const batchMs: number[] = [];
    ctx.progress(`enqueue ${nUrls.toLocaleString('en-US')} URLs over ${nDomains} domains into ${bench.address}`);
    const start = nowNs();
    let lastReport = Date.now();
    let sent = 0;
    let pending: Promise<void> | undefined;
    while (sent < nUrls) {
      const batch = makeBatch(Math.min(BATCH, nUrls - sent));
      await pending;
      sent += batch.items.length;
      const t = nowNs();
      pending = frontier.enqueue(SPIDER, batch.items).then((outcomes) => {
        batchMs.push(msSince(t));
        outcomes.forEach((o, i) => {
          tally[o]++;
          if (o === 'queued') {
            const c = batch.crawls[i] as number;
            perCrawl[c] = (perCrawl[c] ?? 0) + 1;
          }
        });
      });
      if (Date.now() - lastReport > 5000) {
        lastReport = Date.now();
        const s = msSince(start) / 1000;
        ctx.progress(`  enqueued ${sent.toLocaleString('en-US')} (${Math.round(sent / s).toLocaleString('en-US')}/s)`);
      }
      if (msSince(start) / 1000 > budgetS) {
        ctx.progress(`  enqueue budget of ${budgetS} s reached at ${sent} URLs: continuing with that size`);
        ctx.note(`enqueue stopped by the ${budgetS} s budget at ${sent} of ${nUrls} URLs`);
        break;
      }
    }
    await pending;
    const enqueueS = msSince(start) / 1000;
    const statsAfterEnqueue = await scriptStats(redis);
    out.enqueue_server_breakdown = commandBreakdown(cmdBefore, await commandStats(redis));
    const memAfter = await usedMemory(redis);
    const queued = tally.queued;
    const batches = summarize(batchMs);
    Object.assign(out, {
      urls_queued: queued,
      urls_refused: sent - queued,
      url_mean_chars: round(source.urlChars / sent, 1),
      enqueue_s: round(enqueueS, 2),
      enqueue_urls_per_s: Math.round(sent / enqueueS),
      enqueue_batch_p50_ms: round(batches.p50),
      enqueue_batch_p99_ms: round(batches.p99),
      enqueue_server_us_per_url: round(usecPerCall(statsBefore, statsAfterEnqueue) / BATCH, 2),
      enqueue_client_prep_us_per_url: round(Number(prepNs) / 1000 / sent, 2),
    });
    ctx.progress(
      `enqueue done: ${queued} queued (${JSON.stringify(tally)}) in ${enqueueS.toFixed(1)} s = ${out.enqueue_urls_per_s}/s`,
    );

    // ---- memory ----------------------------------------------------------------------------------------
    ctx.progress('memory: INFO used_memory delta and MEMORY USAGE per key (SAMPLES 0)');
    const usage: Record<string, number> = {};
    for (const [name, key] of Object.entries(pk)) usage[name] = await memoryUsage(redis, key);
    let dupe = 0;
    for (const key of dupeKeys) dupe += await memoryUsage(redis, key);
    const keysTotal = Object.values(usage).reduce((a, b) => a + b, 0) + dupe;
    const index = keysTotal - dupe - (usage.queue ?? 0);
    Object.assign(out, {
      used_memory_delta_bytes: memAfter - memBefore,
      bytes_per_url: round((memAfter - memBefore) / queued, 1),
      bytes_per_url_keys: round(keysTotal / queued, 1),
      bytes_per_url_queue: round((usage.queue ?? 0) / queued, 1),
      bytes_per_url_dupefilter: round(dupe / queued, 1),
      bytes_per_url_counters_schedule: round(index / queued, 2),
      bytes_per_url_excl_dupefilter: round((memAfter - memBefore - dupe) / queued, 1),
    });
    for (const [name, bytes] of Object.entries(usage)) if (bytes > 0) out[`mem_${name}_bytes`] = bytes;
    out.mem_dupefilter_bytes = dupe;
    ctx.progress(
      `  ${out.bytes_per_url} B/URL (used_memory), queue ${out.bytes_per_url_queue}, dupefilter ${out.bytes_per_url_dupefilter}, other ${out.bytes_per_url_counters_schedule}`,
    );

    // ---- info ------------------------------------------------------------------------------------------
    const [mainId, mainApp] = CRAWLS[0] as [string, string, number];
    const infoMs: number[] = [];
    let infoEntries = 0;
    let infoDomains = 0;
    let infoQueued = 0;
    const infoStats0 = await scriptStats(redis);
    const infoCmd0 = await commandStats(redis);
    for (let i = 0; i < 5; i++) {
      const t = nowNs();
      const info = await frontier.crawlInfo(SPIDER, mainApp, mainId);
      infoMs.push(msSince(t));
      if (!info) throw new Error('crawlInfo returned nothing for the main crawl');
      infoQueued = info.queued;
      infoDomains = Object.keys(info.domains).length;
      infoEntries = Object.values(info.domains).reduce((a, d) => a + Object.keys(d.priorities).length, 0);
    }
    const infoStats1 = await scriptStats(redis);
    out.info_server_breakdown_5_runs = commandBreakdown(infoCmd0, await commandStats(redis));
    const info = summarize(infoMs);
    Object.assign(out, {
      info_crawl_queued: infoQueued,
      info_crawl_domains: infoDomains,
      info_entries: infoEntries,
      info_p50_ms: round(info.p50),
      info_max_ms: round(info.max),
      info_server_us: round(usecPerCall(infoStats0, infoStats1), 0),
    });
    if (infoQueued !== perCrawl[0]) ctx.note(`info queued ${infoQueued} != enqueued for main ${perCrawl[0]}`);
    ctx.progress(
      `info of ${mainApp}/${mainId} (${infoQueued} queued, ${infoDomains} domains, ${infoEntries} domain×priority entries): p50 ${info.p50.toFixed(1)} ms, server ${out.info_server_us} µs`,
    );

    // ---- lease -----------------------------------------------------------------------------------------
    const intervalMs = (options.windowSec * 1000) / options.hits;
    const throttledShare = 0.92;
    const stepMs = intervalMs / (nDomains * throttledShare);
    const t0 = Date.now();
    let tick = 0;
    const clock = () => t0 + Math.floor(tick++ * stepMs);
    const leaseLoop = async (count: number, callers = 1) => {
      const samples: number[] = [];
      let empty = 0;
      let skipped = 0;
      const stats0 = await scriptStats(redis);
      const cmd0 = await commandStats(redis);
      const start = nowNs();
      let left = count;
      const worker = async () => {
        while (left > 0) {
          left--;
          const now = clock();
          const t = nowNs();
          const r = await frontier.leaseMany(SPIDER, 1, { now });
          samples.push(msSince(t));
          skipped += r.skipped;
          if (r.leases.length === 0) empty++;
        }
      };
      await Promise.all(Array.from({ length: callers }, worker));
      const s = msSince(start) / 1000;
      return {
        ...summarize(samples),
        perS: count / s,
        empty,
        skipped,
        serverUs: usecPerCall(stats0, await scriptStats(redis)),
        breakdown: commandBreakdown(cmd0, await commandStats(redis)),
      };
    };
    const zcards = async () => ({ ready: await redis.zcard(pk.ready), waiting: await redis.zcard(pk.waiting) });

    ctx.progress(`lease warm-up: ${nDomains} leases, one per domain (nothing throttled yet)`);
    const warm = await leaseLoop(nDomains);
    const z0 = await zcards();
    ctx.progress(
      `  warm-up p50 ${warm.p50.toFixed(3)} ms p99 ${warm.p99.toFixed(3)} ms; now ready ${z0.ready}, waiting ${z0.waiting}`,
    );
    ctx.progress(`lease: ${nLeases} leases, clock +${stepMs.toFixed(3)} ms each (~${throttledShare * 100}% throttled)`);
    const lease = await leaseLoop(nLeases);
    const z1 = await zcards();
    const throttled = (z0.waiting / (z0.waiting + z0.ready) + z1.waiting / (z1.waiting + z1.ready)) / 2;
    ctx.progress(
      `  p50 ${lease.p50.toFixed(3)} ms p99 ${lease.p99.toFixed(3)} ms, ${Math.round(lease.perS)}/s, empty ${lease.empty}; ready ${z1.ready}, waiting ${z1.waiting}`,
    );
    const concurrentN = Math.max(1000, Math.floor(nLeases / 2));
    ctx.progress(`lease: ${concurrentN} leases from 4 concurrent callers (throughput)`);
    const conc = await leaseLoop(concurrentN, 4);
    ctx.progress(`  ${Math.round(conc.perS)}/s, p50 ${conc.p50.toFixed(3)} ms p99 ${conc.p99.toFixed(3)} ms`);
    Object.assign(out, {
      lease_warm_p50_ms: round(warm.p50),
      lease_warm_p99_ms: round(warm.p99),
      lease_per_s: Math.round(lease.perS),
      lease_p50_ms: round(lease.p50),
      lease_p90_ms: round(lease.p90),
      lease_p99_ms: round(lease.p99),
      lease_max_ms: round(lease.max),
      lease_server_us: round(lease.serverUs, 1),
      lease_server_breakdown: lease.breakdown,
      lease_empty: lease.empty,
      lease_throttled_share: round(throttled, 3),
      lease_per_s_concurrent: Math.round(conc.perS),
      lease_concurrent_p99_ms: round(conc.p99),
    });

    // ---- stop ------------------------------------------------------------------------------------------
    const [stopId, stopApp] = CRAWLS[1] as [string, string, number];
    ctx.progress(`stop ${stopApp}/${stopId} (${perCrawl[1]} enqueued, minus those leased above)`);
    const stopStats0 = await scriptStats(redis);
    const stopCmd0 = await commandStats(redis);
    const t = nowNs();
    const stopped = await frontier.stop(SPIDER, stopApp, stopId);
    const stopMs = msSince(t);
    const stopServerUs = usecPerCall(stopStats0, await scriptStats(redis));
    out.stop_server_breakdown = commandBreakdown(stopCmd0, await commandStats(redis));
    ctx.progress(`  purged ${stopped.purged} in ${stopMs.toFixed(1)} ms (server ${Math.round(stopServerUs)} µs)`);
    const settleStats0 = await scriptStats(redis);
    const settleCmd0 = await commandStats(redis);
    const ts = nowNs();
    await frontier.backlog(SPIDER);
    const settleMs = msSince(ts);
    const settleServerUs = usecPerCall(settleStats0, await scriptStats(redis));
    out.stop_settle_server_breakdown = commandBreakdown(settleCmd0, await commandStats(redis));
    ctx.progress(`  its counters settled in the background (backlog read): ${settleMs.toFixed(1)} ms`);
    const afterStopN = Math.max(1000, Math.floor(nLeases / 4));
    ctx.progress(`lease after stop: ${afterStopN} leases meeting the stopped crawl's requests (lazy purge)`);
    const after = await leaseLoop(afterStopN);
    ctx.progress(`  p50 ${after.p50.toFixed(3)} ms p99 ${after.p99.toFixed(3)} ms, skipped ${after.skipped}`);
    Object.assign(out, {
      stop_crawl_enqueued: perCrawl[1] as number,
      stop_purged: stopped.purged,
      stop_ms: round(stopMs),
      stop_server_us: Math.round(stopServerUs),
      stop_settle_ms: round(settleMs),
      stop_settle_server_us_per_call: Math.round(settleServerUs),
      lease_after_stop_p50_ms: round(after.p50),
      lease_after_stop_p99_ms: round(after.p99),
      lease_after_stop_skipped: after.skipped,
      lease_after_stop_server_us: round(after.serverUs, 1),
    });
  } finally {
    // ---- cleanup: the keys we know, never KEYS/SCAN/FLUSHDB ------------------------------------------
    const t = nowNs();
    for (const [crawlid, appid] of CRAWLS) await frontier.stop(SPIDER, appid, crawlid).catch(() => undefined);
    const removed = await redis.unlink(...allKeys);
    const left = await redis.exists(...allKeys);
    ctx.progress(`cleanup: unlinked ${removed} keys in ${msSince(t).toFixed(0)} ms, ${left} left`);
  }
  return out;
}
