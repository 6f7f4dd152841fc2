/**
 * Frontier partitions benchmark (`FRONTIER_PARTITIONS`; docs/scale.md): the frontier on a private 3-master Redis
 * Cluster (bench/lib/redis-cluster.ts) with 1, 3 and 6 partitions per spider type. For each:
 * 1. enqueue U URLs (default 100,000) over D domains (default 10,000) for one crawl, in batches of 500;
 * 2. bytes per queued URL: the masters' used_memory before and after, summed;
 * 3. lease + ack: 4 concurrent callers each lease 16 and ack them done (one ackMany per lease call), on a clock that
 *    moves 1 s per round so the wide-open throttle never holds a domain back, until every URL is acked;
 * 4. Redis CPU per page (the masters' used_cpu_user + used_cpu_sys over the lease + ack phase, summed, per page) and
 *    the busiest shard's share: its CPU (and its memory after enqueue) over the mean of the three.
 * With one partition a single shard does all the work (share 3.0): the partitions are what spreads it.
 * Sizes: BENCH_PARTITIONS_URLS, BENCH_PARTITIONS_DOMAINS.
 */
import { config } from '../../lib/config/index.ts';
import { registrableDomain } from '../../lib/crawl/domain.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import type { CrawlRef, CrawlSettings, FrontierItem } from '../../lib/frontier-model.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { allScripts } from '../../lib/redis/scripts.ts';
import { prng } from '../../localstack/site/prng.ts';
import { nodeUsage, openBenchCluster } from '../lib/redis-cluster.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { msSince, nowNs, round } from '../lib/timing.ts';

export const description = 'Frontier partitions on 3 shards: lease + ack rate, Redis CPU per page, busiest shard';

const COUNTS = [1, 3, 6] as const;

export const targets: Target[] = [
  { metric: 'p6_busiest_cpu_share', op: '<=', value: 1.3, label: 'busiest shard CPU / mean (6 partitions)' },
  { metric: 'p6_busiest_memory_share', op: '<=', value: 1.3, label: 'busiest shard memory / mean (6 partitions)' },
  { metric: 'p6_bytes_per_url_ratio', op: '<=', value: 1.05, label: 'bytes/URL, 6 partitions / 1' },
];

export const headline: [string, string][] = COUNTS.flatMap((n): [string, string][] => [
  [`p${n}_pages_per_s`, `${n} partitions: lease+ack pages/s`],
  [`p${n}_redis_cpu_ms_per_page`, `${n} partitions: Redis CPU ms/page`],
  [`p${n}_busiest_cpu_share`, `${n} partitions: busiest shard CPU / mean`],
  [`p${n}_busiest_memory_share`, `${n} partitions: busiest shard memory / mean`],
  [`p${n}_bytes_per_url`, `${n} partitions: bytes/URL`],
]).concat([['p6_bytes_per_url_ratio', 'bytes/URL 6 / 1']]);

const SPIDER = 'link';
const BATCH = 500;
const CALLERS = 4;
const PER_LEASE = 16;

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

function settings(crawlid: string): CrawlSettings {
  return { appid: 'bench', crawlid, spiderid: SPIDER, priority: 50, maxdepth: 3, expires: 0 };
}

