/**
 * The publish floor (issue 15): what a crawler that keeps the wire contract cannot do without, measured as one
 * loop. It is the raw loop (bench/lib/raw.ts) with the crawler's own fetcher, and each page then built into its
 * page message and produced to Kafka exactly as a crawler worker does it: `buildPage` (lib/crawl/page.ts),
 * `pageMessage` (page-message.ts) and the worker's batching sink (lib/crawl/crawler/crawler.ts `crawlerSink`, same linger,
 * batch limit and compression) over the kafkajs producer (lib/kafka/client.ts, with its encoder and CRC-32C).
 *
 * What the floor leaves out is what a worker adds on top of it: the Redis frontier (leases, acks, children and
 * their dedup, stats), politeness, robots.txt and the worker's own bookkeeping. `worker / floor` is therefore the
 * cost of those; `floor / raw` is the cost of the page message and its produce, which the raw loop does not pay.
 */
import { randomBytes } from 'node:crypto';
import type { Variables } from '../../lib/config/index.ts';
import { crawlerSink, DEFAULT_PRODUCE_LINGER_MS } from '../../lib/crawl/crawler/delivery.ts';
import { pageMessage } from '../../lib/crawl/crawler/page-message.ts';
import { buildPage } from '../../lib/crawl/page.ts';
import type { CrawlSettings } from '../../lib/frontier-model.ts';
import { createKafka, createProducer, ensureTopics, kafkaSettings } from '../../lib/kafka/client.ts';
import { producerSink } from '../../lib/kafka/sink.ts';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import { CpuMeter } from './cpu.ts';
import { benchKafka } from './kafka.ts';
import type { RawPublish, RawResult } from './raw.ts';
import type { ScenarioContext } from './scenario.ts';

export interface FloorRun<T> {
  result: T;
  /** CPU seconds from `startMeter` on: `bench` (this process: the loop and its publisher) and `kafka` (the broker). */
  cpu: Record<string, number>;
  /** Pages published, and messages stored on the topic (they should match). */
  published: number;
  stored: number;
}

/**
 * One publish-floor pass as the scenarios run it: a fresh publisher over the bench's Kafka, `crawl` given its
 * `publish` and a function that starts the CPU meter (this process and the broker), the publisher closed after.
 */
export async function floorRun<T extends RawResult>(
  ctx: Pick<ScenarioContext, 'progress'>,
  crawl: (publish: RawPublish, startMeter: () => void) => Promise<T>,
): Promise<FloorRun<T>> {
  const kafka = await benchKafka(ctx);
  const publisher = await startFloorPublisher(kafka.vars);
  try {
    const meter = new CpuMeter(() => ({ kafka: kafka.pid ? [kafka.pid] : [] }));
    const result = await crawl(publisher.publish, () => meter.start());
    const cpu = meter.stop();
    return { result, cpu, published: publisher.published(), stored: await publisher.stored() };
  } finally {
    await publisher.close();
  }
}

export interface FloorPublisher {
  /** Builds a page's message and produces it; resolves once Kafka stored it. */
  publish: RawPublish;
  /** The topic the pages go to (a fresh `<prefix>.crawled_firehose`, deleted by `close`). */
  topic: string;
  /** Pages published so far (their produce resolved), warm-up included. */
  published(): number;
  /** Messages stored on the topic (its end offsets summed): every published page must be there. */
  stored(): Promise<number>;
  close(): Promise<void>;
}

/**
 * A publisher over the Kafka that `vars` names (KAFKA_BROKERS), with the worker's settings from `vars`
 * (KAFKA_COMPRESSION, KAFKA_MAX_MESSAGE_BYTES, KAFKA_BASE_64_ENCODE). The pages are the link spider's of one crawl.
 */
export async function startFloorPublisher(vars: Variables): Promise<FloorPublisher> {
  const topic = clusterTopics(`benchfloor${randomBytes(4).toString('hex')}`).crawledFirehose;
  const kafka = createKafka(kafkaSettings(vars));
  const admin = kafka.admin();
  await admin.connect();
  const producer = createProducer(kafka);
  try {
    await ensureTopics(admin, [topic], vars.KAFKA_TOPIC_PARTITIONS);
    await producer.connect();
  } catch (error) {
    await admin.disconnect().catch(() => undefined);
    throw error;
  }
  const sink = crawlerSink(
    producerSink(producer, { compression: vars.KAFKA_COMPRESSION }),
    DEFAULT_PRODUCE_LINGER_MS,
    vars.KAFKA_MAX_MESSAGE_BYTES,
  );
  const crawl: CrawlSettings = {
    appid: 'bench',
    crawlid: 'floor',
    spiderid: 'link',
    priority: 1,
    maxdepth: 3,
    expires: 0,
  };
  const base64 = vars.KAFKA_BASE_64_ENCODE;
  let published = 0;
  return {
    topic,
    async publish({ url, depth, response, links }) {
      const page = buildPage({ url, depth, priority: 1, retries: 0, crawl }, response, links, {
        base64,
        success: true,
        retryTimes: 0,
      });
      // No body store: the bench site's pages all fit a message (a bigger one is cut, never stored).
      const message = await pageMessage(page, {
        maxBytes: vars.KAFKA_MAX_MESSAGE_BYTES,
        base64,
        bodyKey: () => 'floor',
        response,
      });
      await sink.send([{ topic, messages: [message] }]);
      published++;
    },
    published: () => published,
    async stored() {
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
    },
    async close() {
      await producer.disconnect().catch(() => undefined);
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
    },
  };
}
