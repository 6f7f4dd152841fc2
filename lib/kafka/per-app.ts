/**
 * Best-effort copies to per-app topics (`<p>.outbound_<appid>`, `<p>.crawled_<appid>`, with `KAFKA_APPID_TOPICS`),
 * shared by the monitors and the crawler. A per-app topic may not exist (auto-create is off, as on MSK): kafkajs
 * then spends 5-7 s in metadata retries on every send to it, which held up every reply and page behind it
 * (docs/design.md §10: a side path costs the main path nothing when it fails). So whether a topic exists is asked
 * with one metadata request without retries, bounded in time, before the first send to it; a topic found missing
 * is created then when the sink can (./app-topics.ts: bounded in apps), else remembered for a while and skipped in
 * microseconds.
 */
import type { Kafka } from 'kafkajs';
import { type Log, type MessageSink, type OutMessage, silentLog } from '../ports.ts';
import { rejectAfter } from '../timeout.ts';

/** Whether a topic exists: resolves false when the cluster says it does not; rejects when it cannot tell. */
export type TopicLookup = (topic: string) => Promise<boolean>;

/**
 * Creates a missing topic: resolves true once it exists (created now or by someone else), false when it may not be
 * created (the creator says why in its log); rejects when it cannot tell.
 */
export type TopicCreator = (topic: string) => Promise<boolean>;

/**
 * A sink that can also tell whether a topic exists, and create one (lib/kafka/sink.ts `producerSink` with `topics`
 * and `createTopic`).
 */
export interface TopicAwareSink extends MessageSink {
  topicExists?: TopicLookup;
  createTopic?: TopicCreator;
}

/** Options of {@link PerAppSender}; every one has a default. */
export interface PerAppSenderOptions {
  /** Where the copies go. Its `topicExists`, when it has one, is the default {@link lookup}. */
  sink: TopicAwareSink;
  /**
   * Asked once before the first send to a topic (and again once a remembered answer lapses). Without one, a topic
   * is sent to and remembered as missing when the send fails.
   * @default sink.topicExists
   */
  lookup?: TopicLookup;
  /** A lookup unanswered after this long counts as a failure. @default 1000 */
  lookupTimeoutMs?: number;
  /**
   * Asked when the lookup finds a topic missing; without one, the topic is skipped for {@link missingTtlMs}.
   * @default sink.createTopic
   */
  create?: TopicCreator;
  /**
   * A creation unanswered after this long counts as a failure (the copy waiting for it is dropped). Once per app
   * and process: the copies of a new app wait for its topics instead of being dropped. @default 15_000
   */
  createTimeoutMs?: number;
  /**
   * A send to a topic the lookup found is abandoned (not waited for; it may still complete) after this long.
   * @default 2000
   */
  sendTimeoutMs?: number;
  /** How long a topic found missing (or refused) is skipped before it is asked about again. @default 60_000 */
  missingTtlMs?: number;
  /** How long a topic is skipped after a lookup or send failed for another reason (e.g. a timeout). @default 5000 */
  failedTtlMs?: number;
  /** Topics remembered (missing and present together); the oldest answer is forgotten first. @default 10_000 */
  maxTopics?: number;
  /** @default silentLog */
  log?: Log;
  /** Epoch ms. @default Date.now */
  now?: () => number;
}

/** Broker errors meaning the topic cannot be written at all (not a passing fault). */
const ABSENT_TYPES = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'TOPIC_AUTHORIZATION_FAILED', 'INVALID_TOPIC_EXCEPTION']);

