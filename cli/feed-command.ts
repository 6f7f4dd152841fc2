/**
 * `crawl-cluster feed`: validates requests locally, then produces them to `<prefix>.incoming`, keyed by
 * appid, in one batch. All or nothing: one invalid request and nothing is sent, so a file can be fixed
 * and fed again without duplicating the lines that were fine.
 */
import { readFile } from 'node:fs/promises';
import { text as readStream } from 'node:stream/consumers';
import { type Command, CommanderError } from 'commander';
import { config } from '../lib/config/index.ts';
import { CrawlClusterError, type RejectionDetail, type RejectionKind, SchemaValidationError } from '../lib/errors.ts';
import { createProducer } from '../lib/kafka/client.ts';
import { producerSink } from '../lib/kafka/sink.ts';
import { clusterTopics } from '../lib/kafka/topics.ts';
import { parseRequest, type RequestType } from '../lib/schemas/index.ts';
import { settlesWithin } from '../lib/timeout.ts';
import { FeedAnswers, type FeedRefusal, refusalLine } from './feed-wait.ts';
import { bounded, type CliKafka, cliKafka, connectAdmin, listTopics, quietly, topicPrefix } from './kafka-session.ts';
import { positiveOrZeroSeconds } from './options.ts';
import type { Output } from './output.ts';
import { ClusterSession } from './reply-wait.ts';

/** How long `feed` listens for a rejection of what it sent, unless told (`--wait`). */
const DEFAULT_WAIT_S = 3;

/** One request that passed validation, as it will be sent. */
export interface FeedItem {
  /** 1-based line of the file or stdin; absent for a request given as the argument. */
  line?: number;
  type: RequestType;
  appid: string;
  crawlid?: string;
  uuid?: string;
  /** The message value: the request as written, re-serialized compactly (defaults are the kafka-monitor's job). */
  value: string;
}

/** One request that failed validation, in the shape of the contract's rejections. */
export interface FeedRejection {
  line?: number;
  error: RejectionKind;
  details: RejectionDetail[];
}

/** Where the requests come from: one JSON document, or one per line. */
export interface FeedInput {
  text: string;
  perLine: boolean;
}

/**
 * Validates every request with {@link parseRequest}. Blank lines are skipped.
 * @returns the valid requests and the rejections; the caller sends nothing unless there are no rejections
 */
export function validateFeed(input: FeedInput): { items: FeedItem[]; rejections: FeedRejection[] } {
  const documents: { text: string; line?: number }[] = input.perLine
    ? input.text.split(/\r?\n/).map((text, i) => ({ text, line: i + 1 }))
    : [{ text: input.text }];
  const items: FeedItem[] = [];
  const rejections: FeedRejection[] = [];
  for (const { text, line } of documents) {
    if (text.trim() === '') continue;
    try {
      const { type, request } = parseRequest(text);
      const item: FeedItem = { type, appid: request.appid, value: JSON.stringify(JSON.parse(text)) };
      if (line !== undefined) item.line = line;
      if ('crawlid' in request && request.crawlid !== undefined) item.crawlid = request.crawlid;
      if ('uuid' in request) item.uuid = request.uuid;
      items.push(item);
    } catch (error) {
      if (!(error instanceof SchemaValidationError)) throw error;
      const rejection = { error: error.kind, details: error.details };
      rejections.push(line === undefined ? rejection : { line, ...rejection });
    }
  }
  return { items, rejections };
}

/** `crawl-cluster feed`. */
export function registerFeed(program: Command, out: Output): void {
  program
    .command('feed')
    .description(
      'validate crawl, action, stats or domain config requests, then produce them to <prefix>.incoming keyed by appid (nothing is sent if any request is invalid)',
    )
    .argument(
      '[request]',
      'one request as JSON, e.g. \'{"appid":"app","crawlid":"c1","url":"http://example.com"}\'; - reads one request per line from stdin',
    )
    .option('-f, --file <path>', 'read one JSON request per line from this file (- for stdin); blank lines are skipped')
    .option('--prefix <prefix>', 'topic prefix (default: KAFKA_TOPIC_PREFIX)')
    .option(
      '--wait <seconds>',
      'after sending, listen this long for the cluster to reject a request (on <prefix>.outbound_firehose and <prefix>.rejected); 0: do not wait',
      positiveOrZeroSeconds,
      DEFAULT_WAIT_S,
    )
    .addHelpText(
      'after',
      '\nA request can pass the local checks and still be refused by the cluster (an unknown spider, a crawl that was stopped or has finished: use a new crawlid); feed prints such a rejection, matched by uuid, or by appid and crawlid.\nExit codes: 0 sent, no rejection heard; 1 the cluster rejected a request, Kafka unreachable or the topic missing (fails within about 15 s); 2 invalid request or usage.\nWith --json: the invalid requests as a JSON list, or {"topic","sent","requests","rejected"} once sent.',
    )
    .action(
      async (request: string | undefined, opts: { file?: string; prefix?: string; wait: number }, command: Command) => {
        const input = await readInput(request, opts.file, command);
        const { items, rejections } = validateFeed(input);
        if (rejections.length > 0) {
          reportRejections(out, rejections, items.length + rejections.length);
          throw new CommanderError(2, 'crawl-cluster.invalidRequest', 'invalid request; nothing was sent');
        }
        if (items.length === 0) command.error('no request to send: the input is empty', { exitCode: 2 });

        const vars = config();
        const topic = clusterTopics(topicPrefix(opts.prefix, vars)).incoming;
        const client = cliKafka(vars);
        await checkTopic(client, topic);
        if (opts.wait === 0) {
          await produce(client, topic, items);
          report(out, topic, items);
          return;
        }
        const refusals = await sendAndListen(vars, opts.prefix, client, topic, items, opts.wait, out);
        report(out, topic, items, { waited: opts.wait, refusals });
        if (refusals.length > 0) {
          throw new CrawlClusterError(
            `the cluster rejected ${refusals.length} of ${items.length} request${items.length === 1 ? '' : 's'} sent`,
          );
        }
      },
    );
}

