/**
 * The topics custom resource's handler (functions/topics/handler.ts) against a real broker: the page firehose gets its
 * own partition count (TopicPartitions), the control topics the common one, every topic the retention asked for, and a
 * second run creates nothing and changes nothing.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTopics } from '../../functions/topics/handler.ts';
import { testKafka, uniqueName } from '../helpers/services.ts';

const admin = testKafka().admin();
beforeAll(() => admin.connect());
afterAll(() => admin.disconnect());

test('control topics get Partitions, the firehose its TopicPartitions, all the retention; a rerun changes nothing', async () => {
  const prefix = uniqueName('topics');
  const firehose = `${prefix}.crawled_firehose`;
  const control = [`${prefix}.incoming`, `${prefix}.outbound_firehose`, `${prefix}.actions`];
  const event = {
    RequestType: 'Create' as const,
    ResourceProperties: {
      Topics: [control[0] as string, firehose, ...control.slice(1)],
      Partitions: '3',
      TopicPartitions: { [firehose]: '7' },
      RetentionHours: '2',
    },
  };

  const first = await createTopics(event);
  expect(first.Data?.Created.split(',').sort()).toEqual([firehose, ...control].sort());
  const { topics } = await admin.fetchTopicMetadata({ topics: [firehose, ...control] });
  const partitions = Object.fromEntries(topics.map((t) => [t.name, t.partitions.length]));
  expect(partitions).toEqual(Object.fromEntries([[firehose, 7], ...control.map((t) => [t, 3])]));
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [firehose, ...control].map((name) => ({ type: 2, name, configNames: ['retention.ms'] })),
  });
  for (const r of configs.resources) expect(r.configEntries[0]?.configValue, r.resourceName).toBe('7200000');

  const again = await createTopics({ ...event, RequestType: 'Update', PhysicalResourceId: first.PhysicalResourceId });
  expect(again).toEqual({ PhysicalResourceId: first.PhysicalResourceId, Data: { Created: '' } });
  const after = await admin.fetchTopicMetadata({ topics: [firehose] });
  expect(after.topics[0]?.partitions).toHaveLength(7);
});
