/**
 * The local stand-in for Lambda's MSK event source mapping (docs/design.md §6): one kafkajs consumer group per
 * function turns records into MSK events (`MSKEvent` of `@types/aws-lambda`, built by the functions' own
 * encoder in functions/shared/msk.ts), hands them to the real handler, and commits offsets only for what the
 * handler accepted.
 *
 * Semantics, as Lambda's poller has them:
 * - **Batching.** Records of every partition of the topic are gathered into one event until it holds
 *   `batchSize` records or `maxBatchingWindowMs` has passed since its first record, whichever comes first.
 *   Records under one `<topic>-<partition>` key are in offset order.
 * - **Success** (the handler resolves with nothing or an empty `batchItemFailures`): every record of the
 *   event is committed (offset of the last record + 1, per partition).
 * - **Partial failure** (`batchItemFailures`): per partition, offsets below the lowest failed offset are
 *   committed and the partition is delivered again from that offset after a backoff; partitions without a
 *   failure are committed in full. An identifier naming a partition or offset that is not in the event
 *   fails the whole event, as a handler error would.
 * - **Handler error:** nothing of the event is committed; every partition of the event is delivered again
 *   from its first record after a backoff that doubles per consecutive failure of that partition.
 * - Delivery is at least once: a record is never skipped, but it can come again after a commit that
 *   failed, a consumer restart or a group rebalance. Handlers must be idempotent, as on Lambda.
 *
 * kafkajs facts this relies on (kafkajs 2.2.4, `src/consumer`): the fetch position of a partition is its
 * last *resolved* offset, not its committed one, so records are resolved as they enter the buffer and
 * commits are explicit (`autoCommit: false`); with `autoCommit: false`, `seek` only moves the fetch position
 * and commits nothing; a pending seek makes the batches already fetched for that partition stale
 * (`isStale()`), and a fetcher hands over every batch of one fetch before it applies seeks and fetches
 * again; a group (re)join restarts every partition from its committed offset.
 */
import type { MSKEvent } from 'aws-lambda';
import type { MskBatchResponse } from '../../functions/shared/msk.ts';
import type { Consumer, EachBatchPayload, Kafka } from '../../lib/kafka/types.ts';
import { settlesWithin } from '../../lib/timeout.ts';
import {
  type ConsumerDownError,
  type ConsumerHealth,
  ConsumerSupervisor,
  type RestartPolicy,
} from './consumer-supervisor.ts';
import { errorFields, type RuntimeLog } from './log.ts';
import { applyItemFailures, type Buffered, type PartitionOutcome, partitionsOf, toMskEvent } from './msk-event.ts';

/** What one handler call did, for the local runtime's stats line. */
export interface MskBatchStats {
  /** Records in the event handed to the handler. */
  records: number;
  /** Time the handler took, in ms. */
  durationMs: number;
  /** Records of the event that were not committed and will be delivered again (0: the whole event succeeded). */
  failures: number;
  /** True when the handler threw (or rejected) instead of answering. */
  threw: boolean;
}

/** An MSK-triggered handler as the local runtime calls it: the same function Lambda would call. */
type MskHandler = (event: MSKEvent) => Promise<MskBatchResponse | undefined>;

