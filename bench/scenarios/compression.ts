/**
 * Compression benchmark (issue 15): kafkajs producer compression of page messages on the firehose — none,
 * gzip (built into kafkajs), lz4 (the `kafkajs-lz4` codec package, when it can be loaded) and zstd (a codec
 * over Node's built-in `zlib.zstdCompress`, bench/lib/codecs.ts) — on the local Kafka broker.
 *
 * - Messages: BENCH_COMPRESSION_MESSAGES (2000) real page messages, built as the crawler builds them
 *   (UndiciFetcher → extractLinks → lib/crawl/page.ts buildPage → lib/crawl/crawler/page-message.ts pageMessage)
 *   from distinct fixture pages of the BENCH_COMPRESSION_SHAPE (article) shape, before anything is timed.
 * - Two ways of producing each codec, on a fresh 1-partition topic each (acks=all, idempotent, as
 *   lib/kafka/client.ts createProducer): `batch` = sendBatch of BENCH_COMPRESSION_BATCH (16) messages per
 *   request, as the crawler's batching sink (lib/kafka/batching-sink.ts) gathers the pages of one worker's 16
 *   requests in flight (compression works across the messages of a record batch), and `page` = one message
 *   per send, 16 sends in flight (each page published alone, as before that sink).
 * - The fixture's article pages draw their text from a small pool of paragraphs, so pages compress together
 *   better than real pages of one site would: the `page` ratio (one page alone) is the floor, `batch` the
 *   fixture's best case.
 * - Per message: client CPU (this process, compression on the libuv pool included), broker CPU (/proc of the
 *   Kafka java process), bytes on disk = bytes on the wire (the partition's log segment: the broker keeps the
 *   producer's compressed record batches as sent, topic `compression.type=producer`), and the CPU of a
 *   consumer reading them back (decompression).
 */
import { randomBytes } from 'node:crypto';
import { createKafka, createProducer, kafkaSettings } from '../../lib/kafka/client.ts';
import type { Kafka, Producer } from '../../lib/kafka/types.ts';
import { type CodecName, compressionOf, registerCodecs } from '../lib/codecs.ts';
import { cpuSeconds } from '../lib/cpu.ts';
import { envInt } from '../lib/env.ts';
import { benchKafka, topicLogBytes } from '../lib/kafka.ts';
import { buildPageMessages } from '../lib/page-messages.ts';
import type { Numbers, ScenarioContext } from '../lib/scenario.ts';
import { round } from '../lib/timing.ts';

export const description = 'kafkajs compression of page messages (none, gzip, lz4, zstd): CPU and bytes per message';

const MODES = ['batch', 'page'] as const;
type Mode = (typeof MODES)[number];

export const headline: [string, string][] = [
  ['messages', 'messages'],
  ['value_bytes', 'value bytes/msg'],
  ...(['none', 'gzip', 'lz4', 'zstd'] as const).flatMap((c): [string, string][] => [
    [`${c}_batch_bytes_per_msg`, `${c} bytes/msg`],
    [`${c}_batch_client_cpu_ms_per_msg`, `${c} client ms/msg`],
    [`${c}_batch_broker_cpu_ms_per_msg`, `${c} broker ms/msg`],
    [`${c}_batch_consumer_cpu_ms_per_msg`, `${c} consumer ms/msg`],
    [`${c}_page_bytes_per_msg`, `${c} bytes/msg (page alone)`],
    [`${c}_page_client_cpu_ms_per_msg`, `${c} client ms/msg (page alone)`],
  ]),
  ['recommended', 'recommended'],
];

async function produce(producer: Producer, topic: string, values: string[], codec: CodecName, mode: Mode) {
  const compression = compressionOf(codec);
  const batch = envInt('BENCH_COMPRESSION_BATCH', 16);
  if (mode === 'batch') {
    for (let i = 0; i < values.length; i += batch) {
      const messages = values.slice(i, i + batch).map((value) => ({ key: 'bench', value }));
      await producer.sendBatch({ acks: -1, compression, topicMessages: [{ topic, messages }] });
    }
    return;
  }
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < values.length; i = next++) {
      await producer.send({ topic, acks: -1, compression, messages: [{ key: 'bench', value: values[i] as string }] });
    }
  };
  await Promise.all(Array.from({ length: 16 }, lane));
}

