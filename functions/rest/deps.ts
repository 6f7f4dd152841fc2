/**
 * The connections the REST API needs, created once per container (module scope, on first use) and by
 * `crawl-cluster local`. Unlike the monitors' deps, nothing here waits for Kafka: the producer and the
 * admin client connect on first use, so `GET /` still answers (YELLOW or RED) while Kafka is down, and
 * `POST /feed` answers 500 instead of the function failing to start.
 */

import { hostname } from 'node:os';
import type { Variables } from '../../lib/config/index.ts';
import { config } from '../../lib/config/index.ts';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { createKafka, createProducer, kafkaSettings } from '../../lib/kafka/client.ts';
import { producerSink } from '../../lib/kafka/sink.ts';
import type { Kafka, Producer } from '../../lib/kafka/types.ts';
import { redisFleetWake } from '../../lib/monitor/fleet-wake.ts';
import { fleetProxyGroups } from '../../lib/monitor/proxy-groups.ts';
import { fleetSpiderTypes } from '../../lib/monitor/spider-types.ts';
import { redisReplyStore, redisStatsStore } from '../../lib/monitor/stores.ts';
import type { Log, MessageSink } from '../../lib/ports.ts';
import { createRedis, type RedisClient, redisSettings } from '../../lib/redis/client.ts';
import { Frontier } from '../../lib/redis/frontier.ts';
import { frontierOptions } from '../../lib/redis/frontier-options.ts';
import { redisStateStore } from '../../lib/redis/state-marker.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import type { HealthProbes, RestContext, RestOptions } from '../../lib/rest/context.ts';
import { once } from '../shared/deps.ts';
import { type SecretReader, withRedisPassword } from '../shared/secrets.ts';

export interface RestDeps {
  ctx: RestContext;
  /** Disconnects everything (local runtime and tests; Lambda never calls it). */
  close(): Promise<void>;
}

/** Health probes over a Redis client and a Kafka client (its admin connects on first use). */
function healthProbes(redis: RedisClient, kafka: Kafka): { probes: HealthProbes; close(): Promise<void> } {
  const admin = kafka.admin();
  const connected = once(() => admin.connect());
  return {
    probes: {
      async redis() {
        await redis.ping();
      },
      async kafka() {
        await connected();
        await admin.describeCluster();
      },
    },
    close: () => admin.disconnect(),
  };
}

/** A sink over a producer that connects on first use, and again after a failed connect. */
function lazySink(producer: Producer): MessageSink {
  const connected = once(() => producer.connect());
  const sink = producerSink(producer);
  return {
    async send(batch) {
      await connected();
      await sink.send(batch);
    },
  };
}

/** Opens (lazily) Redis and Kafka from the configuration and builds the REST context. */
export function createRestDeps(
  name: string,
  log: Log,
  vars: Variables = config(),
  options: RestOptions = {},
): RestDeps {
  const redis = createRedis({ ...redisSettings(vars), connectionName: name });
  const kafka = createKafka(kafkaSettings(vars));
  const producer = createProducer(kafka);
  const health = healthProbes(redis, kafka);
  const ctx: RestContext = {
    sink: lazySink(producer),
    replies: redisReplyStore(redis, vars.REDIS_KEY_PREFIX),
    stats: redisStatsStore(redis, vars.REDIS_KEY_PREFIX),
    spiders: BUILT_IN_SPIDERS,
    spiderTypes: fleetSpiderTypes(redis, vars.REDIS_KEY_PREFIX, log),
    proxyGroups: fleetProxyGroups(redis, vars.REDIS_KEY_PREFIX, log),
    fleetWake: redisFleetWake(redis, vars.REDIS_KEY_PREFIX),
    topicPrefix: vars.KAFKA_TOPIC_PREFIX,
    nodeId: `${name}@${hostname()}:${process.pid}`,
    log,
    now: Date.now,
    health: health.probes,
    lostState: redisStateStore(redis, vars.REDIS_KEY_PREFIX),
    frontier: new Frontier(redis, frontierOptions(vars)),
    urlFrontier: new UrlFrontierStore(redis, vars.REDIS_KEY_PREFIX, { partitions: vars.FRONTIER_PARTITIONS }),
    startedAt: Date.now(),
    options,
  };
  return {
    ctx,
    async close() {
      await Promise.allSettled([producer.disconnect(), health.close()]);
      redis.disconnect();
    },
  };
}

/**
 * {@link createRestDeps} for the Lambda function: reads the Redis AUTH token from Secrets Manager first when
 * REDIS_PASSWORD_SECRET_ARN is set (once per container; ../shared/secrets.ts).
 */
export async function openRestDeps(
  name: string,
  log: Log,
  vars: Variables = config(),
  options: RestOptions = {},
  secrets?: SecretReader,
): Promise<RestDeps> {
  return createRestDeps(name, log, await withRedisPassword(vars, secrets), options);
}
