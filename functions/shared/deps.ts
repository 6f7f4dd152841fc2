/**
 * The connections a monitor function needs, created once per container (module scope, on first use) and
 * reused across invocations (docs/style.md §4). The local runtime and the tests build their own and pass them
 * to the handler factories instead.
 */

import { hostname } from 'node:os';
import type { Variables } from '../../lib/config/index.ts';
import { config } from '../../lib/config/index.ts';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { appTopicCreator } from '../../lib/kafka/app-topics.ts';
import { createKafka, createProducer, kafkaSettings } from '../../lib/kafka/client.ts';
import { kafkaTopicLookup } from '../../lib/kafka/per-app.ts';
import { producerSink } from '../../lib/kafka/sink.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import { redisFleetWake } from '../../lib/monitor/fleet-wake.ts';
import { fleetProxyGroups } from '../../lib/monitor/proxy-groups.ts';
import { fleetSpiderTypes } from '../../lib/monitor/spider-types.ts';
import { redisStateWatch } from '../../lib/monitor/state-watch.ts';
import { redisReplyStore, redisStatsStore } from '../../lib/monitor/stores.ts';
import type { Log, MessageSink } from '../../lib/ports.ts';
import { createRedis, redisSettings } from '../../lib/redis/client.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { type SecretReader, withRedisPassword } from './secrets.ts';

export interface MonitorDeps {
  ctx: MonitorContext;
  /** Flushes and closes the connections (local runtime shutdown; Lambda never calls it). */
  close(): Promise<void>;
}

/**
 * A sink for a function that sends nothing (stats, reclaim): they need Redis only, so an MSK fault must not stop
 * them (autoscaling metrics and lease reclaim go on). Sending through it is a bug, and says so.
 */
function noKafkaSink(name: string): MessageSink {
  return {
    async send() {
      throw new Error(`${name} has no Kafka producer (it was created with kafka: false)`);
    },
  };
}

export interface MonitorDepsOptions {
  /**
   * Open a Kafka producer. Functions that only read and write Redis pass false, and then neither connect to Kafka
   * at cold start nor depend on it. @default true
   */
  kafka?: boolean;
  /** Reads the Redis AUTH token when REDIS_PASSWORD_SECRET_ARN is set (./secrets.ts). @default Secrets Manager */
  secrets?: SecretReader;
}

/**
 * Opens Redis (and a Kafka producer unless told not to) from the configuration and builds a monitor context. On AWS
 * the Redis AUTH token is read from Secrets Manager first (REDIS_PASSWORD_SECRET_ARN, once per container).
 */
export async function createMonitorDeps(
  name: string,
  log: Log,
  configured: Variables = config(),
  options: MonitorDepsOptions = {},
): Promise<MonitorDeps> {
  const vars = await withRedisPassword(configured, options.secrets);
  const redis = createRedis({ ...redisSettings(vars), connectionName: name });
  const kafka = options.kafka === false ? undefined : createKafka(kafkaSettings(vars));
  const producer = kafka && createProducer(kafka);
  await producer?.connect();
  // Per-app copies ask whether their topic exists (one metadata request, no retries) before the first send, and
  // create a new app's topics then (KAFKA_APPID_TOPICS_MAX bounds how many apps).
  const topics = kafka && kafkaTopicLookup(kafka);
  const createTopic = kafka && vars.KAFKA_APPID_TOPICS ? appTopicCreator(kafka, vars, log) : undefined;
  const sink: MessageSink = producer ? producerSink(producer, { topics, createTopic }) : noKafkaSink(name);
  const ctx: MonitorContext = {
    frontier: new Frontier(redis, frontierOptions(vars)),
    urlFrontier: new UrlFrontierStore(redis, vars.REDIS_KEY_PREFIX, { partitions: vars.FRONTIER_PARTITIONS }),
    stats: redisStatsStore(redis, vars.REDIS_KEY_PREFIX),
    replies: redisReplyStore(redis, vars.REDIS_KEY_PREFIX),
    sink,
    topicPrefix: vars.KAFKA_TOPIC_PREFIX,
    appidTopics: vars.KAFKA_APPID_TOPICS,
    spiders: BUILT_IN_SPIDERS,
    spiderTypes: fleetSpiderTypes(redis, vars.REDIS_KEY_PREFIX, log),
    proxyGroups: fleetProxyGroups(redis, vars.REDIS_KEY_PREFIX, log),
    fleetWake: redisFleetWake(redis, vars.REDIS_KEY_PREFIX),
    // Module scope: a warm container remembers the markers it has seen across invocations (docs/design.md §12).
    state: redisStateWatch(redis, {
      prefix: vars.REDIS_KEY_PREFIX,
      typeEnabled: vars.SCHEDULER_TYPE_ENABLED,
      partitions: vars.FRONTIER_PARTITIONS,
      log,
      who: name,
    }),
    maxMessageBytes: vars.KAFKA_MAX_MESSAGE_BYTES,
    replyTtlSec: 300,
    nodeId: `${name}@${hostname()}:${process.pid}`,
    log,
    now: Date.now,
  };
  return {
    ctx,
    async close() {
      await topics?.close();
      await createTopic?.close();
      await producer?.disconnect();
      redis.disconnect();
    },
  };
}

/**
 * A memoised async factory: the first call creates, later calls reuse; a failed creation is forgotten so
 * the next invocation tries again (Redis or Kafka may come back).
 */
export function once<T>(factory: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= factory().catch((error: unknown) => {
      pending = undefined;
      throw error;
    });
    return pending;
  };
}
