/**
 * The Kafka side of `crawl-cluster feed`: the topic check and the producer, each step bounded so that an
 * unreachable or unhappy cluster becomes an error within seconds (cli/kafka-session.ts).
 */
import { CrawlClusterError } from '../lib/errors.ts';
import { createProducer } from '../lib/kafka/client.ts';
import { producerSink } from '../lib/kafka/sink.ts';
import type { Producer } from '../lib/kafka/types.ts';
import type { FeedMessage } from './feed-batcher.ts';
import { bounded, type CliKafka, connectAdmin, listTopics, quietly } from './kafka-session.ts';

/** The idempotent producer retries a missing topic forever, so the topic is checked first. */
export async function checkTopic(client: CliKafka, topic: string): Promise<void> {
  const admin = await connectAdmin(client);
  try {
    if (!(await listTopics(admin, client)).has(topic)) {
      throw new CrawlClusterError(
        `topic ${topic} does not exist; create the topics with: crawl-cluster topics create --prefix ${topic.slice(0, -'.incoming'.length)}`,
      );
    }
  } finally {
    await quietly(admin.disconnect());
  }
}

/** A connected producer of one topic; {@link FeedProducer.close} never throws and is bounded. */
export class FeedProducer {
  readonly #producer: Producer;
  readonly #topic: string;

  private constructor(producer: Producer, topic: string) {
    this.#producer = producer;
    this.#topic = topic;
  }

  /** Connects, failing with the broker address within the CLI's step deadline. */
  static async connect(client: CliKafka, topic: string): Promise<FeedProducer> {
    const producer = createProducer(client.kafka);
    try {
      await bounded(producer.connect(), `cannot reach Kafka at ${client.brokers} (KAFKA_BROKERS)`);
    } catch (error) {
      await quietly(producer.disconnect());
      throw error;
    }
    return new FeedProducer(producer, topic);
  }

  /** Sends one batch with acks=all; resolves once every message of it is stored. Unbounded: the caller bounds it. */
  send(messages: FeedMessage[]): Promise<void> {
    return producerSink(this.#producer).send([{ topic: this.#topic, messages }]);
  }

  async close(): Promise<void> {
    await quietly(this.#producer.disconnect());
  }
}

/** How long a failed feed may spend closing its connections before the process exits anyway. */
const EXIT_GRACE_MS = 2000;

/**
 * Makes sure the process ends soon after a failed send; call it when the connections' close has started. A send
 * abandoned at its deadline keeps kafkajs busy (its idempotent producer retries for ever) and a broker that stopped
 * answering keeps its sockets open, so the process would never exit on its own. The timer does not hold the process:
 * when nothing else does, it exits at once; otherwise after {@link EXIT_GRACE_MS}, with the exit code the command set
 * (the error is printed by then).
 */
export function exitSoonAfterFailure(): void {
  setTimeout(() => process.exit(process.exitCode ?? 1), EXIT_GRACE_MS).unref();
}
