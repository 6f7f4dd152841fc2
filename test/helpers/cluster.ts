/**
 * The local cluster for e2e tests: the real handlers, driven from real Kafka consumer groups, over a
 * topic prefix and Redis key prefix of the test's own, plus a collector of what comes out.
 */
import type { Kafka, Producer } from 'kafkajs';
import { createMonitorDeps, type MonitorDeps } from '../../functions/shared/deps.ts';
import { config, type Variables } from '../../lib/config/index.ts';
import { createProducer } from '../../lib/kafka/client.ts';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import { redisSpiderTypeStore } from '../../lib/monitor/spider-types.ts';
import { type Log, silentLog } from '../../lib/ports.ts';
import { type LocalCluster, startLocalCluster } from '../../localstack/runtime/cluster.ts';
import type { RuntimeLog } from '../../localstack/runtime/log.ts';
import type { FixtureSite } from '../../localstack/site/site.ts';
import { type CrawlerProcess, startCrawlerProcess } from './crawler-process.ts';
import { clusterRedis, testKafka, uniqueName, waitUntil } from './services.ts';

export interface TestCluster {
  vars: Variables;
  deps: MonitorDeps;
  cluster: LocalCluster;
  kafka: Kafka;
  producer: Producer;
  topics: ReturnType<typeof clusterTopics>;
  /** Produces JSON (objects) or raw bytes/strings to `<p>.incoming`. */
  feed(values: (object | string | Buffer)[]): Promise<void>;
  /** Collects every message of a topic from the beginning. */
  collect(topic: string): Promise<Collector>;
  stop(): Promise<void>;
}

