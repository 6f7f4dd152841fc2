import type { MSKEvent } from 'aws-lambda';
import type { Admin, Kafka, Producer } from 'kafkajs';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { MskBatchResponse } from '../../functions/shared/msk.ts';
import type { RuntimeLog } from '../../localstack/runtime/log.ts';
import { type MskSource, type MskSourceOptions, startMskSource } from '../../localstack/runtime/msk-source.ts';
import { createTestTopics, testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

const PARTITIONS = 3;

/** One delivered record, flattened out of an event. */
interface Seen {
  partition: number;
  offset: number;
  value: string;
}

function recordsOf(event: MSKEvent): Seen[] {
  return Object.values(event.records)
    .flat()
    .map((r) => ({
      partition: r.partition,
      offset: r.offset,
      value: Buffer.from(r.value ?? '', 'base64').toString('utf8'),
    }));
}

const id = (r: { partition: number; offset: number }) => `${r.partition}:${r.offset}`;

describe('local MSK event source', () => {
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  const topics: string[] = [];
  const sources: MskSource[] = [];
  const logLines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const log: RuntimeLog = (level, message, fields) => logLines.push({ level, message, fields });

  beforeAll(async () => {
    kafka = testKafka();
    admin = kafka.admin();
    producer = kafka.producer({ allowAutoTopicCreation: false });
    await admin.connect();
    await producer.connect();
  });

  afterEach(async () => {
    await Promise.all(sources.splice(0).map((s) => s.stop()));
    logLines.length = 0;
  });

  afterAll(async () => {
    await producer.disconnect();
    if (topics.length > 0) await admin.deleteTopics({ topics });
    await admin.disconnect();
  });

  async function freshTopic(): Promise<string> {
    const [topic] = await createTestTopics(admin, [uniqueName('it.msk-source.')], PARTITIONS);
    topics.push(topic as string);
    return topic as string;
  }

  /** Produces `perPartition` records to every partition; values are `p<partition>-<n>`. */
  async function produce(topic: string, perPartition: number, from = 0): Promise<void> {
    const messages = [];
    for (let partition = 0; partition < PARTITIONS; partition++) {
      for (let n = from; n < from + perPartition; n++) {
        messages.push({ partition, key: `k${n}`, value: `p${partition}-${n}`, headers: { trace: `t${n}` } });
      }
    }
    await producer.send({ topic, messages });
  }

  async function start(options: Partial<MskSourceOptions> & Pick<MskSourceOptions, 'topic' | 'handler'>) {
    const source = await startMskSource({
      kafka,
      groupId: uniqueName('g'),
      log,
      retryBackoffMs: 50,
      maxRetryBackoffMs: 200,
      ...options,
    });
    sources.push(source);
    return source;
  }

  async function committed(groupId: string, topic: string): Promise<Record<number, number>> {
    const [result] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const out: Record<number, number> = {};
    for (const p of result?.partitions ?? []) out[p.partition] = Number(p.offset);
    return out;
  }

  const allCommitted = (offsets: Record<number, number>, next: number) =>
    Array.from({ length: PARTITIONS }, (_, p) => offsets[p] === next).every(Boolean);

  test('every record reaches a succeeding handler once, in offset order per partition, as an MSK event; all offsets are committed', async () => {
    const topic = await freshTopic();
    const groupId = uniqueName('g');
    await produce(topic, 10);
    const events: MSKEvent[] = [];
    await start({
      topic,
      groupId,
      handler: async (event) => {
        events.push(event);
      },
    });

    await waitUntil('30 records to be handled', () => events.flatMap(recordsOf).length >= 30);
    const seen = events.flatMap(recordsOf);
    expect(seen).toHaveLength(30);
    expect(new Set(seen.map(id)).size).toBe(30);
    for (let p = 0; p < PARTITIONS; p++) {
      const offsets = seen.filter((r) => r.partition === p).map((r) => r.offset);
      expect(offsets).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(seen.filter((r) => r.partition === p).map((r) => r.value)).toEqual(
        Array.from({ length: 10 }, (_, n) => `p${p}-${n}`),
      );
    }

    const [first] = events;
    expect(first?.eventSource).toBe('aws:kafka');
    for (const [key, group] of Object.entries(first?.records ?? {})) {
      expect(key).toMatch(new RegExp(`^${topic.replaceAll('.', '\\.')}-[0-2]$`));
      for (const r of group) {
        expect(key).toBe(`${topic}-${r.partition}`);
        expect(r.topic).toBe(topic);
        expect(typeof r.timestamp).toBe('number');
        const n = r.offset;
        expect(r.value).toBe(Buffer.from(`p${r.partition}-${n}`).toString('base64'));
        expect(r.key).toBe(Buffer.from(`k${n}`).toString('base64'));
        expect(r.headers).toEqual([{ trace: [...Buffer.from(`t${n}`)] }]);
      }
    }

    await waitUntil('offsets 10 committed on every partition', async () =>
      allCommitted(await committed(groupId, topic), 10),
    );
  });

  test('records of several partitions produced together arrive in one event, sent when the batching window ends', async () => {
    const topic = await freshTopic();
    await produce(topic, 1);
    const events: MSKEvent[] = [];
    await start({
      topic,
      maxBatchingWindowMs: 1000,
      handler: async (event) => {
        events.push(event);
      },
    });

    await waitUntil('3 records to be handled', () => events.flatMap(recordsOf).length >= 3);
    expect(events).toHaveLength(1);
    expect(Object.keys(events[0]?.records ?? {}).sort()).toEqual([`${topic}-0`, `${topic}-1`, `${topic}-2`]);
  });

  test('a lone record is handed over once the batching window has passed, without waiting for a full batch', async () => {
    const topic = await freshTopic();
    const handledAt: number[] = [];
    await start({
      topic,
      batchSize: 100,
      maxBatchingWindowMs: 200,
      handler: async () => {
        handledAt.push(Date.now());
      },
    });
    const sentAt = Date.now();
    await producer.send({ topic, messages: [{ partition: 1, value: 'alone' }] });
    await waitUntil('the record to be handled', () => handledAt.length > 0, 5000);
    expect((handledAt[0] as number) - sentAt).toBeGreaterThanOrEqual(150);
  });

  test('no event holds more records than batchSize, and every record is still handled once', async () => {
    const topic = await freshTopic();
    await produce(topic, 20);
    const sizes: number[] = [];
    const seen: Seen[] = [];
    await start({
      topic,
      batchSize: 7,
      handler: async (event) => {
        const records = recordsOf(event);
        sizes.push(records.length);
        seen.push(...records);
      },
    });

    await waitUntil('60 records to be handled', () => seen.length >= 60);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(7);
    expect(sizes.filter((n) => n === 7).length).toBeGreaterThan(0);
    expect(new Set(seen.map(id)).size).toBe(60);
    expect(seen).toHaveLength(60);
  });

  test('a handler that throws gets the same records again, nothing is committed until it succeeds, and the error is logged', async () => {
    const topic = await freshTopic();
    const groupId = uniqueName('g');
    await produce(topic, 5);
    let calls = 0;
    let failed: Seen[] = [];
    const succeeded: Seen[] = [];
    const committedDuringRetry: Record<number, number>[] = [];
    await start({
      topic,
      groupId,
      handler: async (event) => {
        calls += 1;
        if (calls === 1) {
          failed = recordsOf(event);
          throw new Error('redis is down');
        }
        if (calls === 2) committedDuringRetry.push(await committed(groupId, topic));
        succeeded.push(...recordsOf(event));
      },
    });

    await waitUntil('15 records to be handled successfully', () => succeeded.length >= 15);
    expect(failed.length).toBeGreaterThan(0);
    expect(succeeded).toHaveLength(15);
    expect(new Set(succeeded.map(id)).size).toBe(15);
    const retried = new Set(succeeded.map(id));
    for (const r of failed) expect(retried.has(id(r))).toBe(true);
    // While the second call ran, the failed first call had committed nothing.
    expect(committedDuringRetry).toEqual([{ 0: -1, 1: -1, 2: -1 }]);
    expect(
      logLines.some((l) => l.level === 'error' && l.fields?.error === 'redis is down' && l.fields?.topic === topic),
    ).toBe(true);
    await waitUntil('offsets 5 committed on every partition', async () =>
      allCommitted(await committed(groupId, topic), 5),
    );
  });

  test('a batch item failure redelivers that record and the later ones of its partition, and no record of the other partitions', async () => {
    const topic = await freshTopic();
    const groupId = uniqueName('g');
    await produce(topic, 10);
    const deliveries = new Map<string, number>();
    const order: Seen[] = [];
    let failingEvent: Seen[] | undefined;
    await start({
      topic,
      groupId,
      handler: async (event): Promise<MskBatchResponse> => {
        const records = recordsOf(event);
        for (const r of records) deliveries.set(id(r), (deliveries.get(id(r)) ?? 0) + 1);
        order.push(...records);
        if (!failingEvent && records.some((r) => r.partition === 1 && r.offset === 4)) {
          failingEvent = records;
          return { batchItemFailures: [{ itemIdentifier: { partition: `${topic}-1`, offset: 4 } }] };
        }
        return { batchItemFailures: [] };
      },
    });

    await waitUntil('every record to be handled', () => deliveries.size >= 30 && (deliveries.get('1:4') ?? 0) >= 2);
    await waitUntil('offsets 10 committed on every partition', async () =>
      allCommitted(await committed(groupId, topic), 10),
    );

    const redelivered = new Set(
      (failingEvent ?? []).filter((r) => r.partition === 1 && r.offset >= 4).map((r) => id(r)),
    );
    expect(redelivered.has('1:4')).toBe(true);
    for (let p = 0; p < PARTITIONS; p++) {
      for (let offset = 0; offset < 10; offset++) {
        const key = `${p}:${offset}`;
        expect([key, deliveries.get(key)]).toEqual([key, redelivered.has(key) ? 2 : 1]);
      }
    }
    // Partition 1 restarts exactly at the failed offset.
    const p1 = order.filter((r) => r.partition === 1).map((r) => r.offset);
    const restart = p1.findIndex((o, i) => i > 0 && o <= (p1[i - 1] as number));
    expect(p1[restart]).toBe(4);
  });

  test('stop() waits for a running handler call and commits what it accepted', async () => {
    const topic = await freshTopic();
    const groupId = uniqueName('g');
    await produce(topic, 2);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = false;
    const source = await start({
      topic,
      groupId,
      maxBatchingWindowMs: 300,
      handler: async () => {
        entered = true;
        await gate;
      },
    });
    await waitUntil('the handler to be called', () => entered);

    let stopDone = false;
    const stopping = source.stop().then(() => {
      stopDone = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stopDone).toBe(false);
    release();
    await stopping;
    expect(allCommitted(await committed(groupId, topic), 2)).toBe(true);
  });

  test('stop() while idle returns promptly, and a new source of the same group gets only records it has not handled', async () => {
    const topic = await freshTopic();
    const groupId = uniqueName('g');
    await produce(topic, 4);
    const firstRun: Seen[] = [];
    const source = await start({
      topic,
      groupId,
      handler: async (event) => {
        firstRun.push(...recordsOf(event));
      },
    });
    await waitUntil('12 records to be handled', () => firstRun.length >= 12);
    await waitUntil('offsets 4 committed', async () => allCommitted(await committed(groupId, topic), 4));

    const stopStarted = Date.now();
    await source.stop();
    expect(Date.now() - stopStarted).toBeLessThan(3000);

    await produce(topic, 2, 4);
    const secondRun: Seen[] = [];
    await start({
      topic,
      groupId,
      handler: async (event) => {
        secondRun.push(...recordsOf(event));
      },
    });
    // Offset order per partition: a redelivered old record would arrive before the new ones.
    await waitUntil('the 6 new records to be handled', () => secondRun.length >= 6);
    expect(secondRun.map(id).sort()).toEqual(['0:4', '0:5', '1:4', '1:5', '2:4', '2:5']);
    expect(firstRun).toHaveLength(12);
  });
});
