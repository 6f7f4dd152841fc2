import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import { logicalIdOf, resourceOf, type Synthesized, synthStack } from './synth.ts';

let s: Synthesized;
beforeAll(() => {
  s = synthStack();
});

const topics = clusterTopics('demo');

function mappingOf(functionLogicalId: string) {
  const mappings = s.template.findResources('AWS::Lambda::EventSourceMapping', {
    Properties: { FunctionName: { Ref: functionLogicalId } },
  });
  const list = Object.values(mappings);
  expect(list).toHaveLength(1);
  return list[0]?.Properties;
}

describe('MSK event sources', () => {
  it('creates exactly three mappings, on the MSK cluster: the monitors’ and the sink’s (test/cdk/sink.test.ts)', () => {
    s.template.resourceCountIs('AWS::Lambda::EventSourceMapping', 3);
    s.template.allResourcesProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^KafkaCluster'), 'Arn'] },
    });
  });

  it('feeds kafka-monitor from <prefix>.incoming in batches of 500 from the oldest record, as its own group', () => {
    const m = mappingOf(logicalIdOf(s, s.stack.functions.kafkaMonitor.function));
    expect(m.Topics).toEqual([topics.incoming]);
    expect(m.BatchSize).toBe(500);
    expect(m.MaximumBatchingWindowInSeconds).toBe(1);
    expect(m.StartingPosition).toBe('TRIM_HORIZON');
    expect(m.AmazonManagedKafkaEventSourceConfig).toEqual({ ConsumerGroupId: 'demo.kafka-monitor' });
  });

  it('feeds redis-monitor from <prefix>.actions without waiting for a fuller batch', () => {
    const m = mappingOf(logicalIdOf(s, s.stack.functions.redisMonitor.function));
    expect(m.Topics).toEqual([topics.actions]);
    expect(m.BatchSize).toBe(100);
    expect(m.MaximumBatchingWindowInSeconds).toBe(0);
    expect(m.StartingPosition).toBe('TRIM_HORIZON');
    expect(m.AmazonManagedKafkaEventSourceConfig).toEqual({ ConsumerGroupId: 'demo.redis-monitor' });
  });

  it('honours the handlers’ partial batch answers, which needs provisioned pollers', () => {
    for (const fn of [s.stack.functions.kafkaMonitor, s.stack.functions.redisMonitor]) {
      const m = mappingOf(logicalIdOf(s, fn.function));
      expect(m.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
      expect(m.ProvisionedPollerConfig).toEqual({
        MinimumPollers: 1,
        MaximumPollers: 4,
        PollerGroupName: 'CrawlCluster-monitors',
      });
      expect(m.BisectBatchOnFunctionError).toBe(true);
      expect(m.MaximumRetryAttempts).toBe(10);
      expect(m.MaximumRecordAgeInSeconds).toBe(3600);
    }
  });

  it('sends batches that still fail to the failed-batch bucket', () => {
    const bucket = logicalIdOf(s, s.stack.storage.failedBatches);
    for (const fn of [s.stack.functions.kafkaMonitor, s.stack.functions.redisMonitor]) {
      const m = mappingOf(logicalIdOf(s, fn.function));
      expect(m.DestinationConfig).toEqual({ OnFailure: { Destination: { 'Fn::GetAtt': [bucket, 'Arn'] } } });
    }
  });

  it('waits for the topics custom resource before creating the functions that consume them', () => {
    const topicsId = logicalIdOf(s, s.stack.kafka.topicsResource);
    const fn = s.template.toJSON().Resources[logicalIdOf(s, s.stack.functions.kafkaMonitor.function)];
    expect(fn.DependsOn).toContain(topicsId);
    expect(resourceOf(s, s.stack.kafka.topicsResource).Properties).toMatchObject({
      Topics: Object.values(topics),
      // The control topics small; the page firehose sized for the fleet's throughput (test/cdk/bill.test.ts).
      Partitions: 3,
      TopicPartitions: { [topics.crawledFirehose]: 7 },
    });
  });

  it('takes the ingest batch size and poller bounds from context', () => {
    const c = synthStack({ ingestBatchSize: 2000, minPollers: 2, maxPollers: 8 });
    const m = Object.values(
      c.template.findResources('AWS::Lambda::EventSourceMapping', {
        Properties: { FunctionName: { Ref: logicalIdOf(c, c.stack.functions.kafkaMonitor.function) } },
      }),
    )[0]?.Properties;
    expect(m.BatchSize).toBe(2000);
    expect(m.ProvisionedPollerConfig).toMatchObject({ MinimumPollers: 2, MaximumPollers: 8 });
  });
});
