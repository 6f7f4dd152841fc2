/**
 * Sizes, backlog reads (issue 48 item 9): what the periodic and admin reads of the frontier cost at 1,000,000 queued
 * requests over 100,000 domains, command by command.
 *
 * 1. enqueue N requests (default 1M) over D domains (default 100k, every domain the same share, two priorities)
 *    for two crawls (`main` 80 %, `stop-me` 20 %) through `Frontier.enqueue` in batches of 2,000, two in flight;
 * 2. bytes per queued request (`INFO memory` used_memory delta), and the kept total's own key (`MEMORY USAGE`);
 * 3. each read with the server's SLOWLOG logging every command (private Redis only: `slowlog-log-slower-than 0`):
 *    its wall time and its slowest single command. The reads: the stats function (`fleetMetrics`), the `queue`
 *    stats reply (`statsPayload`), the dashboard's queue table (`queueSummary` top 10) and crawl list (`appInfo`),
 *    an `info` of the main crawl (`crawlInfo`), the expire function's reads (`dueCrawls`, `sweepFinished`), reclaim;
 *    then a `stop` of the 20 % crawl and the stats read that settles its counters; then the reclaim of 1,000 expired
 *    leases and the sweep of 1,000 completed one-request crawls (the reclaim and expire functions with work to do).
 *    For comparison, the commands the old reads were: one HGETALL of the per-domain counts, one ZRANGEBYSCORE of the
 *    main crawl's counters.
 *
 * Sizes: BENCH_BACKLOG_URLS, BENCH_BACKLOG_DOMAINS. Redis: bench/lib/redis.ts (`BENCH_REDIS`; the SLOWLOG figures need
 * the private one, which this scenario may reconfigure).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { config } from '../../lib/config/index.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import type { CrawlRef, FrontierItem } from '../../lib/frontier-model.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { fleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { statsPayload } from '../../lib/monitor/stats-report.ts';
import { redisStatsStore } from '../../lib/monitor/stores.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { crawlKey, dupefilterKey, partitionKeys, spidersKey } from '../../lib/redis/keys.ts';
import { allScripts } from '../../lib/redis/scripts.ts';
import { commandBreakdown, commandStats, memoryUsage, usedMemory } from '../lib/redis.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { msSince, nowNs, round } from '../lib/timing.ts';

export const description = 'Sizes: backlog/stats reads at 1M queued requests over 100k domains, slowest command';

export const targets: Target[] = [
  { metric: 'stats_run_slowest_command_ms', op: '<=', value: 10, label: 'stats run slowest cmd ms' },
  { metric: 'slowest_command_cpu_ms', op: '<=', value: 10, label: 'slowest cmd, Redis CPU ms (all reads)' },
  { metric: 'slowest_command_ms', op: '<=', value: 10, label: 'slowest cmd ms (SLOWLOG, all reads, median)' },
  { metric: 'stats_run_ms', op: '<', value: 1000, label: 'stats run ms' },
];

export const headline: [string, string][] = [
  ['urls_queued', 'requests queued'],
  ['domains', 'domains'],
  ['enqueue_urls_per_s', 'enqueue/s'],
  ['bytes_per_url', 'bytes/request'],
  ['queued_total_key_bytes', 'kept total key bytes'],
  ['stats_run_ms', 'stats run ms (stats function)'],
  ['stats_run_slowest_command_ms', 'stats run slowest cmd ms'],
  ['queue_stats_ms', 'queue stats reply ms'],
  ['queue_stats_slowest_command_ms', 'queue stats slowest cmd ms'],
  ['dashboard_queues_ms', 'dashboard queues ms'],
  ['dashboard_crawls_ms', 'dashboard crawls ms'],
  ['info_ms', 'info ms'],
  ['stop_settle_ms', 'stop + settle ms'],
  ['slowest_command_ms', 'slowest cmd ms (all reads)'],
  ['slowest_command_cpu_ms', 'slowest cmd Redis CPU ms (all reads)'],
  ['info_slowest_command_cpu_ms', 'info slowest cmd CPU ms'],
  ['stop_settle_slowest_command_cpu_ms', 'stop + settle slowest cmd CPU ms'],
  ['reclaim_slowest_command_cpu_ms', 'reclaim 1,000 slowest cmd CPU ms'],
  ['sweep_completed_slowest_command_cpu_ms', 'sweep 1,000 completed slowest cmd CPU ms'],
  ['old_hgetall_slowest_command_cpu_ms', 'old: HGETALL CPU ms'],
  ['old_info_range_slowest_command_cpu_ms', 'old: info range CPU ms'],
  ['queue_stats_commands_over_10ms', 'queue stats cmds > 10 ms'],
  ['info_commands_over_10ms', 'info cmds > 10 ms'],
  ['stop_settle_slowest_command_ms', 'stop + settle slowest cmd ms'],
  ['old_hgetall_ms', 'old: HGETALL counts ms'],
  ['old_info_range_ms', 'old: info range ms'],
];

const SPIDER = 'link';
const BATCH = 2000;
/** Expired leases for the reclaim read, and completed crawls for the sweep. */
const WORK = 1000;

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

