/**
 * Talking to a running cluster from the command line: one Kafka session per command that checks the
 * contract topics exist, listens on reply and page topics with a throwaway consumer group (joined before
 * anything is produced, so no reply can slip past), produces requests to `<p>.incoming`, and waits a
 * bounded time for the reply that carries a request's uuid. The commands are entry points and own these
 * connections (docs/style.md §4).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Variables } from '../lib/config/index.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import { createProducer } from '../lib/kafka/client.ts';
import { type ClusterTopics, clusterTopics } from '../lib/kafka/topics.ts';
import type { Admin, Consumer, Producer } from '../lib/kafka/types.ts';
import { isObject } from '../lib/schemas/bounds.ts';
import {
  bounded,
  type CliKafka,
  cliKafka,
  connectAdmin,
  Follower,
  listTopics,
  missingTopicMessage,
  quietly,
  topicPrefix,
  watchConsumer,
} from './kafka-session.ts';

/** A JSON object read from a topic. */
export type Message = Record<string, unknown>;

/** Where a message came from: its topic, partition, offset and timestamp (epoch ms). */
export interface MessageSource {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
}

/**
 * Joining a fresh group takes well under a second locally and a few seconds on MSK (its initial rebalance
 * delay); past this bound the brokers are unhealthy and a person should hear so.
 */
const JOIN_DEADLINE_MS = 30_000;

/** The hint for "nothing answered": the monitors are not running for this prefix. */
export function noClusterHint(prefix: string): string {
  return `is the cluster running for prefix "${prefix}"? Start it with: crawl-cluster local (its redis-monitor answers on ${clusterTopics(prefix).outboundFirehose})`;
}

/** A fresh uuid for an action or stats request (36 chars, within the contract's 40). */
export function requestUuid(): string {
  return randomUUID();
}

/** A consumer of some topics in a group of its own, already joined. */
export interface Listener {
  /** Stops consuming and deletes the throwaway group; never throws. */
  close(): Promise<void>;
}

/**
 * Matches replies to requests by uuid. {@link offer} every message from `<p>.outbound_firehose`;
 * {@link expect} resolves with the reply that echoes the uuid.
 */
export class ReplyWaiter {
  private readonly waiting = new Map<string, (reply: Message) => void>();

  /** Hands over a message; returns true when it answered an expected uuid. */
  offer(message: Message): boolean {
    const uuid = message.uuid;
    if (typeof uuid !== 'string') return false;
    const resolve = this.waiting.get(uuid);
    if (resolve === undefined) return false;
    this.waiting.delete(uuid);
    resolve(message);
    return true;
  }

  /**
   * Waits for the reply to `uuid`, at most `ms`; call it before sending the request.
   * @returns the reply, or `undefined` when none came in time
   */
  expect(uuid: string, ms: number): Promise<Message | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(uuid);
        resolve(undefined);
      }, ms);
      this.waiting.set(uuid, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
    });
  }
}

/** One command's connection to the cluster's topics. */
export class ClusterSession {
  readonly prefix: string;
  readonly topics: ClusterTopics;
  readonly client: CliKafka;
  private readonly admin: Admin;
  private producer: Producer | undefined;
  private readonly listeners: Listener[] = [];

  private constructor(client: CliKafka, admin: Admin, prefix: string) {
    this.client = client;
    this.admin = admin;
    this.prefix = prefix;
    this.topics = clusterTopics(prefix);
  }

