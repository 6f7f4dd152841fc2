/**
 * `crawl-cluster local`: the whole cluster on one machine, running the SAME handlers Lambda runs
 * (docs/design.md §6): a consumer group per MSK-triggered function turns records into MSK events (batch size
 * and batching window as the event source mapping), commits only after success and redelivers on failure;
 * timers play the EventBridge schedules; CRAWLER_WORKERS crawler processes run functions/crawler/main.ts.
 * LocalStack plays S3 and CloudWatch (local-aws.ts): bodies over the message limit go to a bucket there, and each
 * stats run's metrics to its CloudWatch, unless CRAWL_LOCALSTACK=false.
 */
import type { MSKEvent, ScheduledEvent } from 'aws-lambda';
import { expireHandler } from '../../functions/expire/handler.ts';
import { kafkaMonitorHandler } from '../../functions/kafka-monitor/handler.ts';
import { reclaimHandler } from '../../functions/reclaim/handler.ts';
import { redisMonitorHandler } from '../../functions/redis-monitor/handler.ts';
import type { MskBatchResponse } from '../../functions/shared/msk.ts';
import { METRICS_NAMESPACE } from '../../functions/shared/observability.ts';
import { sinkHandler } from '../../functions/sink/handler.ts';
import { statsHandler } from '../../functions/stats/handler.ts';
import { processEnvironment, type Variables } from '../../lib/config/index.ts';
import { loadSpiders, pluginList } from '../../lib/crawl/spiders/registry.ts';
import { createKafka, ensureTopics, kafkaSettings } from '../../lib/kafka/client.ts';
import { clusterTopicList, clusterTopics } from '../../lib/kafka/topics.ts';
import type { Kafka } from '../../lib/kafka/types.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import type { FleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import type { ConsumerDownError, ConsumerHealth, RestartPolicy } from './consumer-supervisor.ts';
import { type CrawlerWorkers, startCrawlerWorkers } from './crawler-workers.ts';
import { lambdaContext } from './lambda-context.ts';
import { describeBodyStore, type LocalAwsRuntime, localAwsOf, startLocalAws } from './local-aws.ts';
import {
  LOCAL_SINK_MAX_BATCH_BYTES,
  LOCAL_SINK_MAX_BATCH_RECORDS,
  localSinkDeps,
  localSinkUri,
  sinkEnabled,
} from './local-sink.ts';
import type { RuntimeLog } from './log.ts';
import { type MskBatchStats, type MskSource, startMskSource } from './msk-source.ts';
import { type Schedule, startSchedule } from './schedule.ts';
import type { WorkerOutput } from './worker-log.ts';

export interface LocalClusterOptions {
  vars: Variables;
  /** The monitors' context (connections owned by the caller). */
  context: MonitorContext;
  log: RuntimeLog;
  /** Records per MSK event. @default 100 */
  batchSize?: number;
  /** Batching window (ms). @default 500 */
  maxBatchingWindowMs?: number;
  /** Interval of the expire / reclaim / stats timers (ms); AWS runs them every minute. @default 10000 */
  scheduleEveryMs?: number;
  /** Called after every MSK event a function handled. */
  onBatch?: (fn: string, stats: MskBatchStats) => void;
  /** Kafka client for the consumers. @default one built from `vars` */
  kafka?: Kafka;
  /** Crawler worker processes. @default vars.CRAWLER_WORKERS */
  crawlerWorkers?: number;
  /**
   * Browser worker processes (the same entry point with CRAWLER_SPIDERS=browser: they lease only `browser` requests and
   * render them in headless Chromium, docs/spiders-browser.md). @default 0
   */
  browserWorkers?: number;
  /** Environment the workers inherit (the configuration values are set on top). @default the process environment */
  workerEnv?: NodeJS.ProcessEnv;
  /**
   * Where the workers' log lines (Powertools JSON, as on ECS) go: this process's stdout and stderr as they are, or
   * through `log`, named after their worker (worker-log.ts). @default 'inherit'
   */
  workerOutput?: WorkerOutput;
  /** CloudWatch namespace of the stats metrics in LocalStack (tests use one of their own). @default METRICS_NAMESPACE */
  metricsNamespace?: string;
  /**
   * How the monitors' consumers are restarted when kafkajs gives up on them, and how long one may stay down.
   * @default DEFAULT_RESTART_POLICY of consumer-supervisor.ts
   */
  restartPolicy?: Partial<RestartPolicy>;
  /**
   * Called once when a monitor's consumer has been down longer than `restartPolicy.giveUpAfterMs`: the cluster no
   * longer reads that topic, so its owner should stop it and exit non-zero (its own supervisor restarts it).
   * @default none (the consumer stays down, and {@link LocalCluster.consumers} says `failed`)
   */
  onFatal?: (error: ConsumerDownError) => void;
}

