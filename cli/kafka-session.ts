/**
 * Kafka for one-shot CLI commands (`feed`, `dump`): a person is waiting, so an unreachable or unhappy
 * cluster must turn into a clear error within a bounded time, never kafkajs's long retries (an
 * idempotent producer retries a send forever). The commands are entry points: they open and close
 * their own connections (docs/style.md §4).
 */

import { VARIABLES, type Variables } from '../lib/config/index.ts';
import { ConfigError, CrawlClusterError, InfrastructureError } from '../lib/errors.ts';
import { createKafka, kafkaSettings } from '../lib/kafka/client.ts';
import { clusterTopicList } from '../lib/kafka/topics.ts';
import type { Admin, Consumer, EachMessageHandler, Kafka } from '../lib/kafka/types.ts';
import { rejectAfter } from '../lib/timeout.ts';

/** One connection attempt; shorter than a service's because nobody should wait on a dead address. */
const CLI_CONNECT_TIMEOUT_MS = 3000;

/**
 * The longest a command waits for one Kafka step (connect, metadata, send) before giving up. With
 * kafkajs's 6 connection attempts and backoff, a refused connection fails on its own in about 7 s;
 * this bound covers addresses that never answer.
 */
const KAFKA_STEP_DEADLINE_MS = 12_000;

/** A kafkajs client for a CLI command, and the broker list for error messages. */
export interface CliKafka {
  kafka: Kafka;
  /** `KAFKA_BROKERS` as configured, for messages. */
  brokers: string;
}

export function cliKafka(vars: Variables): CliKafka {
  const settings = kafkaSettings(vars);
  settings.connectionTimeoutMs = Math.min(
    settings.connectionTimeoutMs ?? CLI_CONNECT_TIMEOUT_MS,
    CLI_CONNECT_TIMEOUT_MS,
  );
  return { kafka: createKafka(settings), brokers: settings.brokers.join(',') };
}

/**
 * Waits for `work` at most `ms`; a failure or the deadline becomes an {@link InfrastructureError} that
 * starts with `what`. The abandoned work is left to fail on its own, without an unhandled rejection.
 */
export async function bounded<T>(work: Promise<T>, what: string, ms = KAFKA_STEP_DEADLINE_MS): Promise<T> {
  try {
    return await rejectAfter(work, ms, () => new Error(`no answer within ${(ms / 1000).toFixed(0)} s`));
  } catch (error) {
    throw new InfrastructureError(`${what}: ${(error as Error).message}`, { cause: error });
  }
}

/** Best-effort cleanup that must neither throw nor wait longer than the deadline. */
export async function quietly(work: Promise<unknown>, ms = KAFKA_STEP_DEADLINE_MS): Promise<void> {
  try {
    await bounded(work, 'cleanup', ms);
  } catch {
    // Cleanup of a connection that already failed: the command's own error is the one to report.
  }
}

/**
 * Keeps a live follower (`dump`, the listeners of `crawl` and the other commands that wait for replies)
 * from skipping messages when its consumer joins its group again. The CLI's throwaway groups commit no
 * offsets, so on every join kafkajs would start each partition at its end (or, with `fromBeginning`, at
 * its oldest message): after a rebalance (a session timeout, a coordinator moving) or after kafkajs
 * restarts a consumer that crashed, what arrived while the consumer was away would be lost to it.
 *
 * So the follower records where each partition ends when it starts (`admin.fetchTopicOffsets`), counts
 * in memory the offset after the last message it handled, and on every join (`GROUP_JOIN`, emitted before
 * the first fetch of the new assignment) seeks each assigned partition there, or to where it ended at the
 * start. Every message produced after the start is handed over, and a message handed over again (a batch
 * that was in flight during a rejoin) is dropped, so each is handled once.
 */
export class Follower {
  /** topic → partition → the offset of the next message to hand over. */
  private readonly next = new Map<string, Map<number, bigint>>();
  private readonly consumer: Consumer;
  private readonly fromBeginning: boolean;
  private readonly offJoin: () => void;

  private constructor(consumer: Consumer, fromBeginning: boolean) {
    this.consumer = consumer;
    this.fromBeginning = fromBeginning;
    this.offJoin = consumer.on(consumer.events.GROUP_JOIN, (event) => {
      for (const [topic, partitions] of Object.entries(event.payload.memberAssignment)) {
        for (const partition of partitions) this.seek(topic, partition);
      }
    });
  }

  /**
   * Records where `topics` end now; call it before the consumer runs, and hand its messages to
   * {@link eachMessage}. With `fromBeginning`, nothing is recorded: partitions start at their oldest message.
   */
  static async start(
    admin: Admin,
    consumer: Consumer,
    topics: string[],
    options: { fromBeginning: boolean; brokers: string },
  ): Promise<Follower> {
    const follower = new Follower(consumer, options.fromBeginning);
    try {
      if (!options.fromBeginning) {
        for (const topic of topics) {
          const ends = await bounded(
            admin.fetchTopicOffsets(topic),
            `cannot read the offsets of ${topic} on ${options.brokers}`,
          );
          for (const { partition, high } of ends) follower.partitions(topic).set(partition, BigInt(high));
        }
      }
    } catch (error) {
      follower.stop();
      throw error;
    }
    return follower;
  }

  /** Wraps the consumer's handler: drops messages handed over already, and records each one handled. */
  eachMessage(handler: EachMessageHandler): EachMessageHandler {
    return async (payload) => {
      const { topic, partition, message } = payload;
      const offset = BigInt(message.offset);
      const next = this.partitions(topic).get(partition);
      if (next !== undefined && offset < next) return;
      await handler(payload);
      // Only once handled: a handler that failed (kafkajs retries it, or restarts the consumer) gets it again.
      this.partitions(topic).set(partition, offset + 1n);
    };
  }