export interface Collector {
  messages: Record<string, unknown>[];
  /** Waits for the first message matching `match`. */
  waitFor(
    match: (m: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** Starts a local cluster over fresh prefixes; `overrides` change configuration variables (e.g. Redis port). */
export async function startTestCluster(
  overrides: Partial<Variables> = {},
  options: {
    scheduleEveryMs?: number;
    log?: RuntimeLog;
    batchSize?: number;
    crawlerWorkers?: number;
    /** CloudWatch namespace of the stats metrics in LocalStack. @default METRICS_NAMESPACE */
    metricsNamespace?: string;
    /** The log of the monitors' context (the handlers' log lines). @default silentLog */
    monitorLog?: Log;
  } = {},
): Promise<TestCluster> {
  const base = config();
  const vars: Variables = {
    ...base,
    KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}`,
    KAFKA_TOPIC_PREFIX: uniqueName('e2e'),
    KAFKA_TOPIC_PARTITIONS: 2,
    REDIS_HOST: '127.0.0.1',
    REDIS_PORT: base.CRAWL_REDIS_CLUSTER_PORT,
    REDIS_CLUSTER: true,
    REDIS_KEY_PREFIX: uniqueName('k'),
    ...overrides,
  };
  const deps = await createMonitorDeps('e2e', options.monitorLog ?? silentLog, vars);
  const kafka = testKafka();
  const cluster = await startLocalCluster({
    vars,
    context: deps.ctx,
    log: options.log ?? (() => {}),
    scheduleEveryMs: options.scheduleEveryMs ?? 1000,
    maxBatchingWindowMs: 100,
    batchSize: options.batchSize ?? 100,
    kafka,
    crawlerWorkers: options.crawlerWorkers ?? 0,
    metricsNamespace: options.metricsNamespace,
  });
  const producer = createProducer(kafka);
  await producer.connect();
  const topics = clusterTopics(vars.KAFKA_TOPIC_PREFIX);
  const collectors: Collector[] = [];
  return {
    vars,
    deps,
    cluster,
    kafka,
    producer,
    topics,
    async feed(values) {
      await producer.send({
        topic: topics.incoming,
        acks: -1,
        messages: values.map((v) => ({
          value: Buffer.isBuffer(v) || typeof v === 'string' ? v : JSON.stringify(v),
        })),
      });
    },
    async collect(topic) {
      const messages: Record<string, unknown>[] = [];
      const consumer = kafka.consumer({ groupId: uniqueName('collect') });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          try {
            messages.push(JSON.parse(message.value?.toString('utf8') ?? 'null') as Record<string, unknown>);
          } catch {
            messages.push({ unparsable: message.value?.toString('utf8') });
          }
        },
      });
      const c: Collector = {
        messages,
        waitFor: (match, what, timeoutMs = 30_000) => waitUntil(what, () => messages.find(match), timeoutMs),
        stop: () => consumer.disconnect(),
      };
      collectors.push(c);
      return c;
    },
    async stop() {
      await Promise.all(collectors.map((c) => c.stop()));
      await producer.disconnect();
      await cluster.stop();
      await deps.close();
      const admin = kafka.admin();
      await admin.connect();
      await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
      await admin.disconnect();
    },
  };
}

/** The page messages of one crawl seen so far on a collected `crawled_firehose`. */
export function crawlPages(pages: Collector, crawlid: string): Record<string, unknown>[] {
  return pages.messages.filter((m) => m.crawlid === crawlid);
}

/** Waits for a crawl's `complete` notice on a collected `outbound_firehose`. */
export function completeNotice(outbound: Collector, crawlid: string, timeoutMs = 60_000) {
  return outbound.waitFor(
    (m) => m.action === 'complete' && m.crawlid === crawlid,
    `crawl ${crawlid} to complete`,
    timeoutMs,
  );
}

/** A cluster for the crawling e2e and poison tests, with what it publishes collected from the start. */
export interface E2eCluster extends TestCluster {
  /** Every message on `<p>.crawled_firehose`. */
  pages: Collector;
  /** Every message on `<p>.outbound_firehose`. */
  outbound: Collector;
}

/**
 * Starts a local cluster that crawls as fast as it can (no politeness delay: 1000 fetches per second per domain,
 * unmoderated), logs warnings only, and collects its pages and replies. With `site`, the crawlers reach the fixture
 * site's host names on loopback. `overrides` win over all of these.
 */
export async function startE2eCluster(
  overrides: Partial<Variables> = {},
  options: { site?: Pick<FixtureSite, 'hostMap'>; crawlerWorkers?: number; monitorLog?: Log } = {},
): Promise<E2eCluster> {
  const t = await startTestCluster(
    {
      ...(options.site ? { ALLOW_PRIVATE_NETWORKS: true, CRAWLER_HOST_MAP: options.site.hostMap } : {}),
      QUEUE_HITS: 1000,
      QUEUE_WINDOW: 1,
      QUEUE_MODERATED: false,
      LOG_LEVEL: 'WARN',
      ...overrides,
    },
    { crawlerWorkers: options.crawlerWorkers ?? 1, monitorLog: options.monitorLog },
  );
  try {
    return {
      ...t,
      pages: await t.collect(t.topics.crawledFirehose),
      outbound: await t.collect(t.topics.outboundFirehose),
    };
  } catch (error) {
    await t.stop();
    throw error;
  }
}

/**
 * Starts crawler worker processes beside `t` (one for each entry of `workers`, with those variables on top of the
 * cluster's) and waits until they have registered `spiderType`; stops them when they do not within `timeoutMs`.
 */
export async function startRegisteredWorkers<const W extends readonly Partial<Variables>[]>(
  t: TestCluster,
  spiderType: string,
  workers: W,
  timeoutMs = 30_000,
): Promise<{ -readonly [K in keyof W]: CrawlerProcess }> {
  const started = workers.map((overrides) => startCrawlerProcess(t.vars, overrides));
  const redis = clusterRedis();
  try {
    const store = redisSpiderTypeStore(redis, t.vars.REDIS_KEY_PREFIX);
    await waitUntil(
      `the workers to register spider type ${spiderType}`,
      async () => (await store.registered()).has(spiderType),
      timeoutMs,
    );
    return started as { -readonly [K in keyof W]: CrawlerProcess };
  } catch (error) {
    await Promise.all(started.map((w) => w.stop()));
    const output = started.map((w) => w.output().slice(-2000)).join('\n');
    throw new Error(`${(error as Error).message}\n${output}`);
  } finally {
    redis.disconnect();
  }
}