export interface LocalCluster {
  /** Pids of the running crawler workers. */
  workers(): number[];
  /** The state of each monitor's consumer (health: `consuming` unless Kafka took it away). */
  consumers(): ConsumerHealth[];
  stop(): Promise<void>;
}

type Invoke<E, R> = (event: E, context: ReturnType<typeof lambdaContext>) => Promise<R>;

/**
 * Starts the crawler workers, the monitors and the schedules; resolves once every consumer has joined its group.
 * The workers start first: they need only Redis, and a join can take a session timeout (after a hard kill, until
 * the broker drops the dead members).
 * @throws InfrastructureError when LocalStack is to be used (CRAWL_LOCALSTACK) and does not answer
 */
export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const { vars } = options;
  // Before anything starts: the crawler workers load CRAWLER_PLUGINS the same way, so a broken plugin stops `local`
  // here with its name and the reason (PluginLoadError: exit code 2), rather than workers failing one by one.
  if ((options.crawlerWorkers ?? vars.CRAWLER_WORKERS) > 0) await loadSpiders(pluginList(vars.CRAWLER_PLUGINS));
  // First: without its LocalStack the cluster does not start at all, rather than lose bodies or metrics later.
  const awsSettings = localAwsOf(vars);
  const aws: LocalAwsRuntime | undefined = awsSettings
    ? await startLocalAws(awsSettings, options.metricsNamespace ?? METRICS_NAMESPACE)
    : undefined;
  try {
    return await startWithAws(options, aws);
  } catch (error) {
    aws?.close();
    throw error;
  }
}

