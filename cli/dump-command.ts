/**
 * `crawl-cluster dump <topic>`: prints a topic's messages as JSON lines on stdout, with a throwaway
 * consumer group so it never disturbs the cluster's own consumers. Diagnostics and the summary go to
 * stderr, so stdout can be piped into `jq` as it is.
 */
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Command } from 'commander';
import { config } from '../lib/config/index.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import type { Admin, Consumer } from '../lib/kafka/types.ts';
import { isObject } from '../lib/schemas/bounds.ts';
import {
  bounded,
  cliKafka,
  connectAdmin,
  Follower,
  listTopics,
  missingTopicMessage,
  quietly,
  topicPrefix,
  watchConsumer,
} from './kafka-session.ts';
import { integerOption, positiveSeconds } from './options.ts';
import type { Output } from './output.ts';

/** What to print of each message. */
interface RenderOptions {
  /** Keep page bodies; when false, `body` is replaced by `body_length`. @default true */
  body: boolean;
  /** Indent the JSON. @default false */
  pretty: boolean;
  /** Print only messages whose `crawlid` is this. */
  crawlid?: string;
  /** Print only messages whose `appid` is this. */
  appid?: string;
}

/** The outcome for one message: a line to print, or why it is skipped; `notJson` when it did not parse. */
type Rendered = { line: string; notJson: boolean } | { skipped: true; notJson: boolean };

/**
 * Turns one message value into the text to print. A value that is not JSON is printed as a JSON string
 * (never a crash) unless a filter is set, which it cannot match.
 */
function renderMessage(value: Buffer | null, options: RenderOptions): Rendered {
  const text = value === null ? 'null' : value.toString('utf8');
  let parsed: unknown;
  let notJson = false;
  try {
    parsed = JSON.parse(text);
  } catch {
    notJson = true;
    parsed = text;
  }
  const record = isObject(parsed) ? parsed : undefined;
  if (options.crawlid !== undefined && record?.crawlid !== options.crawlid) return { skipped: true, notJson };
  if (options.appid !== undefined && record?.appid !== options.appid) return { skipped: true, notJson };
  const shown = record !== undefined && !options.body ? withoutBody(record) : parsed;
  return { line: JSON.stringify(shown, null, options.pretty ? 2 : undefined), notJson };
}

/** Replaces a string `body` by `body_length` (its UTF-8 bytes) in the same place; other messages are unchanged. */
function withoutBody(record: Record<string, unknown>): Record<string, unknown> {
  if (typeof record.body !== 'string') return record;
  const copy: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(record)) {
    if (key === 'body') copy.body_length = Buffer.byteLength(v as string, 'utf8');
    else copy[key] = v;
  }
  return copy;
}

/** `crawled_firehose` → `<prefix>.crawled_firehose`; a name with a dot is already a full topic name. */
function resolveTopic(name: string, prefix: string): string {
  return name.includes('.') ? name : `${prefix}.${name}`;
}

interface DumpOptions {
  prefix?: string;
  fromBeginning?: boolean;
  max?: number;
  timeout?: number;
  body: boolean;
  pretty?: boolean;
  crawlid?: string;
  appid?: string;
}

/** Why the dump ended, for the summary line. */
type StopReason = 'max reached' | 'idle timeout' | 'interrupted' | 'stdout closed';

/** Joining a group takes seconds (longer on MSK during a rebalance); past this something is wrong. */
const JOIN_DEADLINE_MS = 60_000;