/** Options of {@link startMskSource}. */
export interface MskSourceOptions {
  /** A kafkajs client; the source creates (and on stop disconnects) one consumer of its own. */
  kafka: Kafka;
  /** The one topic this source consumes. */
  topic: string;
  /** The consumer group (Lambda: the event source mapping's `consumerGroupId`). */
  groupId: string;
  /** Called with one MSK event at a time; never called concurrently. */
  handler: MskHandler;
  /** Where handler errors, partial failures and failed commits are reported. */
  log: RuntimeLog;
  /** Most records in one event. @default 100 */
  batchSize?: number;
  /** Longest time the first record of an event waits for the event to fill up, in ms. @default 500 */
  maxBatchingWindowMs?: number;
  /**
   * An event is also handed over once its records' values reach this many bytes (the sink's size flush; Lambda's
   * own bound is its 6 MB payload). @default no bound
   */
  maxBatchBytes?: number;
  /**
   * On `stop()`, hand the records gathered so far to the handler (and commit what it accepts) instead of leaving them
   * to the next consumer of the group: the sink writes what it holds before `local` exits. @default false
   */
  flushOnStop?: boolean;
  /**
   * Where a group without committed offsets starts: the oldest record (`TRIM_HORIZON`) or only records
   * produced after the group first joined (`LATEST`). A group with committed offsets resumes from them.
   * @default 'TRIM_HORIZON'
   */
  startingPosition?: 'LATEST' | 'TRIM_HORIZON';
  /** Called after every handler call (its errors are ignored). @default none */
  onBatch?: (stats: MskBatchStats) => void;
  /** Backoff before the first redelivery of a failed partition, in ms; doubles per consecutive failure. @default 200 */
  retryBackoffMs?: number;
  /** Cap of the redelivery backoff, in ms. @default 10_000 */
  maxRetryBackoffMs?: number;
  /** How long `stop()` waits for a running handler call, then for the consumer to leave the group, in ms. @default 30_000 */
  stopTimeoutMs?: number;
  /**
   * Longest time one fetch waits at the broker for new records, in ms. It bounds how long `stop()` takes
   * while idle; it does not delay events (the broker answers as soon as records arrive).
   * @default 500
   */
  pollWaitMs?: number;
  /**
   * The group session timeout, in ms. After a broker restart (or a hard kill of the process) the group still holds
   * the old member until its session expires, and a new consumer's join waits for that: this bounds how long the
   * source stays down after its broker is back, and how long a join at start can take.
   * @default 10_000 (kafkajs: 30_000; brokers accept 6_000 and up)
   */
  sessionTimeoutMs?: number;
  /** The event's `bootstrapServers` field (no handler reads it). @default empty */
  bootstrapServers?: string;
  /**
   * How a consumer that kafkajs will not restart (a CRASH with `restart: false`, e.g. after a broker restart) is
   * replaced by a new one, and how long it may stay down (consumer-supervisor.ts).
   * @default DEFAULT_RESTART_POLICY (1 s doubling to 10 s; given up after 5 min down)
   */
  restartPolicy?: Partial<RestartPolicy>;
  /**
   * Called once when the consumer has been down longer than `restartPolicy.giveUpAfterMs`: the source no longer
   * consumes, and its owner should stop and exit non-zero so its own supervisor restarts it.
   * @default none (the source stays down, and {@link MskSource.health} says `failed`)
   */
  onGiveUp?: (error: ConsumerDownError) => void;
}

/** A running source. */
export interface MskSource {
  /**
   * Stops fetching, waits (up to `stopTimeoutMs`) for a running handler call to finish and commits what it
   * accepted, then leaves the group and disconnects. Records fetched but not yet handed over are not
   * committed: the next consumer of the group gets them. Calling it again returns the same promise.
   */
  stop(): Promise<void>;
  /** Whether the consumer is consuming, down (being restarted), failed (given up) or stopped. */
  health(): ConsumerHealth;
}

const HEARTBEAT_EVERY_MS = 1000;

/**
 * Starts consuming `topic` as group `groupId` and feeding MSK events to `handler` (semantics in the module
 * comment). Resolves once the consumer has joined the group (or crashed trying: it is then restarted as after
 * any crash). Rejects, leaving nothing open, when Kafka cannot be reached at all.
 */
