/**
 * `crawl-cluster feed`: validates requests locally, then produces them to `<prefix>.incoming`, keyed by appid.
 * One request given as the argument is sent only when valid, then feed listens for the cluster's rejection of it.
 * A file or stdin (one request per line) is streamed in bounded batches by cli/feed-lines.ts.
 */
import { type Command, CommanderError } from 'commander';
import { config } from '../lib/config/index.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import { clusterTopics } from '../lib/kafka/topics.ts';
import { settlesWithin } from '../lib/timeout.ts';
import { DEFAULT_FEED_BATCH_MESSAGES } from './feed-batcher.ts';
import { checkTopic, exitSoonAfterFailure, FeedProducer } from './feed-kafka.ts';
import { feedLines } from './feed-lines.ts';
import { type FeedItem, isRejection, rejectionLines, validateRequest } from './feed-validate.ts';
import { FeedAnswers, type FeedRefusal, refusalLine } from './feed-wait.ts';
import { bounded, type CliKafka, cliKafka, topicPrefix } from './kafka-session.ts';
import { positiveOrZeroSeconds } from './options.ts';
import type { Output } from './output.ts';
import { ClusterSession } from './reply-wait.ts';

/** How long `feed` listens for a rejection of what it sent, unless told (`--wait`). */
const DEFAULT_WAIT_S = 3;

/** `crawl-cluster feed`. */
export function registerFeed(program: Command, out: Output): void {
  program
    .command('feed')
    .description(
      'validate crawl, action, stats or domain config requests, then produce them to <prefix>.incoming keyed by appid',
    )
    .argument(
      '[request]',
      'one request as JSON, e.g. \'{"appid":"app","crawlid":"c1","url":"http://example.com"}\'; - reads one request per line from stdin',
    )
    .option(
      '-f, --file <path>',
      'read one JSON request per line from this file (- for stdin), streamed; blank lines are skipped, invalid lines reported and skipped',
    )
    .option('--prefix <prefix>', 'topic prefix (default: KAFKA_TOPIC_PREFIX)')
    .option(
      '--wait <seconds>',
      'after sending, listen this long for the cluster to reject a request (on <prefix>.outbound_firehose and <prefix>.rejected); 0: do not wait',
      positiveOrZeroSeconds,
      DEFAULT_WAIT_S,
    )
    .addHelpText(
      'after',
      [
        '',
        'A request can pass the local checks and still be refused by the cluster (an unknown spider, a crawl that was stopped or has finished: use a new crawlid); feed prints such a rejection, matched by uuid, or by appid and crawlid (for a file: of its first 10,000 requests).',
        `A file or stdin is read line by line and sent in batches of up to ${DEFAULT_FEED_BATCH_MESSAGES.toLocaleString('en-US')} requests (512 KiB), each acknowledged by Kafka within 12 s, with a progress line on stderr; memory stays bounded whatever the length. An invalid line is reported with its number and skipped. If Kafka fails part way, feed says through which line every request is stored, and how to send the rest (tail -n +K).`,
        'Exit codes: 0 sent, no rejection heard; 1 the cluster rejected a request, Kafka unreachable or failing, or the topic missing (fails within about 15 s); 2 invalid request (a request given as argument is then not sent; from a file, the valid lines are sent), empty input, or usage.',
        'With --json: the invalid request as a JSON list, or {"topic","sent","requests","rejected"} once sent; for a file {"topic","sent","requests","lines","invalid","invalidLines","seconds","rejected"}, or on a Kafka failure {"topic","sent","ackedThroughLine","failedFromLine","linesRead","invalid","error"}.',
      ].join('\n'),
    )
    .action(
      async (request: string | undefined, opts: { file?: string; prefix?: string; wait: number }, command: Command) => {
        if (request !== undefined && opts.file !== undefined) {
          command.error('give either a request or --file, not both', { exitCode: 2 });
        }
        const source = request === '-' ? '-' : opts.file;
        if (source !== undefined) {
          await feedLines({ source, prefix: opts.prefix, wait: opts.wait }, out, command);
          return;
        }
        if (request === undefined) {
          command.error('give a request as JSON, --file <path>, or - for stdin', { exitCode: 2 });
        }
        await feedOne(request, opts, out);
      },
    );
}

