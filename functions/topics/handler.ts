/**
 * topics (CloudFormation custom resource, behind the CDK Provider framework): creates the contract's topics on MSK
 * with the same code as `crawl-cluster topics create`, since MSK does not auto-create topics. Idempotent: topics
 * that exist are left as they are (partition counts are never changed). Deleting the resource keeps the topics;
 * they go with the cluster.
 */
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { config } from '../../lib/config/index.ts';
import { createKafka, ensureTopics, kafkaSettings } from '../../lib/kafka/client.ts';
import { createLogger } from '../shared/observability.ts';

const logger = createLogger('topics', config().LOG_LEVEL);

/** The Provider framework's onEvent request (CloudFormation passes every property as a string). */
export interface TopicsEvent {
  RequestType: 'Create' | 'Update' | 'Delete';
  PhysicalResourceId?: string;
  ResourceProperties: {
    Topics: string[];
    /** Partitions of every topic not in TopicPartitions. */
    Partitions: string | number;
    /** Partitions of the topics that differ (the crawled firehose). */
    TopicPartitions?: Record<string, string | number>;
    /** `retention.ms` of every topic created, in hours; the broker default without it. */
    RetentionHours?: string | number;
  };
}

export interface TopicsResponse {
  PhysicalResourceId: string;
  Data?: { Created: string };
}

const PHYSICAL_ID = 'crawl-cluster-topics';

export async function createTopics(event: TopicsEvent): Promise<TopicsResponse> {
  if (event.RequestType === 'Delete') return { PhysicalResourceId: event.PhysicalResourceId ?? PHYSICAL_ID };
  const topics = event.ResourceProperties.Topics;
  const partitions = Number(event.ResourceProperties.Partitions);
  if (!Array.isArray(topics) || topics.length === 0) throw new Error('Topics must be a non-empty list');
  if (!Number.isInteger(partitions) || partitions < 1) throw new Error('Partitions must be a positive integer');
  const counts = topicPartitions(topics, partitions, event.ResourceProperties.TopicPartitions ?? {});
  const hours = event.ResourceProperties.RetentionHours;
  const retention: Record<string, string> =
    hours === undefined ? {} : { 'retention.ms': String(Math.round(Number(hours) * 3_600_000)) };
  if (hours !== undefined && !(Number(hours) > 0)) throw new Error('RetentionHours must be a positive number');
  const admin = createKafka(kafkaSettings(config())).admin();
  await admin.connect();
  try {
    const created: string[] = [];
    for (const [n, group] of counts) created.push(...(await ensureTopics(admin, group, n, retention)));
    logger.info('topics ensured', { created, existing: topics.filter((t) => !created.includes(t)) });
    return { PhysicalResourceId: PHYSICAL_ID, Data: { Created: created.join(',') } };
  } finally {
    await admin.disconnect();
  }
}

/** The topics grouped by their partition count: `partitions` unless `overrides` names the topic. */
export function topicPartitions(
  topics: string[],
  partitions: number,
  overrides: Record<string, string | number>,
): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const topic of topics) {
    const n = overrides[topic] === undefined ? partitions : Number(overrides[topic]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`TopicPartitions of ${topic} must be a positive integer`);
    out.set(n, [...(out.get(n) ?? []), topic]);
  }
  return out;
}

export const handler = middy(createTopics).use(injectLambdaContext(logger));
