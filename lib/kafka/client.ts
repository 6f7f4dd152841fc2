/**
 * The narrow Kafka seam (docs/design.md §4): everything else talks to these interfaces, so kafkajs (in
 * maintenance mode) can be swapped without touching callers. Connections are created by entry points
 * (docs/style.md §4) through {@link createKafka} and passed down.
 */
// First, before kafkajs loads: kafkajs then checksums record batches with the fast CRC-32C (see there).
import './crc32c.ts';
// kafkajs's Encoder grows its buffers without zero-filling them (see there).
import './encoder.ts';
// kafkajs's request queues run no 1 ms timer loop while nothing is pending (see there).
import './request-queue.ts';
// zstd for the producers that compress (KAFKA_COMPRESSION) and every consumer that reads their batches.
import './codecs.ts';
import { generateAuthToken } from 'aws-msk-iam-sasl-signer-js';
import { type Admin, Kafka, logLevel, type Producer, type SASLOptions } from 'kafkajs';
import { ConfigError } from '../errors.ts';

/** What a Kafka connection needs; a subset of the configuration. */
export interface KafkaSettings {
  brokers: string[];
  clientId: string;
  /** @default 'none' */
  saslMechanism?: 'none' | 'aws-msk-iam';
  /** @default false */
  ssl?: boolean;
  /** @default 5000 */
  connectionTimeoutMs?: number;
  /** AWS region for MSK IAM token signing. @default 'us-east-1' */
  region?: string;
}

/** Builds the settings from the validated configuration variables. */
export function kafkaSettings(vars: {
  KAFKA_BROKERS: string;
  KAFKA_CLIENT_ID: string;
  KAFKA_SASL_MECHANISM: 'none' | 'aws-msk-iam';
  KAFKA_SSL: boolean;
  KAFKA_CONNECT_TIMEOUT_MS: number;
  AWS_REGION?: string;
}): KafkaSettings {
  const brokers = vars.KAFKA_BROKERS.split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
  for (const b of brokers) {
    if (!/^[^\s:]+:\d{1,5}$/.test(b)) throw new ConfigError('KAFKA_BROKERS', `"${b}" is not host:port`);
  }
  return {
    brokers,
    clientId: vars.KAFKA_CLIENT_ID,
    saslMechanism: vars.KAFKA_SASL_MECHANISM,
    ssl: vars.KAFKA_SSL,
    connectionTimeoutMs: vars.KAFKA_CONNECT_TIMEOUT_MS,
    region: vars.AWS_REGION,
  };
}

/**
 * MSK IAM auth: SASL OAUTHBEARER with a token signed by the AWS MSK IAM signer from the default credential
 * chain (the Lambda or task role). kafkajs asks for a fresh token whenever it (re)authenticates.
 */
export function mskIamSasl(region: string): SASLOptions {
  return {
    mechanism: 'oauthbearer',
    oauthBearerProvider: async () => {
      const { token } = await generateAuthToken({ region });
      return { value: token };
    },
  };
}

let warningFilterInstalled = false;

/**
 * kafkajs 2.2.4 schedules timers with negative delays, which Node 24 reports as a TimeoutNegativeWarning
 * on every connection (tulios/kafkajs#1751; harmless: Node runs them at once). Print every other warning
 * as Node would, but not that one.
 */
function filterKafkajsTimerWarning(): void {
  if (warningFilterInstalled) return;
  warningFilterInstalled = true;
  const previous = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'TimeoutNegativeWarning') return;
    for (const listener of previous) listener(warning);
  });
}

/** Creates a kafkajs client. Quiet by default: errors surface as thrown errors, not log spam. */
export function createKafka(settings: KafkaSettings): Kafka {
  filterKafkajsTimerWarning();
  const iam = settings.saslMechanism === 'aws-msk-iam';
  return new Kafka({
    clientId: settings.clientId,
    brokers: settings.brokers,
    // MSK's IAM listener is TLS only.
    ssl: iam || (settings.ssl ?? false),
    sasl: iam ? mskIamSasl(settings.region ?? 'us-east-1') : undefined,
    connectionTimeout: settings.connectionTimeoutMs ?? 5000,
    logLevel: logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 5000 },
  });
}

/**
 * Idempotent, acks=all producer (docs/design.md §4). It renews itself (see {@link renewingProducer}) when the broker
 * refuses its sequence numbers, so one refused batch does not fail every later send of the process.
 */