/**
 * Listens on the topics rejections come on (joined before sending, so none slips past), sends, and waits up to
 * `waitS` for rejections; each is printed as it comes.
 */
async function sendAndListen(
  vars: ReturnType<typeof config>,
  prefix: string | undefined,
  client: CliKafka,
  topic: string,
  items: FeedItem[],
  waitS: number,
  out: Output,
): Promise<FeedRefusal[]> {
  const session = await ClusterSession.open(vars, prefix, ['outboundFirehose', 'rejected']);
  try {
    const answers = new FeedAnswers(items);
    let wake: () => void = () => {};
    const settled = new Promise<void>((resolve) => {
      wake = resolve;
    });
    await session.listen([session.topics.outboundFirehose, session.topics.rejected], (_topic, message) => {
      const refusal = answers.offer(message);
      if (refusal !== undefined) out.error(refusalLine(refusal));
      if (answers.settled()) wake();
    });
    await produce(client, topic, items);
    await settlesWithin(settled, waitS * 1000);
    return answers.refusals;
  } finally {
    await session.close();
  }
}

async function readInput(request: string | undefined, file: string | undefined, command: Command): Promise<FeedInput> {
  if (request !== undefined && file !== undefined) {
    command.error('give either a request or --file, not both', { exitCode: 2 });
  }
  if (request === '-' || file === '-') return { text: await readStream(process.stdin), perLine: true };
  if (file !== undefined) {
    try {
      return { text: await readFile(file, 'utf8'), perLine: true };
    } catch (error) {
      command.error(`cannot read ${file}: ${(error as Error).message}`, { exitCode: 2 });
    }
  }
  if (request === undefined) command.error('give a request as JSON, --file <path>, or - for stdin', { exitCode: 2 });
  return { text: request, perLine: false };
}

function reportRejections(out: Output, rejections: FeedRejection[], total: number): void {
  if (out.json) {
    out.data(rejections);
    return;
  }
  for (const r of rejections) {
    const where = r.line === undefined ? '' : `line ${r.line}: `;
    for (const d of r.details) out.error(`${where}${d.path ? `${d.path} ` : ''}${d.message} (${r.error})`);
  }
  out.error(`${rejections.length} of ${total} request${total === 1 ? '' : 's'} invalid; nothing was sent`);
}

/** The idempotent producer retries a missing topic forever, so the topic is checked first. */
async function checkTopic(client: CliKafka, topic: string): Promise<void> {
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

async function produce(client: CliKafka, topic: string, items: FeedItem[]): Promise<void> {
  const producer = createProducer(client.kafka);
  try {
    await bounded(producer.connect(), `cannot reach Kafka at ${client.brokers} (KAFKA_BROKERS)`);
    const messages = items.map((item) => ({ key: item.appid, value: item.value }));
    await bounded(
      producerSink(producer).send([{ topic, messages }]),
      `sending to ${topic} failed (some requests may have been stored)`,
    );
  } finally {
    await quietly(producer.disconnect());
  }
}

function report(
  out: Output,
  topic: string,
  items: FeedItem[],
  heard?: { waited: number; refusals: FeedRefusal[] },
): void {
  if (out.json) {
    const doc: Record<string, unknown> = {
      topic,
      sent: items.length,
      requests: items.map(({ value: _value, ...item }) => item),
    };
    if (heard !== undefined) doc.rejected = heard.refusals;
    out.data(doc);
    return;
  }
  const n = heard?.refusals.length ?? 0;
  const after =
    heard === undefined ? '' : n === 0 ? `; no rejection within ${heard.waited} s` : `; ${n} rejected (above)`;
  const [only] = items;
  if (items.length === 1 && only !== undefined) {
    const ids = [`appid=${only.appid}`];
    if (only.crawlid !== undefined) ids.push(`crawlid=${only.crawlid}`);
    if (only.uuid !== undefined) ids.push(`uuid=${only.uuid}`);
    out.info(`sent 1 ${only.type} request to ${topic} (${ids.join(' ')})${after}`);
    return;
  }
  const byType = new Map<RequestType, number>();
  for (const item of items) byType.set(item.type, (byType.get(item.type) ?? 0) + 1);
  const counts = [...byType].map(([type, n]) => `${n} ${type}`).join(', ');
  out.info(`sent ${items.length} requests to ${topic} (${counts})${after}`);
}
