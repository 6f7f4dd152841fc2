/**
 * Per-app topics created on first use (`KAFKA_APPID_TOPICS`, docs/contract.md "Topics"). Scrapy Cluster relied on
 * the broker creating `<p>.crawled_<appid>` and `<p>.outbound_<appid>` when first written; MSK (and our local Kafka)
 * does not auto-create topics, so a new app's copies went nowhere. The {@link PerAppSender} (./per-app.ts) asks a
 * {@link TopicCreator} when its lookup finds a per-app topic missing: both topics of the app are created at once,
 * idempotently, with the configured partitions, through the process's own kafkajs client (SASL/IAM on MSK, as every
 * other Kafka call), and at most for `maxApps` apps of the prefix, counted on the brokers themselves.
 */
import type { Admin, Kafka } from 'kafkajs';
import { type Log, silentLog } from '../ports.ts';
import { ensureTopics } from './client.ts';
import type { TopicCreator } from './per-app.ts';
import { crawledAppTopic, isTopicSafeAppid, outboundAppTopic } from './topics.ts';

/** `<p>.crawled_firehose` and `<p>.outbound_firehose` look like per-app topics of an app named so; they are not. */
const FIREHOSE = 'firehose';

/** Options of {@link kafkaAppTopicCreator}. */
export interface AppTopicCreatorOptions {
  /** `KAFKA_TOPIC_PREFIX`. */
  prefix: string;
  /** Partitions of each new topic (`KAFKA_TOPIC_PARTITIONS`). */
  partitions: number;
  /** The most apps of the prefix that may have per-app topics (`KAFKA_APPID_TOPICS_MAX`); 0 creates none. */
  maxApps: number;
  /** @default silentLog */
  log?: Log;
}

/** The appid of a per-app topic of `prefix` (`<p>.crawled_<appid>` or `<p>.outbound_<appid>`), else undefined. */
export function appidOfTopic(prefix: string, topic: string): string | undefined {
  for (const kind of ['crawled_', 'outbound_']) {
    const start = `${prefix}.${kind}`;
    if (!topic.startsWith(start)) continue;
    const appid = topic.slice(start.length);
    return appid !== FIREHOSE && isTopicSafeAppid(appid) ? appid : undefined;
  }
  return undefined;
}

/** The apps of `prefix` that have at least one per-app topic among `topics`. */
export function appsWithTopics(prefix: string, topics: Iterable<string>): Set<string> {
  const apps = new Set<string>();
  for (const topic of topics) {
    const appid = appidOfTopic(prefix, topic);
    if (appid !== undefined) apps.add(appid);
  }
  return apps;
}

/**
 * A {@link TopicCreator} over a kafkajs client: for a per-app topic of the prefix, creates both topics of its app
 * unless `maxApps` other apps already have some (then it logs an error naming the setting and resolves false). The
 * count is read from the brokers (one metadata request) before each creation, so topics made by hand (`topics create
 * --appid`) count too; processes creating topics for different new apps at the same moment may together pass the
 * bound by the number of such processes. One creation at a time per app in a process. The admin connects on first
 * use and is kept; `close()` disconnects it.
 */
export function kafkaAppTopicCreator(kafka: Kafka, options: AppTopicCreatorOptions): TopicCreator & Closable {
  const log = options.log ?? silentLog;
  const admin = lazyAdmin(kafka);
  const pending = new Map<string, Promise<boolean>>();

  async function createApp(appid: string): Promise<boolean> {
    const a = await admin.get();
    const wanted = [crawledAppTopic(options.prefix, appid), outboundAppTopic(options.prefix, appid)];
    const apps = appsWithTopics(options.prefix, await a.listTopics());
    if (!apps.has(appid) && apps.size >= options.maxApps) {
      log.error('per-app topics not created: KAFKA_APPID_TOPICS_MAX apps already have theirs', {
        appid,
        topics: wanted,
        apps: apps.size,
        max: options.maxApps,
      });
      return false;
    }
    const created = await ensureTopics(a, wanted, options.partitions);
    if (created.length > 0) log.info('per-app topics created', { appid, created, partitions: options.partitions });
    return true;
  }

  const create = (topic: string): Promise<boolean> => {
    const appid = appidOfTopic(options.prefix, topic);
    if (appid === undefined) return Promise.resolve(false);
    let p = pending.get(appid);
    if (p === undefined) {
      p = createApp(appid).finally(() => pending.delete(appid));
      pending.set(appid, p);
    }
    return p;
  };
  return Object.assign(create, { close: () => admin.close() });
}

/** {@link kafkaAppTopicCreator} from the configuration variables. */
export function appTopicCreator(
  kafka: Kafka,
  vars: { KAFKA_TOPIC_PREFIX: string; KAFKA_TOPIC_PARTITIONS: number; KAFKA_APPID_TOPICS_MAX: number },
  log: Log,
): TopicCreator & Closable {
  return kafkaAppTopicCreator(kafka, {
    prefix: vars.KAFKA_TOPIC_PREFIX,
    partitions: vars.KAFKA_TOPIC_PARTITIONS,
    maxApps: vars.KAFKA_APPID_TOPICS_MAX,
    log,
  });
}

/** Something with a `close()` that never throws. */
export interface Closable {
  close(): Promise<void>;
}

/** A kafkajs admin connected on first use (a failed connect is tried again by the next use). */
function lazyAdmin(kafka: Kafka): { get(): Promise<Admin>; close(): Promise<void> } {
  const admin = kafka.admin();
  let connected: Promise<void> | undefined;
  return {
    async get() {
      connected ??= admin.connect().catch((error: unknown) => {
        connected = undefined;
        throw error;
      });
      await connected;
      return admin;
    },
    async close() {
      if (connected === undefined) return;
      connected = undefined;
      await admin.disconnect().catch(() => {});
    },
  };
}
