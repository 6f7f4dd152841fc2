/**
 * The kafkajs-backed {@link MessageSink} (lib/ports.ts): a batch of messages to one or more topics in one
 * producer call.
 */
import type { Producer } from 'kafkajs';
import type { MessageSink } from '../ports.ts';
import { compressionType, type KafkaCompression } from './codecs.ts';
import type { TopicAwareSink, TopicCreator, TopicLookup } from './per-app.ts';

/**
 * A sink over a connected kafkajs producer; `compression` applies to every batch it sends (codecs.ts). With `topics`
 * it can also say whether a topic exists (lib/kafka/per-app.ts asks before its first copy to a per-app topic), and
 * with `createTopic` create a missing one (lib/kafka/app-topics.ts).
 */
export function producerSink(
  producer: Producer,
  options: { compression?: KafkaCompression; topics?: TopicLookup; createTopic?: TopicCreator } = {},
): MessageSink & TopicAwareSink {
  const compression = compressionType(options.compression ?? 'none');
  return {
    async send(batch) {
      const topicMessages = batch.filter((t) => t.messages.length > 0);
      if (topicMessages.length === 0) return;
      await producer.sendBatch({ acks: -1, topicMessages, compression });
    },
    topicExists: options.topics,
    createTopic: options.createTopic,
  };
}