export function createProducer(kafka: Kafka): Producer {
  const calls = renewingProducer(() =>
    kafka.producer({ idempotent: true, maxInFlightRequests: 5, allowAutoTopicCreation: false }),
  );
  return {
    ...calls,
    isIdempotent: () => true,
    // Listeners and the logger belong to the producer of the moment (nothing here listens to producer events).
    get events() {
      return calls.current().events;
    },
    on: ((...args: Parameters<Producer['on']>) => calls.current().on(...args)) as Producer['on'],
    transaction: () => calls.current().transaction(),
    logger: () => calls.current().logger(),
  };
}

/** The producer calls {@link renewingProducer} wraps. */
export type ProducerCalls = Pick<Producer, 'connect' | 'disconnect' | 'send' | 'sendBatch'>;

/**
 * Broker errors after which an idempotent producer's per-partition sequence numbers are of no use any more: the
 * broker refuses every later batch of that producer id on the partition. The Java client resets its producer id
 * then; kafkajs keeps sending the same sequence (seen in CI: "The broker received an out of order sequence number"
 * on a test's first send).
 */
const SEQUENCE_ERRORS = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH']);

/** Whether `e` (or the error it wraps) is one of {@link SEQUENCE_ERRORS}. */
export function isSequenceError(e: unknown): boolean {
  for (let err = e, depth = 0; err !== null && typeof err === 'object' && depth < 4; depth++) {
    const type = (err as { type?: unknown }).type;
    if (typeof type === 'string' && SEQUENCE_ERRORS.has(type)) return true;
    err = (err as { originalError?: unknown }).originalError ?? (err as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A connected producer that replaces itself once with a fresh one (a new producer id, sequences from 0) when a send
 * fails with a {@link isSequenceError sequence error}, and sends that batch again through it. The batch was refused,
 * so nothing is lost; partitions of the same call that the broker did store may be stored twice, which
 * at-least-once allows (docs/design.md §1). Sends that fail together renew the producer once. Any other error is
 * thrown as it came, and so is a second sequence error for the same call.
 */
export function renewingProducer<P extends ProducerCalls>(make: () => P): ProducerCalls & { current(): P } {
  let current = make();
  let connected = false;
  let renewal: Promise<void> | undefined;

  async function renew(failed: P): Promise<void> {
    if (current !== failed) return renewal;
    const next = make();
    current = next;
    renewal = next.connect().finally(() => {
      renewal = undefined;
    });
    void failed.disconnect().catch(() => {});
    return renewal;
  }

  async function call<T>(op: (p: P) => Promise<T>): Promise<T> {
    if (renewal) await renewal;
    const p = current;
    try {
      return await op(p);
    } catch (e) {
      if (!connected || !isSequenceError(e)) throw e;
      await renew(p);
      return op(current);
    }
  }

  return {
    current: () => current,
    async connect() {
      await current.connect();
      connected = true;
    },
    async disconnect() {
      connected = false;
      await renewal?.catch(() => {});
      await current.disconnect();
    },
    send: (record) => call((p) => p.send(record)),
    sendBatch: (batch) => call((p) => p.sendBatch(batch)),
  };
}

/**
 * Creates the topics that do not exist yet, with `config` (topic configs such as `retention.ms`) when given; existing
 * ones are left as they are.
 * @returns the names that were created
 */
export async function ensureTopics(
  admin: Admin,
  topics: string[],
  partitions: number,
  config: Record<string, string> = {},
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t));
  if (missing.length === 0) return [];
  try {
    await admin.createTopics({
      waitForLeaders: true,
      // No replicationFactor: the broker default applies (1 locally, 3 on MSK).
      topics: missing.map((topic) => ({
        topic,
        numPartitions: partitions,
        ...(Object.keys(config).length > 0
          ? { configEntries: Object.entries(config).map(([name, value]) => ({ name, value })) }
          : {}),
      })),
    });
  } catch (error) {
    // Created, but the broker kafkajs asked for their leaders had not learned of them yet, and kafkajs does not retry
    // UNKNOWN_TOPIC_OR_PARTITION there (seen on a loaded 2-core CI machine): wait for the leaders here, bounded.
    if ((error as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw error;
    await waitForLeaders(admin, missing, TOPIC_LEADERS_WAIT_MS);
  }
  return missing;
}

/** How long {@link ensureTopics} waits for new topics' leaders when kafkajs's own wait gave up early. */
const TOPIC_LEADERS_WAIT_MS = 30_000;

async function waitForLeaders(admin: Admin, topics: string[], withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      const { topics: meta } = await admin.fetchTopicMetadata({ topics });
      if (meta.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (error) {
      if ((error as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION') throw error;
    }
    if (Date.now() > deadline) throw new Error(`topics ${topics.join(', ')} have no leader after ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
