/**
 * KAFKA_COMPRESSION against a real broker: page-sized messages sent through producerSink with gzip and zstd
 * (lib/kafka/codecs.ts) take a fraction of the bytes on the broker's disk, come back byte for byte to a consumer of
 * this code base, and a partition holding compressed and plain batches is read in order.
 */
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { config } from '../../lib/config/index.ts';
import type { KafkaCompression } from '../../lib/kafka/codecs.ts';
import { producerSink } from '../../lib/kafka/sink.ts';
import { layoutFrom } from '../../localstack/services/index.ts';
import { kafkaDataDir } from '../../localstack/services/kafka-service.ts';
import { createTestTopics, testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

/** The first (only) segment file of a fresh partition. */
const LOG = '00000000000000000000.log';

const kafka = testKafka();
const admin = kafka.admin();
const producer = kafka.producer();

beforeAll(async () => {
  await Promise.all([admin.connect(), producer.connect()]);
});
afterAll(async () => {
  await Promise.all([admin.disconnect(), producer.disconnect()]);
});

/** A 64 KB page-like value: repetitive HTML around random bytes (so it compresses, but not to nothing). */
function pageValue(i: number): string {
  const filler = `<p class="body">Article ${i} paragraph text, the same words again and again.</p>\n`.repeat(700);
  return JSON.stringify({ url: `https://example.org/${i}`, body: filler + randomBytes(2048).toString('hex') });
}

async function consumeAll(topic: string, n: number): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: uniqueName('g') });
  const values: string[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value?.toString('utf8') ?? '');
      },
    });
    await waitUntil(`${n} messages on ${topic}`, () => values.length >= n, 30_000);
  } finally {
    await consumer.disconnect();
  }
  return values;
}

describe('KAFKA_COMPRESSION', () => {
  test.each(['gzip', 'zstd'] as KafkaCompression[])(
    '%s: page messages take a fifth of the bytes on the broker or less, and read back unchanged, in order with plain ones',
    async (compression) => {
      const [topic] = await createTestTopics(admin, [uniqueName(`cmp-${compression}-`)]);
      if (!topic) throw new Error('no topic');
      const [plainTopic] = await createTestTopics(admin, [uniqueName('cmp-none-')]);
      if (!plainTopic) throw new Error('no topic');
      const values = Array.from({ length: 8 }, (_, i) => pageValue(i));
      const messages = (from: number, to: number) =>
        values.slice(from, to).map((value, i) => ({ key: String(from + i), value }));
      await producerSink(producer, { compression }).send([{ topic, messages: messages(0, 4) }]);
      await producerSink(producer).send([{ topic: plainTopic, messages: messages(0, 4) }]);
      // On the broker's disk (the test broker is the one `services up` started): the same 4 messages take a
      // fifth of the bytes or less when compressed.
      const logBytes = (t: string) => statSync(join(kafkaDataDir(layoutFrom(config())), `${t}-0`, LOG)).size;
      expect(logBytes(plainTopic)).toBeGreaterThan(4 * 60_000);
      expect(logBytes(topic)).toBeLessThan(logBytes(plainTopic) / 5);
      // Uncompressed ones after them, in the same partition: read back in order, unchanged.
      await producerSink(producer).send([{ topic, messages: messages(4, 8) }]);
      expect(await consumeAll(topic, values.length)).toEqual(values);
    },
    60_000,
  );
});