/** Reads `count` messages of `topic` from the beginning (values decompressed, not parsed). */
async function consume(kafka: Kafka, topic: string, count: number): Promise<void> {
  const consumer = kafka.consumer({
    groupId: `bench-compress-${randomBytes(4).toString('hex')}`,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let seen = 0;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${seen} of ${count} messages in 120 s`)), 120_000);
      void consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          seen += batch.messages.length;
          if (seen >= count) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const count = envInt('BENCH_COMPRESSION_MESSAGES', 2000);
  const { vars, pid: kafkaPid, dataDir } = await benchKafka(ctx);
  const codecs = await registerCodecs(ctx.progress);
  ctx.input('messages', count);
  ctx.input('codecs', codecs.map((c) => `${c.name}: ${c.source}`).join('; '));
  ctx.input('batch', envInt('BENCH_COMPRESSION_BATCH', 16));
  ctx.note('batch = sendBatch of 16 messages (the batching sink); page alone = one message per send, 16 in flight');
  ctx.note('bytes/msg = the partition log on disk / messages (record batches kept as produced: on the wire = on disk)');
  ctx.note('client = this process (compression on the libuv pool included); broker = /proc of the Kafka java process');

  ctx.progress(`building ${count} page messages from fixture pages`);
  const values = await buildPageMessages(ctx, count, process.env.BENCH_COMPRESSION_SHAPE === 'plain');
  const valueBytes = values.reduce((sum, v) => sum + Buffer.byteLength(v), 0) / values.length;
  const out: Numbers = { messages: count, value_bytes: Math.round(valueBytes) };

  const kafka = createKafka(kafkaSettings(vars));
  const admin = kafka.admin({ retry: { retries: 5 } });
  await admin.connect();
  const producer = createProducer(kafka);
  await producer.connect();
  const id = randomBytes(3).toString('hex');
  const topics: string[] = [];
  try {
    // Warm-up: JIT, connections and codecs, unmeasured.
    const warm = `bench-compress-${id}-warm`;
    topics.push(warm);
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: warm, numPartitions: 1 }] });
    for (const c of codecs) await produce(producer, warm, values.slice(0, 200), c.name, 'page');

    for (const mode of MODES) {
      for (const c of codecs) {
        const topic = `bench-compress-${id}-${c.name}-${mode}`;
        topics.push(topic);
        await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] });
        const client0 = cpuNow();
        const broker0 = cpuSeconds(kafkaPid);
        const t0 = performance.now();
        await produce(producer, topic, values, c.name, mode);
        const seconds = (performance.now() - t0) / 1000;
        const client = cpuNow() - client0;
        const broker = cpuSeconds(kafkaPid) - broker0;
        const bytes = topicLogBytes(dataDir, topic);
        const read0 = cpuNow();
        const readBroker0 = cpuSeconds(kafkaPid);
        await consume(kafka, topic, count);
        const readClient = cpuNow() - read0;
        const readBroker = cpuSeconds(kafkaPid) - readBroker0;
        const p = `${c.name}_${mode}`;
        const per = (s: number) => round((s * 1000) / count, 4);
        Object.assign(out, {
          [`${p}_msgs_per_s`]: round(count / seconds, 0),
          [`${p}_client_cpu_ms_per_msg`]: per(client),
          [`${p}_broker_cpu_ms_per_msg`]: per(broker),
          [`${p}_bytes_per_msg`]: Math.round(bytes / count),
          [`${p}_ratio`]: round(valueBytes / (bytes / count), 2),
          [`${p}_consumer_cpu_ms_per_msg`]: per(readClient),
          [`${p}_consumer_broker_cpu_ms_per_msg`]: per(readBroker),
        });
        ctx.progress(
          `${mode} ${c.name}: ${Math.round(count / seconds)} msg/s, client ${per(client)} ms/msg, broker ${per(broker)} ms/msg, ${Math.round(bytes / count)} B/msg (×${(valueBytes / (bytes / count)).toFixed(2)}), consumer ${per(readClient)} ms/msg`,
        );
      }
    }
    out.recommended = recommend(
      out,
      codecs.map((c) => c.name),
    );
  } finally {
    await producer.disconnect().catch(() => undefined);
    await admin.deleteTopics({ topics }).catch(() => undefined);
    await admin.disconnect();
  }
  return out;
}

/**
 * The default to recommend, by one rule on the `batch` numbers (the crawler publishes through
 * lib/kafka/batching-sink.ts, so a record batch holds the pages of many callers): the codec with the fewest
 * bytes per message among those whose producer + broker CPU per message is at most
 * BENCH_COMPRESSION_CPU_SLACK (1.25) × none's; none when no codec qualifies.
 */
function recommend(out: Numbers, names: CodecName[]): string {
  const slack = Number(process.env.BENCH_COMPRESSION_CPU_SLACK ?? 1.25);
  const cpu = (c: string) =>
    Number(out[`${c}_batch_client_cpu_ms_per_msg`]) + Number(out[`${c}_batch_broker_cpu_ms_per_msg`]);
  const limit = cpu('none') * slack;
  let best: string = 'none';
  for (const c of names) {
    if (cpu(c) <= limit && Number(out[`${c}_batch_bytes_per_msg`]) < Number(out[`${best}_batch_bytes_per_msg`]))
      best = c;
  }
  return best;
}