/** `crawl-cluster dump`. */
export function registerDump(program: Command, out: Output, stdout: NodeJS.WritableStream = process.stdout): void {
  program
    .command('dump')
    .description('print the messages of a topic as JSON lines on stdout (throwaway consumer group; Ctrl-C to stop)')
    .argument(
      '<topic>',
      'crawled_firehose, outbound_firehose, incoming, ... (prefixed with --prefix), or a full name with a dot',
    )
    .option('--prefix <prefix>', 'topic prefix for a short topic name (default: KAFKA_TOPIC_PREFIX)')
    .option('--from-beginning', 'start at the oldest message kept (default: only messages that arrive from now on)')
    .option('--max <n>', 'stop after printing n messages', integerOption({ min: 1 }))
    .option(
      '--timeout <seconds>',
      'stop after this many seconds without a new message (default: run until Ctrl-C)',
      positiveSeconds,
    )
    .option('--no-body', 'replace the body of page messages with body_length (its size in UTF-8 bytes)')
    .option('--pretty', 'indent each JSON message (the output is then no longer one message per line)')
    .option('--crawlid <crawlid>', 'print only messages with this crawlid')
    .option('--appid <appid>', 'print only messages with this appid')
    .addHelpText(
      'after',
      '\nA message that is not JSON is printed as a JSON string, with a warning on stderr.\nThe summary (messages printed, skipped, why it stopped) goes to stderr. Ctrl-C or SIGTERM stops cleanly with exit code 0.',
    )
    .action(async (name: string, opts: DumpOptions) => {
      await dump(name, opts, out, stdout);
    });
}

async function dump(name: string, opts: DumpOptions, out: Output, stdout: NodeJS.WritableStream): Promise<void> {
  const vars = config();
  const prefix = topicPrefix(opts.prefix, vars);
  const topic = resolveTopic(name, prefix);
  const render: RenderOptions = { body: opts.body, pretty: opts.pretty ?? false };
  if (opts.crawlid !== undefined) render.crawlid = opts.crawlid;
  if (opts.appid !== undefined) render.appid = opts.appid;

  const client = cliKafka(vars);
  const admin = await connectAdmin(client);
  try {
    const existing = await listTopics(admin, client);
    if (!existing.has(topic)) throw new CrawlClusterError(missingTopicMessage(topic, prefix, existing));

    const groupId = `crawl-cluster-dump.${topic}.${randomBytes(4).toString('hex')}`;
    // A short fetch wait so that stopping never waits long for a fetch in flight.
    const consumer = client.kafka.consumer({ groupId, maxWaitTimeInMs: 500 });
    const session = new DumpSession(consumer, render, opts, out, stdout);
    try {
      const reason = await session.run(admin, topic, opts.fromBeginning ?? false, client.brokers);
      const { printed, skipped, notJson } = session.counts;
      const extra = [skipped > 0 ? `${skipped} skipped by filter` : '', notJson > 0 ? `${notJson} not JSON` : '']
        .filter(Boolean)
        .join(', ');
      out.progress(
        `${printed} message${printed === 1 ? '' : 's'} printed from ${topic}${extra ? ` (${extra})` : ''}; stopped: ${reason}`,
      );
    } finally {
      await quietly(consumer.disconnect());
      // The group only held a member, not offsets (autoCommit is off); deleting it keeps listings clean.
      await quietly(admin.deleteGroups([groupId]));
    }
  } finally {
    await quietly(admin.disconnect());
  }
}

/** One consumer's run: prints messages until max, idle timeout, a signal or a closed stdout. */
class DumpSession {
  readonly counts = { printed: 0, skipped: 0, notJson: 0 };
  private done = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private finish!: (reason: StopReason) => void;
  private fail!: (error: Error) => void;
  private readonly finished: Promise<StopReason>;
  private readonly consumer: Consumer;
  private readonly render: RenderOptions;
  private readonly opts: DumpOptions;
  private readonly out: Output;
  private readonly stdout: NodeJS.WritableStream;

  constructor(
    consumer: Consumer,
    render: RenderOptions,
    opts: DumpOptions,
    out: Output,
    stdout: NodeJS.WritableStream,
  ) {
    this.consumer = consumer;
    this.render = render;
    this.opts = opts;
    this.out = out;
    this.stdout = stdout;
    this.finished = new Promise<StopReason>((resolve, reject) => {
      this.finish = (reason) => {
        if (this.done) return;
        this.done = true;
        resolve(reason);
      };
      this.fail = (error) => {
        if (this.done) return;
        this.done = true;
        reject(error);
      };
    });
  }

