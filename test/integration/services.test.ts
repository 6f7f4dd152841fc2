import { Redis } from 'ioredis';
import { afterAll, describe, expect, test } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { clusterRedis, createTestTopics, testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

describe('local services', () => {
  const redis = clusterRedis();
  afterAll(() => redis.disconnect());

  test('a message produced to a new topic is consumed back with its key and headers', async () => {
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    const [topic] = await createTestTopics(admin, [uniqueName('it.roundtrip.')]);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    const consumer = kafka.consumer({ groupId: uniqueName('g') });
    try {
      await producer.connect();
      await producer.send({ topic: topic as string, messages: [{ key: 'k1', value: '{"n":1}', headers: { h: 'v' } }] });
      await consumer.connect();
      await consumer.subscribe({ topic: topic as string, fromBeginning: true });
      const seen: { key?: string; value?: string; header?: string }[] = [];
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push({
            key: message.key?.toString(),
            value: message.value?.toString(),
            header: message.headers?.h?.toString(),
          });
        },
      });
      await waitUntil('the message to come back', () => seen.length > 0);
      expect(seen).toEqual([{ key: 'k1', value: '{"n":1}', header: 'v' }]);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
      await admin.deleteTopics({ topics: [topic as string] });
      await admin.disconnect();
    }
  });

  test('producing to a topic that does not exist fails, because auto-create is off as on MSK', async () => {
    const kafka = testKafka();
    const producer = kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 1 } });
    await producer.connect();
    try {
      await expect(
        producer.send({ topic: uniqueName('it.missing.'), messages: [{ value: 'x' }], timeout: 2000 }),
      ).rejects.toThrow();
    } finally {
      await producer.disconnect();
    }
  });

  test('a Lua script on keys sharing a hash tag runs on the cluster-mode Redis', async () => {
    const tag = uniqueName();
    const result = await redis.eval(
      "redis.call('SET', KEYS[1], ARGV[1]); redis.call('INCRBY', KEYS[2], ARGV[2]); return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}",
      2,
      `{${tag}}:a`,
      `{${tag}}:b`,
      'hello',
      '41',
    );
    expect(result).toEqual(['hello', '41']);
    await redis.del(`{${tag}}:a`, `{${tag}}:b`);
  });

  test('a Lua script on keys of two slots is refused (CROSSSLOT), as ElastiCache cluster mode refuses it', async () => {
    const tag = uniqueName();
    const script = "return redis.call('MGET', KEYS[1], KEYS[2])";
    // ioredis's cluster client refuses it before sending; the server itself refuses it too.
    await expect(redis.eval(script, 2, `${tag}:a`, `${tag}:zz`)).rejects.toThrow(/CROSSSLOT|same slot/);
    const node = new Redis({ host: '127.0.0.1', port: config().CRAWL_REDIS_CLUSTER_PORT, lazyConnect: true });
    try {
      await expect(node.eval(script, 2, `${tag}:a`, `${tag}:zz`)).rejects.toThrow(/CROSSSLOT/);
    } finally {
      node.disconnect();
    }
  });
});
