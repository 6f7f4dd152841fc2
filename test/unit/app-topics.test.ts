import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { appidOfTopic, appsWithTopics, kafkaAppTopicCreator } from '../../lib/kafka/app-topics.ts';
import { PerAppSender } from '../../lib/kafka/per-app.ts';
import type { MessageSink, OutMessage } from '../../lib/ports.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';

/** A sink that refuses sends to topics it does not have, as Kafka does with auto-create off. */
class TopicsSink implements MessageSink {
  readonly topics = new Set<string>();
  readonly sent: string[] = [];
  async send(batch: { topic: string; messages: OutMessage[] }[]): Promise<void> {
    for (const { topic } of batch) {
      if (!this.topics.has(topic)) throw Object.assign(new Error('missing'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
    }
    for (const { topic, messages } of batch) for (const _ of messages) this.sent.push(topic);
  }
}

/** The part of a kafkajs admin the creator uses, over a set of topic names. */
function fakeKafka(topics: Set<string>, calls: string[] = []): Kafka {
  const admin = {
    connect: async () => {
      calls.push('connect');
    },
    disconnect: async () => {
      calls.push('disconnect');
    },
    listTopics: async () => {
      calls.push('list');
      return [...topics];
    },
    createTopics: async ({ topics: wanted }: { topics: { topic: string; numPartitions: number }[] }) => {
      calls.push(`create ${wanted.map((t) => `${t.topic}/${t.numPartitions}`).join(' ')}`);
      for (const t of wanted) topics.add(t.topic);
      return true;
    },
  };
  return { admin: () => admin } as unknown as Kafka;
}

const msg = (v: string): OutMessage => ({ key: 'k', value: v });

describe('per-app topic names', () => {
  it('takes the appid of a per-app topic of the prefix, and of nothing else', () => {
    expect(appidOfTopic('p', 'p.crawled_shop')).toBe('shop');
    expect(appidOfTopic('p', 'p.outbound_my.app-1')).toBe('my.app-1');
    expect(appidOfTopic('p', 'p.crawled_firehose')).toBeUndefined();
    expect(appidOfTopic('p', 'p.outbound_firehose')).toBeUndefined();
    expect(appidOfTopic('p', 'q.crawled_shop')).toBeUndefined();
    expect(appidOfTopic('p', 'p.incoming')).toBeUndefined();
    expect(appidOfTopic('p', 'p.crawled_')).toBeUndefined();
  });

  it('counts the apps that have at least one per-app topic', () => {
    const apps = appsWithTopics('p', [
      'p.crawled_a',
      'p.outbound_a',
      'p.outbound_b',
      'p.crawled_firehose',
      'x.crawled_c',
    ]);
    expect([...apps].sort()).toEqual(['a', 'b']);
  });
});

describe('kafkaAppTopicCreator', () => {
  it('creates both topics of a new app with the configured partitions, once for concurrent asks', async () => {
    const topics = new Set(['p.incoming', 'p.crawled_firehose', 'p.outbound_firehose']);
    const calls: string[] = [];
    const log = new RecordingLog();
    const create = kafkaAppTopicCreator(fakeKafka(topics, calls), { prefix: 'p', partitions: 4, maxApps: 2, log });
    const answers = await Promise.all([create('p.crawled_shop'), create('p.outbound_shop'), create('p.crawled_shop')]);
    expect(answers).toEqual([true, true, true]);
    expect(calls.filter((c) => c.startsWith('create'))).toEqual(['create p.crawled_shop/4 p.outbound_shop/4']);
    expect(topics.has('p.crawled_shop') && topics.has('p.outbound_shop')).toBe(true);
    expect(log.at('info')[0]).toMatchObject({ message: 'per-app topics created', fields: { appid: 'shop' } });
    // An app that has its topics already is created nothing, and answers true.
    expect(await create('p.outbound_shop')).toBe(true);
    expect(calls.filter((c) => c.startsWith('create'))).toHaveLength(1);
    await create.close();
    expect(calls.at(-1)).toBe('disconnect');
  });

  it('refuses a new app once maxApps apps have topics, with an error naming the setting; known apps still pass', async () => {
    const topics = new Set(['p.crawled_a', 'p.outbound_a', 'p.outbound_b']);
    const log = new RecordingLog();
    const create = kafkaAppTopicCreator(fakeKafka(topics), { prefix: 'p', partitions: 1, maxApps: 2, log });
    expect(await create('p.crawled_c')).toBe(false);
    expect(topics.has('p.crawled_c')).toBe(false);
    expect(log.at('error')[0]).toMatchObject({
      message: expect.stringContaining('KAFKA_APPID_TOPICS_MAX'),
      fields: { appid: 'c', apps: 2, max: 2 },
    });
    // b has one of its two topics: it is one of the two apps, so its other topic is created.
    expect(await create('p.crawled_b')).toBe(true);
    expect(topics.has('p.crawled_b')).toBe(true);
    // Not a per-app topic of this prefix: never created.
    expect(await create('q.crawled_x')).toBe(false);
  });

  it('creates none with maxApps 0', async () => {
    const topics = new Set<string>();
    const create = kafkaAppTopicCreator(fakeKafka(topics), { prefix: 'p', partitions: 1, maxApps: 0 });
    expect(await create('p.crawled_a')).toBe(false);
    expect(topics.size).toBe(0);
  });
});

describe('PerAppSender with a creator', () => {
  it('creates a missing topic on its first copy and delivers that copy and every later one', async () => {
    const sink = new TopicsSink();
    let creations = 0;
    const sender = new PerAppSender({
      sink,
      lookup: async (topic) => sink.topics.has(topic),
      create: async (topic) => {
        creations++;
        await new Promise((r) => setTimeout(r, 20));
        sink.topics.add(topic);
        return true;
      },
    });
    await Promise.all(
      Array.from({ length: 5 }, (_, i) => sender.send([{ topic: 'p.crawled_new', messages: [msg(`${i}`)] }])),
    );
    await sender.send([{ topic: 'p.crawled_new', messages: [msg('later')] }]);
    expect(sink.sent).toHaveLength(6);
    expect(creations).toBe(1);
    expect(sender.creations).toBe(1);
    expect(sender.skipped).toBe(0);
  });

  it('skips the copies of a topic the creator refuses, and asks again only after missingTtlMs', async () => {
    let now = 0;
    const log = new RecordingLog();
    let asked = 0;
    const sender = new PerAppSender({
      sink: new TopicsSink(),
      lookup: async () => false,
      create: async () => {
        asked++;
        return false;
      },
      missingTtlMs: 1000,
      now: () => now,
      log,
    });
    for (let i = 0; i < 3; i++) await sender.send([{ topic: 'p.crawled_over', messages: [msg('x')] }]);
    expect(asked).toBe(1);
    expect(sender.skipped).toBe(3);
    expect(log.at('warn')[0]?.message).toContain('KAFKA_APPID_TOPICS_MAX');
    now = 1001;
    await sender.send([{ topic: 'p.crawled_over', messages: [msg('x')] }]);
    expect(asked).toBe(2);
  });

  it('gives up on a creation slower than createTimeoutMs: that copy is skipped, the send returns', async () => {
    const sender = new PerAppSender({
      sink: new TopicsSink(),
      lookup: async () => false,
      create: () => new Promise(() => {}),
      createTimeoutMs: 30,
    });
    const started = performance.now();
    await sender.send([{ topic: 'p.crawled_slow', messages: [msg('x')] }]);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(sender.skipped).toBe(1);
    expect(sender.skips('p.crawled_slow')).toBe(true);
  });
});
