/**
 * Connections and isolation for the integration and e2e tiers: real Redis (cluster mode, as on
 * ElastiCache) and real Kafka, a random key prefix and topic names per test, and condition waits.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Kafka } from 'kafkajs';
import { type AwsClientSettings, awsClientSettings } from '../../functions/shared/aws.ts';
import { config } from '../../lib/config/index.ts';
import { createKafka } from '../../lib/kafka/client.ts';
import { createRedis, type RedisClient } from '../../lib/redis/client.ts';
import { localAwsOf } from '../../localstack/runtime/local-aws.ts';

const vars = config();

/** A client of the cluster-mode Redis, through ioredis's Cluster client (CROSSSLOT mistakes fail). */
export function clusterRedis(): RedisClient {
  return createRedis({ host: '127.0.0.1', port: vars.CRAWL_REDIS_CLUSTER_PORT, cluster: true });
}

/** A client of the standalone Redis. */
export function standaloneRedis(): RedisClient {
  return createRedis({ host: '127.0.0.1', port: vars.CRAWL_REDIS_PORT });
}

/** The LocalStack of `services up` as the local runtime reaches it: AWS_ENDPOINT_URL, else 127.0.0.1:CRAWL_LOCALSTACK_PORT. */
export function localstackEndpoint(): string {
  return localAwsOf({ ...vars, CRAWL_LOCALSTACK: true })?.endpoint as string;
}

/** AWS SDK client settings for that LocalStack (its dummy key), as the local runtime makes them. */
export function localstackClientSettings(): AwsClientSettings {
  return awsClientSettings({ AWS_REGION: vars.AWS_REGION, AWS_ENDPOINT_URL: localstackEndpoint() });
}

export function testKafka(): Kafka {
  return createKafka({ brokers: [`127.0.0.1:${vars.CRAWL_KAFKA_PORT}`], clientId: 'crawl-cluster-test' });
}

/** A fresh name for a test's keys or topics: `t<hex>`. */
export function uniqueName(prefix = 't'): string {
  return `${prefix}${randomBytes(5).toString('hex')}`;
}

/** Creates topics (1 partition unless told) and returns their names. */
export async function createTestTopics(admin: Admin, names: string[], partitions = 1): Promise<string[]> {
  await admin.createTopics({
    waitForLeaders: true,
    topics: names.map((topic) => ({ topic, numPartitions: partitions })),
  });
  return names;
}

/** Waits until `check` returns a truthy value, polling; throws with `what` after `timeoutMs`. */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = 15_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