/** One SLOWLOG entry: id, time, duration (µs), arguments. */
type SlowEntry = [number, number, number, string[], ...unknown[]];

/** Script names by SHA, so an EVALSHA reads as the script it ran. */
const scriptBySha = new Map(allScripts().map((s) => [s.sha, s.name]));

/**
 * A command as its name and first arguments: a frontier script as `<script> <ARGV[6]> <ARGV[7]>` (its mode and
 * first own argument; the 19 partition keys and the 5 common arguments left out), anything else as its first three
 * words. SLOWLOG keeps a command's first 32 arguments, enough for these.
 */
function describe(args: readonly unknown[]): string {
  const words = args.map((a) => (Buffer.isBuffer(a) ? a.toString('latin1') : String(a)));
  const short = (w: string | undefined) =>
    Array.from((w ?? '').slice(0, 24), (c) => (c.charCodeAt(0) < 32 ? '.' : c)).join('');
  const name = (words[0] ?? '').toLowerCase();
  if (name === 'evalsha' || name === 'eval') {
    // EVAL carries the source, which SLOWLOG cuts to its first 128 bytes: enough to tell the scripts apart.
    const head = (words[1] ?? '').slice(0, 128);
    const script = scriptBySha.get(words[1] ?? '') ?? allScripts().find((s) => s.source.startsWith(head))?.name ?? '?';
    const own = 3 + Number(words[2]) + 5;
    return [script, short(words[own]), short(words[own + 1])].join(' ').trim();
  }
  return words.slice(0, 3).map(short).join(' ');
}

/**
 * The commands SLOWLOG holds since its last reset (logging everything), the bench's own SLOWLOG and CONFIG left out:
 * the slowest (µs and what it was), the three slowest described, how many, and how many took over 10 ms.
 */
async function slowest(redis: RedisClient) {
  const entries = ((await redis.call('SLOWLOG', 'GET', '-1')) as SlowEntry[]).filter(
    (e) => !/^(slowlog|config)$/i.test(String(e[3][0])),
  );
  const top = [...entries].sort((a, b) => b[2] - a[2]).slice(0, 3);
  return {
    us: top[0]?.[2] ?? 0,
    command: top[0] ? describe(top[0][3]) : '',
    top: top.map((e) => `${describe(e[3])} ${(e[2] / 1000).toFixed(2)}`).join('; '),
    commands: entries.length,
    over10ms: entries.filter((e) => e[2] > 10_000).length,
  };
}

/** CPU time of a process's main thread so far, ns (/proc/<pid>/task/<pid>/schedstat: time on CPU), if readable. */
function mainThreadCpuNs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

/**
 * Runs `read` with every command it sends timed in Redis's CPU: the server main thread's CPU time between the
 * command's send and its reply (the reads send one command at a time, and nothing else uses the private server).
 * Unlike SLOWLOG's wall time, a command the OS preempts on a busy machine does not look slow.
 */