export async function startMskSource(options: MskSourceOptions): Promise<MskSource> {
  const { kafka, topic, groupId, handler, log, onBatch, bootstrapServers } = options;
  const batchSize = positiveInteger('batchSize', options.batchSize ?? 100);
  const maxBatchingWindowMs = nonNegative('maxBatchingWindowMs', options.maxBatchingWindowMs ?? 500);
  const retryBackoffMs = nonNegative('retryBackoffMs', options.retryBackoffMs ?? 200);
  const maxRetryBackoffMs = nonNegative('maxRetryBackoffMs', options.maxRetryBackoffMs ?? 10_000);
  const stopTimeoutMs = nonNegative('stopTimeoutMs', options.stopTimeoutMs ?? 30_000);
  const pollWaitMs = positiveInteger('pollWaitMs', options.pollWaitMs ?? 500);
  const sessionTimeoutMs = positiveInteger('sessionTimeoutMs', options.sessionTimeoutMs ?? 10_000);
  const startingPosition = options.startingPosition ?? 'TRIM_HORIZON';
  const maxBatchBytes = options.maxBatchBytes ?? Number.POSITIVE_INFINITY;

  const buffer: Buffered[] = [];
  let bufferedBytes = 0;
  const failureStreak = new Map<number, number>();
  const resumeTimers = new Set<NodeJS.Timeout>();
  let windowTimer: NodeJS.Timeout | undefined;
  let heartbeat: (() => Promise<void>) | undefined;
  let stopping = false;
  let stopped: Promise<void> | undefined;
  const supervisor = new ConsumerSupervisor({
    name: groupId,
    log,
    policy: options.restartPolicy,
    replace: () => replaceConsumer(),
    onGiveUp: (error) => options.onGiveUp?.(error),
  });
  // Replaced by the supervisor after a crash; every call below goes to the consumer of the moment.
  let consumer: Consumer = newConsumer();
  let replacing: Promise<void> | undefined;

  // One handler call at a time, and no record enters the buffer while one runs: a promise-chain mutex.
  let tail: Promise<void> = Promise.resolve();
  const exclusive = (fn: () => Promise<void>): Promise<void> => {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  };

  const dropBuffer = (): void => {
    clearTimeout(windowTimer);
    windowTimer = undefined;
    buffer.length = 0;
    bufferedBytes = 0;
  };

  const armWindow = (): void => {
    windowTimer = setTimeout(() => {
      windowTimer = undefined;
      exclusive(async () => {
        if (!stopping && buffer.length > 0) await flush();
      }).catch((error: unknown) => log('error', 'msk source: flush failed', { topic, groupId, ...errorFields(error) }));
    }, maxBatchingWindowMs);
  };

  const eachBatch = async ({ batch, resolveOffset, heartbeat: beat, isRunning, isStale }: EachBatchPayload) => {
    heartbeat = beat;
    await exclusive(async () => {
      for (const message of batch.messages) {
        // Stale: this partition was rewound after a failure; these records come again from the new position.
        if (stopping || !isRunning() || isStale()) return;
        buffer.push({ partition: batch.partition, message });
        bufferedBytes += message.value?.length ?? 0;
        // Moves the fetch position only; the commit waits for the handler's answer.
        resolveOffset(message.offset);
        if (buffer.length >= batchSize || bufferedBytes >= maxBatchBytes) await flush();
        else if (buffer.length === 1) armWindow();
      }
    });
  };

  async function flush(): Promise<void> {
    clearTimeout(windowTimer);
    windowTimer = undefined;
    const records = buffer.splice(0);
    bufferedBytes = 0;
    if (records.length === 0) return;

    const event = toMskEvent(topic, records, bootstrapServers);
    // The fetch loop may be parked behind this call: keep the group session alive meanwhile.
    const beating = setInterval(() => {
      heartbeat?.().catch(() => undefined);
    }, HEARTBEAT_EVERY_MS);
    const started = Date.now();
    let response: unknown;
    let threw = false;
    let thrown: unknown;
    try {
      response = await handler(event);
    } catch (error) {
      threw = true;
      thrown = error;
    } finally {
      clearInterval(beating);
    }
    const durationMs = Date.now() - started;

    const outcomes = partitionsOf(records);
    if (threw) {
      for (const o of outcomes.values()) o.failedFrom = o.first;
    } else {
      const problem = applyItemFailures(topic, outcomes, response);
      if (problem) {
        log('error', `msk source: ${problem}; the whole event will be delivered again`, { topic, groupId });
        for (const o of outcomes.values()) o.failedFrom = o.first;
      }
    }

    await commit(outcomes);

    let failures = 0;
    let longestBackoff = 0;
    for (const [partition, o] of outcomes) {
      if (o.failedFrom === undefined) {
        failureStreak.delete(partition);
        continue;
      }
      failures += records.filter(
        (r) => r.partition === partition && Number(r.message.offset) >= (o.failedFrom as number),
      ).length;
      longestBackoff = Math.max(longestBackoff, redeliverLater(partition, o.failedFrom));
    }

    if (threw) {
      log('error', 'msk source: handler failed; the event will be delivered again', {
        topic,
        groupId,
        records: records.length,
        retryInMs: longestBackoff,
        ...errorFields(thrown),
      });
    } else if (failures > 0) {
      log('warn', 'msk source: handler reported batch item failures; delivering them again', {
        topic,
        groupId,
        records: records.length,
        failures,
        retryInMs: longestBackoff,
      });
    }
    try {
      onBatch?.({ records: records.length, durationMs, failures, threw });
    } catch {
      // A stats callback must not change what happens to records.
    }
  }

  async function commit(outcomes: Map<number, PartitionOutcome>): Promise<void> {
    const offsets: { topic: string; partition: number; offset: string }[] = [];
    for (const [partition, o] of outcomes) {
      const next = o.failedFrom ?? o.last + 1;
      if (next > o.first) offsets.push({ topic, partition, offset: String(next) });
    }
    if (offsets.length === 0) return;
    try {
      await consumer.commitOffsets(offsets);
    } catch (error) {
      // The records were handled; they come again only if this consumer restarts or the group rebalances.
      log('warn', 'msk source: commit failed; handled records may be delivered again later', {
        topic,
        groupId,
        offsets,
        ...errorFields(error),
      });
    }
  }

  /** Rewinds `partition` to `offset` and holds it back for the backoff; returns the backoff in ms. */
  function redeliverLater(partition: number, offset: number): number {
    const streak = failureStreak.get(partition) ?? 0;
    failureStreak.set(partition, streak + 1);
    const delay = Math.min(maxRetryBackoffMs, retryBackoffMs * 2 ** Math.min(streak, 30));
    try {
      consumer.seek({ topic, partition, offset: String(offset) });
      consumer.pause([{ topic, partitions: [partition] }]);
    } catch (error) {
      // Only while kafkajs restarts the consumer, which then resumes from the committed offsets anyway.
      log('warn', 'msk source: could not rewind a partition', { topic, groupId, partition, ...errorFields(error) });
      return delay;
    }
    const timer = setTimeout(() => {
      resumeTimers.delete(timer);
      try {
        consumer.resume([{ topic, partitions: [partition] }]);
      } catch {
        // The consumer restarted or stopped; a new consumer group starts unpaused.
      }
    }, delay);
    resumeTimers.add(timer);
    return delay;
  }

  async function stopNow(): Promise<void> {
    stopping = true;
    supervisor.stop();
    if (options.flushOnStop) {
      await settlesWithin(
        exclusive(async () => {
          if (buffer.length > 0) await flush();
        }).catch((error: unknown) =>
          log('error', 'msk source: flush at stop failed', { topic, groupId, ...errorFields(error) }),
        ),
        stopTimeoutMs,
      );
    }
    dropBuffer();
    for (const t of resumeTimers) clearTimeout(t);
    resumeTimers.clear();
    if (!(await settlesWithin(tail, stopTimeoutMs))) {
      log('warn', 'msk source: handler still running at stop; its records will be delivered again', {
        topic,
        groupId,
        stopTimeoutMs,
      });
    }
    // A restart under way may be building a consumer: let it finish (its steps are bounded) so that the
    // consumer disconnected here is the last one.
    await settlesWithin(replacing ?? Promise.resolve(), stopTimeoutMs);
    if (!(await settlesWithin(consumer.disconnect(), stopTimeoutMs))) {
      log('warn', 'msk source: consumer did not disconnect in time', { topic, groupId, stopTimeoutMs });
    }
  }

  /** A new kafkajs consumer of the group, its events wired to the buffer and the supervisor. */
  function newConsumer(): Consumer {
    const created = kafka.consumer({
      groupId,
      maxWaitTimeInMs: pollWaitMs,
      allowAutoTopicCreation: false,
      sessionTimeout: sessionTimeoutMs,
      // kafkajs's advice: a third of the session.
      heartbeatInterval: Math.max(100, Math.floor(sessionTimeoutMs / 3)),
      // Every restart goes through the supervisor. kafkajs's own restart joins the group again inside a
      // consumer that a concurrent disconnect() does not stop (kafkajs 2.2.4 runner.stop() returns at once while
      // the join runs): a consumer nobody holds kept fetching and `local` never exited after a broker restart.
      retry: { retries: 5, restartOnFailure: async () => false },
    });
    created.on(created.events.GROUP_JOIN, () => {
      if (created !== consumer) return;
      // A (re)join restarts every partition from its committed offset: buffered records would come twice.
      dropBuffer();
      supervisor.joined();
    });
    created.on(created.events.CRASH, ({ payload }) => {
      if (created !== consumer || stopping) return;
      // The crashed consumer's heartbeat belongs to a session that is over.
      heartbeat = undefined;
      supervisor.crashed(payload.error, payload.restart);
    });
    return created;
  }

  /** Connects, subscribes and runs `c`; on failure disconnects it (bounded) and rethrows. */
  async function startConsumer(c: Consumer): Promise<void> {
    try {
      await c.connect();
      await c.subscribe({ topic, fromBeginning: startingPosition === 'TRIM_HORIZON' });
      await c.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
    } catch (error) {
      await settlesWithin(c.disconnect(), stopTimeoutMs);
      throw error;
    }
  }

  /** The supervisor's restart: a crashed kafkajs consumer is left behind and a new one takes its place. */
  function replaceConsumer(): Promise<void> {
    const run = (async () => {
      if (stopping) return;
      const old = consumer;
      // kafkajs disconnected it when it crashed; this only makes sure, and never waits long.
      await settlesWithin(old.disconnect(), stopTimeoutMs);
      if (stopping) return;
      dropBuffer();
      for (const t of resumeTimers) clearTimeout(t);
      resumeTimers.clear();
      const next = newConsumer();
      consumer = next;
      await startConsumer(next);
    })();
    replacing = run.catch(() => undefined);
    return run;
  }

  try {
    await startConsumer(consumer);
  } catch (error) {
    stopping = true;
    supervisor.stop();
    throw error;
  }

  return {
    stop() {
      stopped ??= stopNow();
      return stopped;
    },
    health: () => supervisor.health(),
  };
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a number >= 0, got ${value}`);
  return value;
}