/** Validates and sends one request, then listens for its rejection unless `--wait 0`. */
async function feedOne(request: string, opts: { prefix?: string; wait: number }, out: Output): Promise<void> {
  const item = validateRequest(request);
  if (isRejection(item)) {
    if (out.json) out.data([item]);
    else {
      for (const line of rejectionLines(item)) out.error(line);
      out.error('1 of 1 request invalid; nothing was sent');
    }
    throw new CommanderError(2, 'crawl-cluster.invalidRequest', 'invalid request; nothing was sent');
  }
  const vars = config();
  const topic = clusterTopics(topicPrefix(opts.prefix, vars)).incoming;
  const client = cliKafka(vars);
  await checkTopic(client, topic);
  if (opts.wait === 0) {
    await produce(client, topic, item);
    report(out, topic, item);
    return;
  }
  const refusals = await sendAndListen(vars, opts.prefix, client, topic, item, opts.wait, out);
  report(out, topic, item, { waited: opts.wait, refusals });
  if (refusals.length > 0) throw new CrawlClusterError('the cluster rejected 1 of 1 request sent');
}

/**
 * Listens on the topics rejections come on (joined before sending, so none slips past), sends, and waits up to
 * `waitS` for a rejection; it is printed as it comes.
 */
async function sendAndListen(
  vars: ReturnType<typeof config>,
  prefix: string | undefined,
  client: CliKafka,
  topic: string,
  item: FeedItem,
  waitS: number,
  out: Output,
): Promise<FeedRefusal[]> {
  const session = await ClusterSession.open(vars, prefix, ['outboundFirehose', 'rejected']);
  try {
    const answers = new FeedAnswers([item]);
    let wake: () => void = () => {};
    const settled = new Promise<void>((resolve) => {
      wake = resolve;
    });
    await session.listen([session.topics.outboundFirehose, session.topics.rejected], (_topic, message) => {
      const refusal = answers.offer(message);
      if (refusal !== undefined) out.error(refusalLine(refusal));
      if (answers.settled()) wake();
    });
    await produce(client, topic, item);
    await settlesWithin(settled, waitS * 1000);
    return answers.refusals;
  } finally {
    await session.close();
  }
}

async function produce(client: CliKafka, topic: string, item: FeedItem): Promise<void> {
  const producer = await FeedProducer.connect(client, topic);
  try {
    await bounded(
      producer.send([{ key: item.appid, value: item.value }]),
      `sending to ${topic} failed (the request may have been stored)`,
    );
  } catch (error) {
    void producer.close();
    exitSoonAfterFailure();
    throw error;
  }
  await producer.close();
}

function report(out: Output, topic: string, item: FeedItem, heard?: { waited: number; refusals: FeedRefusal[] }): void {
  if (out.json) {
    const { value: _value, ...request } = item;
    const doc: Record<string, unknown> = { topic, sent: 1, requests: [request] };
    if (heard !== undefined) doc.rejected = heard.refusals;
    out.data(doc);
    return;
  }
  const n = heard?.refusals.length ?? 0;
  const after =
    heard === undefined ? '' : n === 0 ? `; no rejection within ${heard.waited} s` : `; ${n} rejected (above)`;
  const ids = [`appid=${item.appid}`];
  if (item.crawlid !== undefined) ids.push(`crawlid=${item.crawlid}`);
  if (item.uuid !== undefined) ids.push(`uuid=${item.uuid}`);
  out.info(`sent 1 ${item.type} request to ${topic} (${ids.join(' ')})${after}`);
}