async function cpuPerCommand(redis: RedisClient, pid: number, read: () => Promise<unknown>) {
  type Command = { name: string; args: unknown[]; promise: Promise<unknown> };
  const client = redis as unknown as { sendCommand: (command: Command, ...rest: unknown[]) => unknown };
  const original = client.sendCommand;
  const samples: { name: string; ms: number }[] = [];
  const pending: Promise<unknown>[] = [];
  client.sendCommand = function (this: unknown, command: Command, ...rest: unknown[]) {
    const before = mainThreadCpuNs(pid) ?? 0;
    const sent = original.call(this, command, ...rest);
    pending.push(
      command.promise.then(
        () =>
          samples.push({
            name: describe([command.name, ...command.args]),
            ms: ((mainThreadCpuNs(pid) ?? 0) - before) / 1e6,
          }),
        () => undefined,
      ),
    );
    return sent;
  };
  try {
    await read();
    await Promise.all(pending);
  } finally {
    client.sendCommand = original;
  }
  return samples;
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const nUrls = envInt('BENCH_BACKLOG_URLS', 1_000_000);
  const nDomains = envInt('BENCH_BACKLOG_DOMAINS', 100_000);
  const bench = await ctx.redis();
  const redis = bench.client;
  const prefix = `bench-b-${randomBytes(4).toString('hex')}`;
  const frontier = new Frontier(redis, { ...frontierOptions(config()), prefix });
  const p = frontier.partitionFor(SPIDER);
  const pk = partitionKeys(p);
  const crawls: CrawlRef[] = [
    { appid: 'bench-app', crawlid: 'main' },
    { appid: 'bench-app', crawlid: 'stop-me' },
  ];
  const dupeKeys = crawls.map((c) => dupefilterKey(p, crawlKey(c.appid, c.crawlid, SPIDER)));
  for (const [k, v] of Object.entries({
    urls_target: nUrls,
    domains: nDomains,
    batch: BATCH,
    crawls: 'bench-app/main 0.8, bench-app/stop-me 0.2',
    key_prefix: prefix,
  }))
    ctx.input(k, v);
  const private_ = bench.mode === 'private';
  ctx.note(
    private_
      ? 'private redis-server: SLOWLOG logs every command of each read (slowlog-log-slower-than 0)'
      : 'shared Redis: SLOWLOG left alone, so no per-command figures; wall times only',
  );
  const out: Numbers = { urls_target: nUrls, domains: nDomains };
  for (const s of allScripts()) await redis.script('LOAD', s.source);
  if (private_) await redis.call('CONFIG', 'SET', 'slowlog-max-len', '100000');
  let slowestOverall = 0;
  let slowestCpu = 0;
  /**
   * Runs a read `runs` times with SLOWLOG logging every command: its wall ms (median), its slowest command (ms; the
   * median over the runs, and the worst), the three slowest of each run and the three slowest by Redis CPU (named, so
   * a reader sees which script and mode they were), and how many commands it sent. The machine is shared: a command the OS
   * preempts shows in SLOWLOG as slow, so one run's slowest is noisy; a read whose own commands are slow is slow in
   * every run.
   */
  const measure = async (name: string, read: () => Promise<unknown>, runs = 3) => {
    const walls: number[] = [];
    const worst: number[] = [];
    let last = { us: 0, command: '', top: '', commands: 0, over10ms: 0 };
    const tops: string[] = [];
    let over = 0;
    let cpuWorst = { name: '', ms: 0 };
    let cpuOver = 0;
    let cpuTop: { name: string; ms: number }[] = [];
    const commands0 = await commandStats(redis);
    for (let i = 0; i < runs; i++) {
      if (private_) {
        await redis.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
        await redis.call('SLOWLOG', 'RESET');
      }
      const t = nowNs();
      let cpu: { name: string; ms: number }[] = [];
      if (private_ && bench.pid !== undefined) cpu = await cpuPerCommand(redis, bench.pid, read);
      else await read();
      walls.push(msSince(t));
      for (const c of cpu) {
        if (c.ms > cpuWorst.ms) cpuWorst = c;
        if (c.ms > 10) cpuOver++;
      }
      cpuTop = [...cpuTop, ...cpu].sort((a, b) => b.ms - a.ms).slice(0, 3);
      if (private_) {
        await redis.call('CONFIG', 'SET', 'slowlog-log-slower-than', '10000');
        last = await slowest(redis);
        worst.push(last.us / 1000);
        tops.push(last.top);
        over += last.over10ms;
      }
    }
    out[`${name}_server_breakdown`] = commandBreakdown(commands0, await commandStats(redis));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    out[`${name}_ms`] = round(median(walls), 1);
    if (private_) {
      out[`${name}_slowest_command_ms`] = round(median(worst), 2);
      out[`${name}_slowest_command_max_ms`] = round(Math.max(...worst), 2);
      out[`${name}_slowest_command`] = last.command;
      out[`${name}_slowest_commands`] = tops.join(' | ');
      out[`${name}_commands`] = last.commands;
      out[`${name}_commands_over_10ms`] = over;
      out[`${name}_slowest_command_cpu_ms`] = round(cpuWorst.ms, 2);
      out[`${name}_slowest_command_cpu`] = cpuWorst.name;
      out[`${name}_slowest_commands_cpu`] = cpuTop.map((c) => `${c.name} ${c.ms.toFixed(2)}`).join('; ');
      out[`${name}_commands_over_10ms_cpu`] = cpuOver;
      slowestOverall = Math.max(slowestOverall, median(worst));
      slowestCpu = Math.max(slowestCpu, cpuWorst.ms);
      ctx.progress(
        `  ${name}: ${median(walls).toFixed(1)} ms, ${last.commands} commands, slowest ${worst.map((w) => w.toFixed(2)).join(' / ')} ms (${last.command}), ${over} over 10 ms; by CPU slowest ${cpuWorst.ms.toFixed(2)} ms (${cpuWorst.name}), ${cpuOver} over 10 ms`,
      );
      ctx.progress(`    slowest by wall, each run: ${tops.join(' | ')}`);
      ctx.progress(`    slowest by CPU: ${out[`${name}_slowest_commands_cpu`]}`);
    } else ctx.progress(`  ${name}: ${median(walls).toFixed(1)} ms`);
  };

  try {
    // ---- enqueue ---------------------------------------------------------------------------------------
    ctx.progress(`enqueue ${nUrls.toLocaleString('en-US')} requests over ${nDomains.toLocaleString('en-US')} domains`);
    const memBefore = await usedMemory(redis);
    const seeded = new Set<number>();
    const batchOf = (from: number, size: number): FrontierItem[] =>
      Array.from({ length: size }, (_, k) => {
        const i = from + k;
        const c = i % 5 === 4 ? 1 : 0;
        const ref = crawls[c] as CrawlRef;
        const first = !seeded.has(c);
        seeded.add(c);
        const url = `https://www.site${i % nDomains}.com/section/page-${Math.floor(i / nDomains)}-${i}.html`;
        return {
          crawl: first
            ? { ...ref, settings: { ...ref, spiderid: SPIDER, priority: 50, maxdepth: 3, expires: 0 } }
            : ref,
          request: {
            url,
            domain: `site${i % nDomains}.com`,
            fingerprint: requestFingerprint(url),
            priority: i % 3 === 0 ? 50 : 40,
            depth: i % 3 === 0 ? 0 : 1,
          },
        };
      });
    const start = nowNs();
    let queued = 0;
    let last = Date.now();
    let pending: Promise<void> | undefined;
    for (let sent = 0; sent < nUrls; sent += BATCH) {
      const batch = batchOf(sent, Math.min(BATCH, nUrls - sent));
      const previous = pending;
      pending = frontier.enqueue(SPIDER, batch).then((o) => {
        queued += o.filter((x) => x === 'queued').length;
      });
      await previous;
      if (Date.now() - last > 10_000) {
        last = Date.now();
        ctx.progress(`  ${sent.toLocaleString('en-US')} (${Math.round(sent / (msSince(start) / 1000))}/s)`);
      }
    }
    await pending;
    const enqueueS = msSince(start) / 1000;
    const memAfter = await usedMemory(redis);
    Object.assign(out, {
      urls_queued: queued,
      enqueue_s: round(enqueueS, 1),
      enqueue_urls_per_s: Math.round(nUrls / enqueueS),
      bytes_per_url: round((memAfter - memBefore) / queued, 1),
      queued_total_key_bytes: await memoryUsage(redis, pk.queuedTotal),
      domain_counts_bytes: await memoryUsage(redis, pk.domainCounts),
    });
    ctx.progress(`  ${queued} queued in ${enqueueS.toFixed(1)} s; ${out.bytes_per_url} B/request`);

    // ---- the reads -------------------------------------------------------------------------------------
    const ctxOf = {
      frontier,
      stats: redisStatsStore(redis, prefix),
      now: () => Date.now(),
    } as unknown as MonitorContext;
    let backlog = 0;
    await measure('stats_run', async () => {
      backlog = (await fleetMetrics(ctxOf)).totalBacklog;
    });
    out.stats_run_backlog = backlog;
    await measure('queue_stats', () => statsPayload(ctxOf, 'queue'));
    await measure('dashboard_queues', () => frontier.queueSummary(SPIDER, 10));
    await measure('dashboard_crawls', () => frontier.appInfo(SPIDER, 'bench-app'));
    await measure('info', () => frontier.crawlInfo(SPIDER, 'bench-app', 'main'));
    await measure('expire_reads', async () => {
      await frontier.dueCrawls(SPIDER);
      await frontier.sweepFinished(SPIDER);
      await frontier.reclaim(SPIDER);
    });
    await measure(
      'stop_settle',
      async () => {
        out.stop_purged = (await frontier.stop(SPIDER, 'bench-app', 'stop-me')).purged;
        out.after_stop_backlog = (await frontier.queueSummary(SPIDER)).queued;
      },
      1,
    );
    // ---- the reclaim and expire functions with work to do ----------------------------------------------
    // Leases of the main crawl that expire (crawlers died holding them), then one-request crawls that complete and
    // fall due for sweeping: each function's script calls carry full pages of work.
    const options = frontierOptions(config());
    // On the frontier's clock (Redis's TIME), leases would only expire after LEASE_TIMEOUT: these calls pass the time.
    const timed = new Frontier(redis, { ...options, prefix, redisClock: false });
    const leasedAt = Date.now();
    let leased = 0;
    while (leased < WORK) {
      const { leases } = await timed.leaseMany(SPIDER, Math.min(100, WORK - leased), { now: leasedAt });
      if (leases.length === 0) break;
      leased += leases.length;
    }
    out.expired_leases = leased;
    await measure(
      'reclaim',
      async () => {
        out.reclaimed = await timed.reclaim(SPIDER, leasedAt + options.leaseMs + 1);
      },
      1,
    );
    const doneAt = leasedAt + options.leaseMs + 2;
    const completed: FrontierItem[] = Array.from({ length: WORK }, (_, i) => {
      const ref = { appid: 'bench-app', crawlid: `done-${i}` };
      const url = `https://www.done${i}.com/`;
      return {
        crawl: { ...ref, settings: { ...ref, spiderid: SPIDER, priority: 90, maxdepth: 0, expires: 0 } },
        // Above the main crawl's priorities: the next leases take these.
        request: { url, domain: `done${i}.com`, fingerprint: requestFingerprint(url), priority: 90, depth: 0 },
      };
    });
    for (const item of completed)
      dupeKeys.push(dupefilterKey(p, crawlKey(item.crawl.appid, item.crawl.crawlid, SPIDER)));
    for (let i = 0; i < WORK; i += 500) await timed.enqueue(SPIDER, completed.slice(i, i + 500), doneAt);
    for (let acked = 0; acked < WORK; ) {
      const { leases } = await timed.leaseMany(SPIDER, Math.min(100, WORK - acked), { now: doneAt });
      if (leases.length === 0) break;
      await timed.ackMany(
        leases.map((lease) => ({ lease, outcome: 'done' as const })),
        doneAt,
      );
      acked += leases.length;
    }
    await measure(
      'sweep_completed',
      async () => {
        out.swept_crawls = await timed.sweepFinished(SPIDER, doneAt + options.dupefilterTtlSec * 1000 + 1);
      },
      1,
    );
    out.slowest_command_ms = round(slowestOverall, 2);
    out.slowest_command_cpu_ms = round(slowestCpu, 2);
    // What the reads were before: one command each over the whole structure.
    const mainBase = (await redis.hget(pk.crawlRefs, crawlKey('bench-app', 'main', SPIDER))) ?? '';
    await measure('old_hgetall', () => redis.hgetall(pk.domainCounts), 1);
    if (mainBase.length === 1) {
      const digit = mainBase.charCodeAt(0);
      const refnum = digit < 58 ? digit - 48 : digit < 91 ? digit - 55 : digit - 61;
      const base = refnum * 536870912;
      await measure(
        'old_info_range',
        () => redis.zrangebyscore(pk.crawlIndex, base, base + 536870911, 'WITHSCORES'),
        1,
      );
    }
    return out;
  } finally {
    if (private_) await redis.call('CONFIG', 'SET', 'slowlog-log-slower-than', '10000');
    ctx.progress('cleanup: UNLINK of the partition keys and dupefilters');
    await redis.unlink(...Object.values(pk), ...dupeKeys, spidersKey(prefix));
  }
}
