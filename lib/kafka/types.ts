/**
 * The kafkajs types the rest of the code base names (docs/design.md §4): every module outside lib/kafka takes them
 * from here, never from kafkajs, so swapping the client is a change in lib/kafka alone (test/unit/layers.test.ts).
 */
export type {
  Admin,
  Consumer,
  EachBatchPayload,
  EachMessageHandler,
  IHeaders,
  Kafka,
  KafkaMessage,
  Producer,
} from 'kafkajs';
