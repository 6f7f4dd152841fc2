/**
 * The real crawl path for the benchmarks (docs/design.md §6): the local cluster (localstack/runtime/cluster.ts) with the
 * SAME handlers Lambda runs, fed from real Kafka, over the benchmark Redis (bench/lib/redis.ts) and a topic
 * and key prefix of its own, with crawler worker PROCESSES (functions/crawler/main.ts, as on Fargate).
 *
 * - `startBenchCluster` starts it and waits until every worker has sent its first heartbeat (so a
 *   measurement does not include Node start-up);
 * - `crawlToCompletion` feeds one seed and waits until the frontier says the crawl has nothing queued or
 *   leased, printing progress; `readPageTimes` then reads `<p>.crawled_firehose` back (after the crawl, so
 *   reading 30 KB pages does not compete with the crawl for the CPU) for the page count and the first and
 *   last page message times (Kafka CreateTime, stamped by the crawler's producer); `firehoseLogBytes` is the size of
 *   that topic's log on the broker (bench/lib/kafka.ts `topicLogBytes`: bytes on the wire, compressed or not);
 * - `stop` stops workers and consumers, deletes the topics and unlinks the crawl's Redis keys.
 *
 * Profiling: with `profileDir`, the workers are spawned here instead (same entry, same environment as
 * localstack/runtime/crawler-workers.ts) with `--cpu-prof --cpu-prof-dir=<profileDir>`, which NODE_OPTIONS cannot carry.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CRAWLER_NODE_FLAGS } from '../../functions/crawler/node-flags.ts';
import { quietLocalMetrics, type Variables } from '../../lib/config/index.ts';
import { createKafka, createProducer, kafkaSettings } from '../../lib/kafka/client.ts';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import type { Kafka, Producer } from '../../lib/kafka/types.ts';
import { redisStatsStore } from '../../lib/monitor/stores.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import {
  crawlKey,
  dupefilterKey,
  heartbeatKey,
  partitionKeyList,
  robotsKey,
  spiderPartitions,
  spidersKey,
  statsCounterKey,
  statsRegistryKey,
} from '../../lib/redis/keys.ts';
import { listStatNames } from '../../lib/redis/stats.ts';
import { settlesWithin } from '../../lib/timeout.ts';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import type { LocalCluster } from '../../localstack/runtime/cluster.ts';
import { crawlerNode } from '../../localstack/runtime/crawler-node.ts';
import { envOf } from '../../localstack/runtime/crawler-workers.ts';
import type { MskBatchStats } from '../../localstack/runtime/msk-source.ts';
import { benchKafka, topicLogBytes } from './kafka.ts';
import type { ScenarioContext } from './scenario.ts';

export interface BenchClusterOptions {
  /** Configuration overrides on top of the bench defaults (throttle, host map, concurrency...). */
  overrides: Partial<Variables>;
  /** Crawler worker processes. */
  workers: number;
  /** The kafka-monitor's batching window (the event source mapping's). @default 100 */
  batchingWindowMs?: number;
  /** Records per MSK event. @default 100 */
  batchSize?: number;
  /** Spawn the workers with `--cpu-prof` writing here. */
  profileDir?: string;
  /** Called after every MSK event a monitor handled. */
  onBatch?: (fn: string, stats: MskBatchStats) => void;
  /** Origins crawled (`http://host:port`): their cached robots.txt is unlinked on stop. */
  origins?: string[];
  /** How often expire, reclaim and stats run (ms). @default 60000 (AWS runs them every minute) */
  scheduleEveryMs?: number;
}

export interface BenchCluster {
  vars: Variables;
  redis: RedisClient;
  frontier: Frontier;
  kafka: Kafka;
  producer: Producer;
  topics: ReturnType<typeof clusterTopics>;
  kafkaPid: number | undefined;
  /** Bytes of `<p>.crawled_firehose`'s log segments on the broker, all partitions (NaN when its data dir is unknown). */
  firehoseLogBytes(): number;
  workerPids(): number[];
  /** Produces crawl requests (JSON) to `<p>.incoming`, acks=all. */
  feed(values: object[]): Promise<void>;
  /** Crawl ids fed so far (their Redis keys are unlinked on stop). */
  crawls: { appid: string; crawlid: string; spiderid: string }[];
  stop(): Promise<void>;
}

const SPIDERS = ['link', 'wandering'];

