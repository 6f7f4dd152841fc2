/**
 * The narrow producing interface the monitors and the crawler use (DESIGN.md §4): a batch of messages to
 * one or more topics in one call. Backed by a kafkajs producer in production and by an in-memory fake in
 * unit tests.
 */
import type { Producer } from 'kafkajs';

export interface OutMessage {
  key?: string | Buffer | null;
  value: string | Buffer;
  headers?: Record<string, string>;
}

export interface MessageSink {
  /** Sends every message, acks=all; resolves only when all are stored. Throws when Kafka is unreachable. */
  send(batch: { topic: string; messages: OutMessage[] }[]): Promise<void>;
}

/** A sink over a connected kafkajs producer. */
export function producerSink(producer: Producer): MessageSink {
  return {
    async send(batch) {
      const topicMessages = batch.filter((t) => t.messages.length > 0);
      if (topicMessages.length === 0) return;
      await producer.sendBatch({ acks: -1, topicMessages });
    },
  };
}