/** The busiest of `values` over their mean. */
function busiestShare(values: number[]): number {
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  return mean > 0 ? Math.max(...values) / mean : 0;
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const nUrls = envInt('BENCH_PARTITIONS_URLS', 100_000);
  const nDomains = envInt('BENCH_PARTITIONS_DOMAINS', 10_000);
  ctx.input('urls', nUrls);
  ctx.input('domains', nDomains);
  ctx.input('shards', 3);
  ctx.input('callers', `${CALLERS} x leaseMany(${PER_LEASE}) + ackMany`);
  ctx.note('a private 3-master Redis Cluster on loopback, no persistence; every shard shares the same 2 cores');
  const cluster = await openBenchCluster(3, (m) => ctx.progress(m));
  const out: Numbers = { urls: nUrls, domains: nDomains };
  try {
    for (const n of cluster.nodes) for (const s of allScripts()) await n.client.script('LOAD', s.source);
    for (const count of COUNTS) {
      const prefix = `bench-p${count}`;
      const frontier = new Frontier(cluster.client, {
        ...frontierOptions(config()),
        prefix,
        partitions: count,
        redisClock: false,
        hits: 1_000_000,
        windowSec: 1,
        moderated: false,
      });
      const rand = prng(0x9a27 + count);
      const hosts = Array.from({ length: nDomains }, (_, i) => `www.site-${i}.com`);
      const before = await Promise.all(cluster.nodes.map((x) => nodeUsage(x.client)));
      const crawl: CrawlRef = { appid: 'bench', crawlid: `c${count}` };
      let now = Date.UTC(2026, 0, 1);
      ctx.progress(`${count} partitions: enqueue ${nUrls} URLs over ${nDomains} domains`);
      for (let sent = 0; sent < nUrls; sent += BATCH) {
        const items: FrontierItem[] = [];
        for (let i = sent; i < Math.min(nUrls, sent + BATCH); i++) {
          const url = `https://${hosts[Math.floor(rand() * hosts.length)]}/articles/item-${i}.html`;
          items.push({
            crawl: i === 0 ? { ...crawl, settings: settings(crawl.crawlid) } : crawl,
            request: {
              url,
              domain: registrableDomain(url),
              fingerprint: requestFingerprint(url),
              priority: 40,
              depth: 1,
            },
          });
        }
        await frontier.enqueue(SPIDER, items, now);
      }
      const afterEnqueue = await Promise.all(cluster.nodes.map((x) => nodeUsage(x.client)));
      const memory = afterEnqueue.map((u, i) => u.memory - (before[i]?.memory ?? 0));
      out[`p${count}_bytes_per_url`] = round(memory.reduce((s, v) => s + v, 0) / nUrls, 1);
      out[`p${count}_busiest_memory_share`] = round(busiestShare(memory), 2);

      ctx.progress(`${count} partitions: lease + ack everything (${CALLERS} callers)`);
      let acked = 0;
      const start = nowNs();
      let lastReport = Date.now();
      const caller = async () => {
        let empty = 0;
        while (empty < 3) {
          now += 1000;
          const { leases } = await frontier.leaseMany(SPIDER, PER_LEASE, { now });
          if (leases.length === 0) {
            empty++;
            continue;
          }
          empty = 0;
          await frontier.ackMany(
            leases.map((lease) => ({ lease, outcome: 'done' as const })),
            now,
          );
          acked += leases.length;
          if (Date.now() - lastReport > 5000) {
            lastReport = Date.now();
            ctx.progress(`${count} partitions: ${acked} of ${nUrls} acked`);
          }
        }
      };
      await Promise.all(Array.from({ length: CALLERS }, caller));
      const seconds = msSince(start) / 1000;
      const afterAck = await Promise.all(cluster.nodes.map((x) => nodeUsage(x.client)));
      const cpu = afterAck.map((u, i) => u.cpuSec - (afterEnqueue[i]?.cpuSec ?? 0));
      out[`p${count}_acked`] = acked;
      out[`p${count}_pages_per_s`] = round(acked / seconds, 0);
      out[`p${count}_redis_cpu_ms_per_page`] = round((cpu.reduce((s, v) => s + v, 0) * 1000) / Math.max(1, acked), 4);
      out[`p${count}_busiest_cpu_share`] = round(busiestShare(cpu), 2);
      out[`p${count}_shard_cpu_s`] = cpu.map((c) => round(c, 2)).join(' / ');
      const info = await frontier.crawlInfo(SPIDER, 'bench', crawl.crawlid, now);
      out[`p${count}_info_done`] = info?.done ?? 0;
      for (const n of cluster.nodes) await n.client.flushall();
    }
    out.p6_bytes_per_url_ratio = round(Number(out.p6_bytes_per_url) / Number(out.p1_bytes_per_url), 3);
    return out;
  } finally {
    await cluster.close();
  }
}