  async run(admin: Admin, topic: string, fromBeginning: boolean, brokers: string): Promise<StopReason> {
    let signals = 0;
    const onSignal = () => {
      signals += 1;
      // A second Ctrl-C means the clean stop is stuck: leave at once.
      if (signals > 1) process.exit(130);
      this.out.progress('stopping (Ctrl-C again to force)');
      this.finish('interrupted');
    };
    const onStdoutError = (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') this.finish('stdout closed');
      else this.fail(error);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    this.stdout.on('error', onStdoutError);
    const joinDeadline = setTimeout(
      () => this.fail(new CrawlClusterError(`the consumer did not join its group within ${JOIN_DEADLINE_MS / 1000} s`)),
      JOIN_DEADLINE_MS,
    );
    const { GROUP_JOIN } = this.consumer.events;
    let joined = false;
    // Also on every later join (a rebalance, a restart after a crash), where the follower resumes.
    const offJoin = this.consumer.on(GROUP_JOIN, () => {
      if (joined) return;
      joined = true;
      clearTimeout(joinDeadline);
      this.out.progress(`reading ${topic}${fromBeginning ? ' from the beginning' : ''} (Ctrl-C to stop)`);
      this.armIdleTimer();
    });
    // Never silent on a consumer that stopped: a person sees it go and come back, or the dump fails (exit 1).
    const offWatch = watchConsumer(this.consumer, topic, {
      lost: (error) => this.out.progress(`lost the connection to Kafka (${error}); reconnecting`),
      back: (ms) => this.out.progress(`reading ${topic} again after ${(ms / 1000).toFixed(1)} s`),
      failed: (error) => this.fail(error),
    });
    let follower: Follower | undefined;
    try {
      // "From now on" is from here: what is produced from this point is printed, even across rejoins.
      follower = await Follower.start(admin, this.consumer, [topic], { fromBeginning, brokers });
      await bounded(this.consumer.connect(), `cannot reach Kafka at ${brokers} (KAFKA_BROKERS)`);
      await bounded(this.consumer.subscribe({ topics: [topic], fromBeginning }), `cannot subscribe to ${topic}`);
      // run() resolves once the group is joined; the join deadline, a signal or a crash end the wait sooner.
      const running = this.consumer.run({
        autoCommit: false,
        eachMessage: follower.eachMessage(async ({ partition, message }) => this.onMessage(partition, message)),
      });
      running.catch((error: Error) => this.fail(error));
      return await this.finished;
    } finally {
      this.done = true;
      clearTimeout(joinDeadline);
      clearTimeout(this.idleTimer);
      offJoin();
      offWatch();
      follower?.stop();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      this.stdout.off('error', onStdoutError);
    }
  }

  private armIdleTimer(): void {
    if (this.opts.timeout === undefined || this.done) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.finish('idle timeout'), this.opts.timeout * 1000);
  }

  private async onMessage(partition: number, message: { value: Buffer | null; offset: string }): Promise<void> {
    // kafkajs hands over the rest of a fetched batch after a stop; none of it is printed.
    if (this.done) return;
    this.armIdleTimer();
    const rendered = renderMessage(message.value, this.render);
    const skipped = 'skipped' in rendered;
    if (rendered.notJson) {
      this.counts.notJson += 1;
      const what = skipped ? 'skipped by the filter' : 'printed as a JSON string';
      this.out.progress(`warning: message at partition ${partition} offset ${message.offset} is not JSON; ${what}`);
    }
    if (skipped) {
      this.counts.skipped += 1;
      return;
    }
    this.counts.printed += 1;
    if (!this.stdout.write(`${rendered.line}\n`)) {
      // A closed pipe never drains; the stop it causes ends the wait.
      await Promise.race([once(this.stdout, 'drain').catch(() => {}), this.finished.catch(() => {})]);
    }
    if (this.opts.max !== undefined && this.counts.printed >= this.opts.max) this.finish('max reached');
  }
}