  /** Stops seeking on joins. */
  stop(): void {
    this.offJoin();
  }

  private partitions(topic: string): Map<number, bigint> {
    let partitions = this.next.get(topic);
    if (partitions === undefined) {
      partitions = new Map();
      this.next.set(topic, partitions);
    }
    return partitions;
  }

  private seek(topic: string, partition: number): void {
    const next = this.partitions(topic).get(partition);
    if (next !== undefined) this.consumer.seek({ topic, partition, offset: next.toString() });
    // A partition added after the start holds only messages produced after it; with fromBeginning, kafkajs
    // starts a partition without a committed offset at its oldest message anyway.
    else if (!this.fromBeginning) this.consumer.seek({ topic, partition, offset: '0' });
  }
}

/**
 * How long a follower's consumer may be away from its group after a crash that kafkajs restarts (a broker
 * restart takes 10 to 20 s locally) before the command gives up on it.
 */
const REJOIN_DEADLINE_MS = 60_000;

/** What {@link watchConsumer} reports. */
export interface ConsumerWatch {
  /** The consumer crashed and kafkajs is restarting it; `error` is the crash's message. */
  lost?(error: string): void;
  /** It joined its group again after {@link lost}. */
  back?(downForMs: number): void;
  /** It will not read again: kafkajs gave up on it, or it did not rejoin within the deadline. */
  failed(error: CrawlClusterError): void;
}

/**
 * Watches a follower's consumer so that a command never sits silently on a consumer that stopped: a crash
 * kafkajs does not restart (`restart: false`, e.g. "Failed to find group coordinator" after a broker restart)
 * fails at once; one it restarts is reported and must be back in its group within `rejoinWithinMs`.
 * @param what the topics read, for the messages
 * @returns a function that stops watching
 */
export function watchConsumer(
  consumer: Consumer,
  what: string,
  watch: ConsumerWatch,
  rejoinWithinMs = REJOIN_DEADLINE_MS,
): () => void {
  let lostAt: number | undefined;
  let deadline: NodeJS.Timeout | undefined;
  let lastError = '';
  const offJoin = consumer.on(consumer.events.GROUP_JOIN, () => {
    if (lostAt === undefined) return;
    clearTimeout(deadline);
    watch.back?.(Date.now() - lostAt);
    lostAt = undefined;
  });
  const offCrash = consumer.on(consumer.events.CRASH, (event) => {
    lastError = event.payload.error.message;
    if (!event.payload.restart) {
      clearTimeout(deadline);
      watch.failed(new CrawlClusterError(`reading ${what} failed: ${lastError}; kafkajs does not restart it`));
      return;
    }
    if (lostAt !== undefined) return;
    lostAt = Date.now();
    watch.lost?.(lastError);
    deadline = setTimeout(
      () =>
        watch.failed(
          new CrawlClusterError(
            `reading ${what} stopped: the consumer lost Kafka (${lastError}) and was not back within ${rejoinWithinMs / 1000} s`,
          ),
        ),
      rejoinWithinMs,
    );
  });
  return () => {
    clearTimeout(deadline);
    offJoin();
    offCrash();
  };
}

/** Connects an admin client, failing with the broker address when Kafka cannot be reached. */
export async function connectAdmin(client: CliKafka): Promise<Admin> {
  const admin = client.kafka.admin();
  try {
    await bounded(admin.connect(), `cannot reach Kafka at ${client.brokers} (KAFKA_BROKERS)`);
  } catch (error) {
    void admin.disconnect().catch(() => {});
    throw error;
  }
  return admin;
}

/** The names of the topics on the brokers. */
export async function listTopics(admin: Admin, client: CliKafka): Promise<Set<string>> {
  return new Set(await bounded(admin.listTopics(), `cannot list the topics on ${client.brokers}`));
}

/** `--prefix` if given, else `KAFKA_TOPIC_PREFIX`; checked against the variable's own pattern. */
export function topicPrefix(option: string | undefined, vars: Variables): string {
  if (option === undefined) return vars.KAFKA_TOPIC_PREFIX;
  if (!new RegExp(VARIABLES.KAFKA_TOPIC_PREFIX.pattern).test(option)) {
    throw new ConfigError(
      '--prefix',
      `must match ${VARIABLES.KAFKA_TOPIC_PREFIX.pattern} (got ${JSON.stringify(option)})`,
    );
  }
  return option;
}

/**
 * The contract topics of `prefix` that exist: the fixed ones and any per-app `crawled_` / `outbound_`
 * copies, for "did you mean" messages.
 */
function existingContractTopics(prefix: string, existing: ReadonlySet<string>): string[] {
  const fixed = clusterTopicList(prefix).filter((t) => existing.has(t));
  const perApp = [...existing]
    .filter((t) => t.startsWith(`${prefix}.crawled_`) || t.startsWith(`${prefix}.outbound_`))
    .filter((t) => !fixed.includes(t))
    .sort();
  return [...fixed, ...perApp];
}

/** Says which topics exist instead of a missing one, and how to create them when none do. */
export function missingTopicMessage(topic: string, prefix: string, existing: ReadonlySet<string>): string {
  const known = existingContractTopics(prefix, existing);
  if (known.length === 0) {
    return `topic ${topic} does not exist, and no contract topic exists for prefix "${prefix}"; create them with: crawl-cluster topics create --prefix ${prefix}`;
  }
  return `topic ${topic} does not exist; the contract topics for prefix "${prefix}" are: ${known.join(', ')}`;
}