async function startWithAws(options: LocalClusterOptions, aws: LocalAwsRuntime | undefined): Promise<LocalCluster> {
  const { vars, context, log } = options;
  const kafka = options.kafka ?? createKafka(kafkaSettings(vars));
  const topics = clusterTopics(vars.KAFKA_TOPIC_PREFIX);
  const admin = kafka.admin();
  try {
    await admin.connect();
  } catch (error) {
    // Its sockets and retry timers to a broker never reached go too, so the caller can exit.
    await admin.disconnect().catch(() => {});
    throw error;
  }
  try {
    const created = await ensureTopics(admin, clusterTopicList(vars.KAFKA_TOPIC_PREFIX), vars.KAFKA_TOPIC_PARTITIONS);
    if (created.length > 0) log('info', 'created topics', { topics: created });
  } finally {
    await admin.disconnect();
  }

  const provide = () => Promise.resolve(context);
  const msk = (name: string, handler: Invoke<MSKEvent, MskBatchResponse>) => (event: MSKEvent) =>
    handler(event, lambdaContext(name));
  const scheduled = (name: string, handler: Invoke<ScheduledEvent, unknown>) => (event: ScheduledEvent) =>
    handler(event, lambdaContext(name));

  const sources: MskSource[] = [];
  const schedules: Schedule[] = [];
  let workers: CrawlerWorkers | undefined;
  let browserWorkers: CrawlerWorkers | undefined;
  // The sink writes what it holds at stop, after the crawlers have published their last pages.
  const sink = sinkEnabled(vars) ? localSinkDeps(vars, (l, m, f) => log(l, `sink: ${m}`, f), aws?.aws) : undefined;
  const stopAll = async () => {
    await Promise.all([workers?.stop(), browserWorkers?.stop()]);
    await Promise.all([...sources.map((s) => s.stop()), ...schedules.map((s) => s.stop())]);
    sink?.close();
    aws?.close();
  };
  // The stats run's metrics: on AWS EMF on stdout, here PutMetricData to LocalStack (cloudwatch-stats.ts).
  const stats = statsHandler(provide);
  const statsToCloudWatch: Invoke<ScheduledEvent, unknown> = aws
    ? async (event, lambda) => {
        const metrics = (await stats(event, lambda)) as FleetMetrics;
        await aws.stats.publish(metrics);
        return metrics;
      }
    : (stats as Invoke<ScheduledEvent, unknown>);
  try {
    const count = options.crawlerWorkers ?? vars.CRAWLER_WORKERS;
    if (count > 0) {
      const env = options.workerEnv ?? processEnvironment();
      workers = startCrawlerWorkers(vars, count, log, env, 'crawler worker', options.workerOutput);
    }
    const browsers = options.browserWorkers ?? 0;
    if (browsers > 0) {
      const env = options.workerEnv ?? processEnvironment();
      browserWorkers = startCrawlerWorkers(
        { ...vars, CRAWLER_SPIDERS: 'browser' },
        browsers,
        log,
        env,
        'browser worker',
        options.workerOutput,
      );
    }
    // Both groups join at once: a join can wait for the broker to drop a dead member of the group.
    const started = await Promise.allSettled(
      (
        [
          ['kafka-monitor', topics.incoming, kafkaMonitorHandler(provide), undefined],
          ['redis-monitor', topics.actions, redisMonitorHandler(provide), undefined],
          ...(sink
            ? ([
                ['sink', topics.crawledFirehose, sinkHandler(() => Promise.resolve(sink.options)), sinkBatching(vars)],
              ] as const)
            : []),
        ] as const
      ).map(([name, topic, handler, batching]) =>
        startMskSource({
          kafka,
          topic,
          groupId: `${vars.KAFKA_TOPIC_PREFIX}.${name}`,
          handler: msk(name, handler as Invoke<MSKEvent, MskBatchResponse>),
          log: (level, message, fields) => log(level, `${name}: ${message}`, fields),
          batchSize: options.batchSize ?? 100,
          maxBatchingWindowMs: options.maxBatchingWindowMs ?? 500,
          ...batching,
          onBatch: (stats) => options.onBatch?.(name, stats),
          restartPolicy: options.restartPolicy,
          onGiveUp: (error) => options.onFatal?.(error),
        }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') sources.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const everyMs = options.scheduleEveryMs ?? 10_000;
    for (const [name, handler] of [
      ['expire', expireHandler(provide)],
      ['reclaim', reclaimHandler(provide)],
      ['stats', statsToCloudWatch],
    ] as const) {
      schedules.push(
        startSchedule({
          name,
          everyMs,
          handler: scheduled(name, handler as Invoke<ScheduledEvent, unknown>),
          log: (level, message, fields) => log(level, `${name}: ${message}`, fields),
        }),
      );
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  log('info', 'local cluster running', {
    incoming: topics.incoming,
    actions: topics.actions,
    outbound: topics.outboundFirehose,
    schedulesEveryMs: options.scheduleEveryMs ?? 10_000,
    bodies: describeBodyStore(vars),
    outputs: sink ? `${vars.SINK_FORMATS} to ${localSinkUri(vars)}` : 'off (SINK_FORMATS is empty)',
    metrics: aws ? `CloudWatch ${aws.stats.namespace} in LocalStack ${aws.aws.endpoint}` : 'off (no LocalStack)',
  });
  return {
    stop: stopAll,
    workers: () => [...(workers?.pids() ?? []), ...(browserWorkers?.pids() ?? [])],
    consumers: () => sources.map((s) => s.health()),
  };
}

/** The sink's event source settings: its flushes (local-sink.ts). */
function sinkBatching(vars: Variables) {
  return {
    batchSize: LOCAL_SINK_MAX_BATCH_RECORDS,
    maxBatchingWindowMs: vars.SINK_FLUSH_S * 1000,
    maxBatchBytes: Math.min(LOCAL_SINK_MAX_BATCH_BYTES, vars.SINK_WARC_MAX_BYTES),
    flushOnStop: true,
  };
}