  /**
   * Connects (failing within about 15 s when Kafka cannot be reached) and checks that the topics the
   * command needs exist, naming the ones that do when one is missing.
   */
  static async open(
    vars: Variables,
    prefixOption: string | undefined,
    needs: (keyof ClusterTopics)[],
  ): Promise<ClusterSession> {
    const prefix = topicPrefix(prefixOption, vars);
    const client = cliKafka(vars);
    const admin = await connectAdmin(client);
    const session = new ClusterSession(client, admin, prefix);
    try {
      const existing = await listTopics(admin, client);
      for (const need of needs) {
        const topic = session.topics[need];
        if (!existing.has(topic)) throw new CrawlClusterError(missingTopicMessage(topic, prefix, existing));
      }
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }

  /**
   * Starts consuming `topics` from their current end in a throwaway group and resolves once the group
   * is joined: only then may the request whose answers are awaited be produced. Every message produced
   * after the call is handed over once, also when the consumer rejoins its group ({@link Follower}).
   * Messages that are not JSON objects are not the contract's and are skipped.
   * @param onError called when the consumer fails for good after the join
   */
  async listen(
    topics: string[],
    onMessage: (topic: string, message: Message, source: MessageSource) => void,
    onError: (error: Error) => void = () => {},
  ): Promise<Listener> {
    const groupId = `crawl-cluster-cli.${this.prefix}.${randomBytes(4).toString('hex')}`;
    // A short fetch wait keeps replies prompt and closing quick.
    const consumer: Consumer = this.client.kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
    const follower = await Follower.start(this.admin, consumer, topics, {
      fromBeginning: false,
      brokers: this.client.brokers,
    });
    let joined = false;
    let joinFailed: (error: Error) => void = () => {};
    // A consumer that stopped for good (or did not come back in time) ends the command, never a silent wait.
    const unwatch = watchConsumer(consumer, topics.join(', '), {
      failed: (error) => (joined ? onError(error) : joinFailed(error)),
    });
    const listener: Listener = {
      close: async () => {
        unwatch();
        follower.stop();
        await quietly(consumer.disconnect());
        // autoCommit is off, so the group holds no offsets; deleting it keeps group listings clean.
        await quietly(this.admin.deleteGroups([groupId]));
      },
    };
    this.listeners.push(listener);
    const join = new Promise<void>((resolve, reject) => {
      joinFailed = reject;
      consumer.on(consumer.events.GROUP_JOIN, () => {
        joined = true;
        resolve();
      });
    });
    await bounded(consumer.connect(), `cannot reach Kafka at ${this.client.brokers} (KAFKA_BROKERS)`);
    await bounded(consumer.subscribe({ topics, fromBeginning: false }), `cannot subscribe to ${topics.join(', ')}`);
    const running = consumer.run({
      autoCommit: false,
      eachMessage: follower.eachMessage(async ({ topic, partition, message }) => {
        const parsed = parseObject(message.value?.toString('utf8'));
        if (parsed !== undefined)
          onMessage(topic, parsed, {
            topic,
            partition,
            offset: Number(message.offset),
            timestamp: Number(message.timestamp),
          });
      }),
    });
    running.catch((error: Error) => {
      if (joined) onError(error);
    });
    await bounded(
      Promise.race([join, running.then(() => join)]),
      `the consumer of ${topics.join(', ')} did not join its group`,
      JOIN_DEADLINE_MS,
    );
    return listener;
  }

  /** Produces one request to `<p>.incoming`, keyed by its appid. */
  async send(request: { appid: string } & Message): Promise<void> {
    if (this.producer === undefined) {
      const producer = createProducer(this.client.kafka);
      await bounded(producer.connect(), `cannot reach Kafka at ${this.client.brokers} (KAFKA_BROKERS)`);
      this.producer = producer;
    }
    await bounded(
      this.producer.send({
        topic: this.topics.incoming,
        messages: [{ key: request.appid, value: JSON.stringify(request) }],
      }),
      `sending to ${this.topics.incoming} failed`,
    );
  }

  /** Closes the listeners, the producer and the admin client; never throws. */
  async close(): Promise<void> {
    await Promise.all(this.listeners.splice(0).map((l) => l.close()));
    if (this.producer !== undefined) await quietly(this.producer.disconnect());
    await quietly(this.admin.disconnect());
  }
}

/**
 * Sends one request that carries a uuid and waits at most `timeoutMs` for its reply on
 * `<p>.outbound_firehose`.
 * @returns the reply, or `undefined` when none came in time
 */
export async function requestReply(
  session: ClusterSession,
  request: { appid: string; uuid: string } & Message,
  timeoutMs: number,
): Promise<Message | undefined> {
  const waiter = new ReplyWaiter();
  let failure: Error | undefined;
  await session.listen(
    [session.topics.outboundFirehose],
    (_topic, message) => waiter.offer(message),
    (error) => {
      failure = error;
    },
  );
  const reply = waiter.expect(request.uuid, timeoutMs);
  await session.send(request);
  const answer = await reply;
  if (answer === undefined && failure !== undefined) throw failure;
  return answer;
}

function parseObject(text: string | undefined): Message | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