/** Starts Kafka if needed, the monitors (in this process) and the crawler workers (child processes). */
export async function startBenchCluster(ctx: ScenarioContext, o: BenchClusterOptions): Promise<BenchCluster> {
  // Powertools would print an EMF document per invocation; must precede the handler modules' import.
  quietLocalMetrics();
  const { startLocalCluster } = await import('../../localstack/runtime/cluster.ts');
  const { createMonitorDeps } = await import('../../functions/shared/deps.ts');
  const { vars: base, pid: kafkaPid, dataDir } = await benchKafka(ctx);
  const bench = await ctx.redis();
  const [redisHost, redisPort] = bench.address.split(':') as [string, string];
  const id = randomBytes(4).toString('hex');
  const bodyDir = mkdtempSync(join(tmpdir(), 'crawl-bench-bodies-'));
  const vars: Variables = {
    ...base,
    KAFKA_TOPIC_PREFIX: `bench${id}`,
    REDIS_HOST: redisHost,
    REDIS_PORT: Number(redisPort),
    REDIS_CLUSTER: false,
    REDIS_KEY_PREFIX: `bench${id}`,
    ALLOW_PRIVATE_NETWORKS: true,
    // Every spider type, as deployed, unless BENCH_CRAWLER_SPIDERS names some (e.g. `link`).
    CRAWLER_SPIDERS: process.env.BENCH_CRAWLER_SPIDERS ?? base.CRAWLER_SPIDERS,
    LOG_LEVEL: 'WARN',
    // The benchmarks measure the crawl, not LocalStack: bodies to a directory, no CloudWatch metrics.
    CRAWL_LOCALSTACK: false,
    BODY_STORE_DIR: bodyDir,
    ...o.overrides,
  };
  const log = (level: string, message: string, fields?: Record<string, unknown>) => {
    if (level === 'warn' || level === 'error')
      ctx.progress(`  [${level}] ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`);
  };
  const deps = await createMonitorDeps(
    'bench',
    { info() {}, warn: (m, f) => log('warn', m, f), error: (m, f) => log('error', m, f) },
    vars,
  );
  const kafka = createKafka(kafkaSettings(vars));
  const workerEnv = { ...process.env, POWERTOOLS_METRICS_DISABLED: 'true' };
  const own: ChildProcess[] = [];
  let cluster: LocalCluster | undefined;
  let producer: Producer | undefined;
  const topics = clusterTopics(vars.KAFKA_TOPIC_PREFIX);
  const crawls: BenchCluster['crawls'] = [];
  const frontier = new Frontier(bench.client, frontierOptions(vars));

  const stop = async () => {
    await producer?.disconnect().catch(() => undefined);
    await Promise.all(
      own.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    await cluster?.stop();
    await deps.close();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
    await admin.disconnect();
    await cleanupKeys(bench.client, vars.REDIS_KEY_PREFIX, crawls, o.origins ?? []).catch((e: Error) =>
      ctx.progress(`  cleanup failed: ${e.message}`),
    );
    rmSync(bodyDir, { recursive: true, force: true });
  };

  try {
    cluster = await startLocalCluster({
      vars,
      context: deps.ctx,
      log,
      batchSize: o.batchSize ?? 100,
      maxBatchingWindowMs: o.batchingWindowMs ?? 100,
      // AWS runs expire / reclaim / stats every minute.
      scheduleEveryMs: o.scheduleEveryMs ?? 60_000,
      kafka,
      crawlerWorkers: o.profileDir ? 0 : o.workers,
      workerEnv,
      onBatch: o.onBatch,
    });
    if (o.profileDir) {
      const entry = join(REPO_ROOT, 'functions', 'crawler', 'main.ts');
      const env = envOf(vars, workerEnv);
      for (let i = 0; i < o.workers; i++) {
        const args = ['--cpu-prof', `--cpu-prof-dir=${o.profileDir}`, ...CRAWLER_NODE_FLAGS, entry];
        own.push(spawn(crawlerNode(vars.CRAWLER_NODE), args, { env, stdio: ['ignore', 'inherit', 'inherit'] }));
      }
    }
    producer = createProducer(kafka);
    await producer.connect();
    const workerPids = () => [
      ...(cluster?.workers() ?? []),
      ...own.map((c) => c.pid).filter((p): p is number => p !== undefined),
    ];
    await waitForWorkers(bench.client, vars.REDIS_KEY_PREFIX, workerPids());
    const p = producer;
    return {
      vars,
      redis: bench.client,
      frontier,
      kafka,
      producer: p,
      topics,
      kafkaPid,
      firehoseLogBytes: () => topicLogBytes(dataDir, topics.crawledFirehose),
      workerPids,
      crawls,
      async feed(values) {
        for (const v of values as { appid?: string; crawlid?: string; spiderid?: string }[]) {
          if (v.appid && v.crawlid) crawls.push({ appid: v.appid, crawlid: v.crawlid, spiderid: v.spiderid ?? 'link' });
        }
        await p.send({ topic: topics.incoming, acks: -1, messages: values.map((v) => ({ value: JSON.stringify(v) })) });
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Waits until every worker pid has a live crawler heartbeat (workers beat on start, then every 10 s). */
async function waitForWorkers(redis: RedisClient, prefix: string, pids: number[]) {
  const stats = redisStatsStore(redis, prefix);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const live = await stats.live('crawler', Date.now(), 300_000);
    const up = new Set(live.map((id) => Number(id.split(':').pop())));
    if (pids.every((p) => up.has(p))) return;
    if (Date.now() > deadline) throw new Error(`crawler workers ${pids.join(',')} did not start within 60 s`);
    await sleep(100);
  }
}

/** Unlinks what the bench crawls left in Redis: partitions, dupefilters, stats, heartbeats (never KEYS/SCAN). */
async function cleanupKeys(
  redis: RedisClient,
  prefix: string,
  crawls: BenchCluster['crawls'],
  origins: string[],
): Promise<void> {
  const keys = new Set<string>([spidersKey(prefix), heartbeatKey(prefix), statsRegistryKey(prefix)]);
  for (const origin of origins) keys.add(robotsKey(prefix, origin));
  for (const spider of SPIDERS) {
    for (const p of spiderPartitions(prefix, spider, true)) {
      for (const k of partitionKeyList(p)) keys.add(k);
      for (const c of crawls)
        if (c.spiderid === spider) keys.add(dupefilterKey(p, crawlKey(c.appid, c.crawlid, spider)));
    }
  }
  for (const name of await listStatNames(redis, prefix)) keys.add(statsCounterKey(prefix, name));
  const all = [...keys];
  for (let i = 0; i < all.length; i += 500) await redis.unlink(...all.slice(i, i + 500));
}

export interface CrawlProgress {
  done: number;
  failed: number;
  /** Seconds from feed to the frontier reporting nothing queued or leased. */
  seconds: number;
  timedOut: boolean;
}

/**
 * Feeds the seeds of one crawl (one Kafka batch, one crawl id) and waits until the crawl has nothing queued
 * or leased (or `timeoutS` passes).
 */
export async function crawlToCompletion(
  c: BenchCluster,
  ctx: ScenarioContext,
  crawl: { urls: string[]; maxdepth: number; crawlid: string; appid?: string; spiderid?: string },
  timeoutS: number,
  label: string,
): Promise<CrawlProgress> {
  const appid = crawl.appid ?? 'bench';
  const spiderid = crawl.spiderid ?? 'link';
  const started = Date.now();
  await c.feed(crawl.urls.map((url) => ({ url, appid, crawlid: crawl.crawlid, maxdepth: crawl.maxdepth, spiderid })));
  let lastReport = Date.now();
  let lastDone = 0;
  for (;;) {
    await sleep(250);
    const info = await c.frontier.crawlInfo(spiderid, appid, crawl.crawlid);
    const done = (info?.done ?? 0) + (info?.failed ?? 0);
    if (info && info.queued === 0 && info.leased === 0 && done > 0) {
      return { done: info.done, failed: info.failed, seconds: (Date.now() - started) / 1000, timedOut: false };
    }
    if (Date.now() - lastReport >= 5000) {
      const rate = ((done - lastDone) * 1000) / (Date.now() - lastReport);
      ctx.progress(
        `  ${label}: ${done} pages, ${info?.queued ?? 0} queued, ${info?.leased ?? 0} leased, ${rate.toFixed(0)} pages/s`,
      );
      lastReport = Date.now();
      lastDone = done;
    }
    if (Date.now() - started > timeoutS * 1000) {
      ctx.progress(`  ${label}: timeout of ${timeoutS} s reached with ${done} pages`);
      return { done: info?.done ?? 0, failed: info?.failed ?? 0, seconds: timeoutS, timedOut: true };
    }
  }
}

export interface PageTimes {
  messages: number;
  firstMs: number;
  lastMs: number;
  /** Mean page message size in bytes. */
  meanBytes: number;
}

/**
 * Reads `<p>.crawled_firehose` from the beginning until `expected` messages stamped at or after `sinceMs`
 * (or `timeoutS`), keeping only counts and Kafka timestamps (no JSON parsing); earlier messages (a warm-up
 * crawl) are skipped.
 */
export async function readPageTimes(
  c: BenchCluster,
  expected: number,
  sinceMs = 0,
  timeoutS = 120,
): Promise<PageTimes> {
  let messages = 0;
  let bytes = 0;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  await readFirehose(c, sinceMs, timeoutS, (t, size) => {
    if (t < first) first = t;
    if (t > last) last = t;
    bytes += size;
    messages++;
    return messages >= expected;
  });
  return { messages, firstMs: first, lastMs: last, meanBytes: messages ? bytes / messages : 0 };
}

/**
 * Reads `<p>.crawled_firehose` from the beginning, handing `each` the Kafka timestamp and value size of every message
 * stamped at or after `sinceMs`, until `each` says it has all it needs (true; the rest of that batch is still handed
 * over) or `timeoutS` passes.
 */
export async function readFirehose(
  c: BenchCluster,
  sinceMs: number,
  timeoutS: number,
  each: (timestampMs: number, bytes: number) => boolean,
): Promise<void> {
  const consumer = c.kafka.consumer({
    groupId: `bench-read-${randomBytes(4).toString('hex')}`,
    maxBytes: 64 << 20,
    maxBytesPerPartition: 32 << 20,
    maxWaitTimeInMs: 200,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: c.topics.crawledFirehose, fromBeginning: true });
    let enough = false;
    const done = new Promise<void>((resolve) => {
      void consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            const t = Number(m.timestamp);
            if (t >= sinceMs && each(t, m.value?.length ?? 0)) enough = true;
          }
          if (enough) resolve();
        },
      });
    });
    // The timer is cancelled once the pages are in: an uncancelled one kept the bench process alive up to timeoutS.
    await settlesWithin(done, timeoutS * 1000);
  } finally {
    await consumer.disconnect();
  }
}