/** Whether `error` (or an error it wraps) says the topic does not exist or may not be written. */
export function isTopicAbsentError(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 5; depth++) {
    const { type, message } = e as { type?: unknown; message?: unknown };
    if (typeof type === 'string' && ABSENT_TYPES.has(type)) return true;
    // kafkajs's retry wrapper keeps only the message of the metadata error it gave up on.
    if (typeof message === 'string' && message.includes('does not host this topic-partition')) return true;
    e = (e as { originalError?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The log line of a missing per-app topic (its fields say for how long its copies are skipped). */
const MISSING_MESSAGE =
  'per-app topic not written (create it with `topics create --appid`, or raise KAFKA_APPID_TOPICS_MAX)';

/** What is known about one topic, until `until` (epoch ms). */
interface Known {
  state: 'present' | 'skip';
  until: number;
}

/**
 * Sends best-effort copies: never throws, never waits on kafkajs's metadata retries. Each topic's copy is sent on its
 * own produce request, so a missing topic fails nothing else.
 */
export class PerAppSender {
  readonly #sink: TopicAwareSink;
  readonly #lookup: TopicLookup | undefined;
  readonly #create: TopicCreator | undefined;
  readonly #o: Required<Omit<PerAppSenderOptions, 'sink' | 'lookup' | 'create'>>;
  /** Insertion-ordered, so the first entry is the oldest answer (bounded by maxTopics). */
  readonly #known = new Map<string, Known>();
  readonly #lookups = new Map<string, Promise<boolean | undefined>>();
  /** Copies skipped because their topic is remembered as missing (for tests and stats). */
  skipped = 0;
  /** Lookups made (for tests and stats). */
  lookups = 0;
  /** Creations asked for (for tests and stats). */
  creations = 0;

  constructor(options: PerAppSenderOptions) {
    this.#sink = options.sink;
    this.#lookup = options.lookup ?? options.sink.topicExists?.bind(options.sink);
    this.#create = options.create ?? options.sink.createTopic?.bind(options.sink);
    this.#o = {
      lookupTimeoutMs: options.lookupTimeoutMs ?? 1000,
      createTimeoutMs: options.createTimeoutMs ?? 15_000,
      sendTimeoutMs: options.sendTimeoutMs ?? 2000,
      missingTtlMs: options.missingTtlMs ?? 60_000,
      failedTtlMs: options.failedTtlMs ?? 5000,
      maxTopics: options.maxTopics ?? 10_000,
      log: options.log ?? silentLog,
      now: options.now ?? Date.now,
    };
  }

  /** Sends each topic's messages; topics known to be missing are skipped at once. Never throws. */
  async send(batch: { topic: string; messages: OutMessage[] }[]): Promise<void> {
    const sends: Promise<void>[] = [];
    for (const { topic, messages } of batch) {
      if (messages.length === 0) continue;
      const known = this.#fresh(topic);
      if (known?.state === 'skip') {
        this.skipped += messages.length;
        continue;
      }
      sends.push(this.#sendOne(topic, messages, known?.state === 'present'));
    }
    if (sends.length > 0) await Promise.all(sends);
  }

  /** Whether a copy to `topic` would be skipped now (its topic remembered as missing or failing). */
  skips(topic: string): boolean {
    return this.#fresh(topic)?.state === 'skip';
  }

  #fresh(topic: string): Known | undefined {
    const known = this.#known.get(topic);
    if (known === undefined) return undefined;
    if (known.until > this.#o.now()) return known;
    this.#known.delete(topic);
    return undefined;
  }

  #remember(topic: string, state: Known['state'], ttlMs: number): void {
    this.#known.delete(topic);
    this.#known.set(topic, { state, until: this.#o.now() + ttlMs });
    while (this.#known.size > this.#o.maxTopics) {
      const oldest = this.#known.keys().next().value as string;
      this.#known.delete(oldest);
    }
  }

  async #sendOne(topic: string, messages: OutMessage[], checked: boolean): Promise<void> {
    if (!checked && this.#lookup !== undefined) {
      const exists = await this.#exists(topic);
      if (exists !== true) {
        this.skipped += messages.length;
        return;
      }
    }
    const sent = this.#sink.send([{ topic, messages }]);
    try {
      await bounded(sent, this.#o.sendTimeoutMs, `sending to ${topic}`);
      if (!checked) this.#remember(topic, 'present', this.#o.missingTtlMs);
    } catch (error) {
      // A send given up on may still end by saying the topic is missing (kafkajs's retries): then it is.
      sent.catch((late: unknown) => {
        if (isTopicAbsentError(late)) this.#remember(topic, 'skip', this.#o.missingTtlMs);
      });
      const absent = isTopicAbsentError(error);
      this.#remember(topic, 'skip', absent ? this.#o.missingTtlMs : this.#o.failedTtlMs);
      this.#o.log.warn(absent ? MISSING_MESSAGE : 'per-app copy not written; its topic is skipped for a while', {
        topic,
        messages: messages.length,
        skippedForMs: absent ? this.#o.missingTtlMs : this.#o.failedTtlMs,
        error: (error as Error).message,
      });
    }
  }

  /** The lookup's answer for `topic`, remembered; one lookup at a time per topic. Undefined when it failed. */
  #exists(topic: string): Promise<boolean | undefined> {
    let pending = this.#lookups.get(topic);
    if (pending !== undefined) return pending;
    const lookup = this.#lookup as TopicLookup;
    this.lookups++;
    pending = bounded(lookup(topic), this.#o.lookupTimeoutMs, `looking up ${topic}`)
      .then((exists) => (exists || this.#create === undefined ? exists : this.#created(topic)))
      .then((exists) => {
        this.#remember(topic, exists ? 'present' : 'skip', this.#o.missingTtlMs);
        if (!exists) {
          this.#o.log.warn(MISSING_MESSAGE, { topic, skippedForMs: this.#o.missingTtlMs });
        }
        return exists;
      })
      .catch((error: unknown) => {
        this.#remember(topic, 'skip', this.#o.failedTtlMs);
        this.#o.log.warn('per-app topic lookup failed; its copies are skipped for a while', {
          topic,
          error: (error as Error).message,
        });
        return undefined;
      })
      .finally(() => this.#lookups.delete(topic));
    this.#lookups.set(topic, pending);
    return pending;
  }

  /** Whether `topic` exists after asking the creator (rejects when it cannot tell, or takes too long). */
  #created(topic: string): Promise<boolean> {
    this.creations++;
    return bounded((this.#create as TopicCreator)(topic), this.#o.createTimeoutMs, `creating ${topic}`);
  }
}

/** `promise`, or a rejection after `ms` (the work itself goes on; a send abandoned here that fails later is dropped). */
function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return rejectAfter(promise, ms, () => new Error(`${what}: no answer within ${ms} ms`));
}

/**
 * A {@link TopicLookup} over a kafkajs client: one metadata request for the topic, without retries and without
 * creating it (kafkajs admins never ask for auto-creation). The admin connects on first use and is kept;
 * `close()` disconnects it.
 */
export function kafkaTopicLookup(kafka: Kafka): TopicLookup & { close(): Promise<void> } {
  const admin = kafka.admin({ retry: { retries: 0 } });
  let connected: Promise<void> | undefined;
  const lookup = async (topic: string): Promise<boolean> => {
    connected ??= admin.connect().catch((error: unknown) => {
      connected = undefined;
      throw error;
    });
    await connected;
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      return topics.some((t) => t.name === topic && t.partitions.length > 0);
    } catch (error) {
      if (isTopicAbsentError(error)) return false;
      throw error;
    }
  };
  return Object.assign(lookup, {
    async close() {
      if (connected === undefined) return;
      connected = undefined;
      await admin.disconnect().catch(() => {});
    },
  });
}

/** One sender per sink: every part of a process that writes per-app copies through that sink shares what it knows. */
const senders = new WeakMap<MessageSink, PerAppSender>();

/** The {@link PerAppSender} of `sink`, made on first use with `options`. */
export function perAppSenderFor(sink: TopicAwareSink, options: Omit<PerAppSenderOptions, 'sink'> = {}): PerAppSender {
  let sender = senders.get(sink);
  if (sender === undefined) {
    sender = new PerAppSender({ ...options, sink });
    senders.set(sink, sender);
  }
  return sender;
}
