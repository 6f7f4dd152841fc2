/**
 * `crawl-cluster feed -f FILE` and `feed -`: one request per line, read as a stream (never the whole input at once),
 * validated line by line and produced in bounded batches (cli/feed-batcher.ts), so a file of any length feeds in
 * bounded memory. An invalid line is reported with its number and skipped; the valid ones are sent. When Kafka fails
 * part way, the error says up to which line everything is stored, so the rest can be fed again with `tail -n +K`.
 */
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { type Command, CommanderError } from 'commander';
import { config } from '../lib/config/index.ts';
import { CrawlClusterError } from '../lib/errors.ts';
import { clusterTopics } from '../lib/kafka/topics.ts';
import { settlesWithin } from '../lib/timeout.ts';
import { FeedBatcher, FeedSendError } from './feed-batcher.ts';
import { checkTopic, exitSoonAfterFailure, FeedProducer } from './feed-kafka.ts';
import { FeedTally, streamFeed } from './feed-stream.ts';
import { type FeedRejection, rejectionLines } from './feed-validate.ts';
import { FeedAnswers, refusalLine } from './feed-wait.ts';
import { cliKafka, topicPrefix } from './kafka-session.ts';
import type { Output } from './output.ts';
import { ProgressLine } from './progress-line.ts';
import { ClusterSession } from './reply-wait.ts';

/** Invalid lines printed with their reasons (and listed with --json); the rest are only counted. */
const FEED_INVALID_SHOWN = 20;
/**
 * Requests whose rejections by the cluster a feed of lines follows (`--wait`): what is sent after them is not
 * matched, so the memory of a long feed stays bounded.
 */
const FEED_WAIT_FOLLOWED = 10_000;

/** Options of {@link feedLines}. */
export interface FeedLinesOptions {
  /** A file path, or `-` for stdin. */
  source: string;
  prefix?: string;
  /** Seconds to listen for rejections after sending; 0: not at all. */
  wait: number;
}

/** Feeds every line of `options.source`; see the file comment. */
export async function feedLines(options: FeedLinesOptions, out: Output, command: Command): Promise<void> {
  const input = await openInput(options.source, command);
  const vars = config();
  const prefix = topicPrefix(options.prefix, vars);
  const topic = clusterTopics(prefix).incoming;
  const client = cliKafka(vars);
  const tally = new FeedTally();
  const shown: FeedRejection[] = [];
  const answers = new FeedAnswers();
  let producer: FeedProducer | undefined;
  let session: ClusterSession | undefined;
  let sent = false;
  let failed = false;
  let wake: () => void = () => {};
  const settled = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const batcher = new FeedBatcher((messages) => {
    if (producer === undefined) return Promise.reject(new Error('not connected'));
    return producer.send(messages);
  });
  const progress = new ProgressLine(() => progressText(tally, batcher.acked));
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    await streamFeed(lines, batcher, tally, {
      invalid: (rejection) => {
        if (shown.length >= FEED_INVALID_SHOWN) return;
        shown.push(rejection);
        if (!out.json) for (const line of rejectionLines(rejection)) progress.note(`error: ${line}`);
      },
      valid: (item) => {
        if (session !== undefined && tally.valid <= FEED_WAIT_FOLLOWED) answers.track(item);
      },
      ready: async () => {
        await checkTopic(client, topic);
        if (options.wait > 0) {
          // Joined before the first send, so no rejection slips past.
          session = await ClusterSession.open(vars, options.prefix, ['outboundFirehose', 'rejected']);
          await session.listen([session.topics.outboundFirehose, session.topics.rejected], (_topic, message) => {
            const refusal = answers.offer(message);
            if (refusal !== undefined) progress.note(`error: ${refusalLine(refusal)}`);
            if (sent && answers.settled()) wake();
          });
        }
        producer = await FeedProducer.connect(client, topic);
      },
    });
    sent = true;
    progress.stop();
    if (session !== undefined && !answers.settled()) await settlesWithin(settled, options.wait * 1000);
  } catch (error) {
    progress.stop();
    const acked = { requests: batcher.acked, line: batcher.ackedThroughLine };
    failed = true;
    throw stopped(error, { tally, topic, source: options.source, out, acked });
  } finally {
    progress.stop();
    lines.close();
    input.destroy();
    const cleanup = Promise.all([producer?.close(), session?.close().catch(() => {})]);
    // After a failure the connections may never close (a broker that stopped answering): they get a grace period.
    if (failed) exitSoonAfterFailure();
    else await cleanup;
  }
  if (tally.valid === 0 && tally.invalid === 0)
    command.error('no request to send: the input is empty', { exitCode: 2 });
  report(out, { tally, topic, shown, answers, waited: session === undefined ? undefined : options.wait });
}

async function openInput(source: string, command: Command): Promise<Readable> {
  if (source === '-') return process.stdin;
  try {
    return (await open(source, 'r')).createReadStream();
  } catch (error) {
    command.error(`cannot read ${source}: ${(error as Error).message}`, { exitCode: 2 });
  }
}

function progressText(tally: FeedTally, acked: number): string {
  const seconds = (Date.now() - tally.startedAt) / 1000;
  const rate = seconds > 0 ? Math.round(tally.lines / seconds) : 0;
  return `feed: ${plural(tally.lines, 'line')} read, ${plural(acked, 'request')} sent, ${plural(tally.invalid, 'invalid line')} skipped, ${count(rate)} lines/s`;
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function plural(n: number, word: string): string {
  return `${count(n)} ${word}${n === 1 ? '' : 's'}`;
}

/** The error a failed feed ends with: what failed, and where to resume when requests were sent. */
function stopped(
  error: unknown,
  at: { tally: FeedTally; topic: string; source: string; out: Output; acked: { requests: number; line: number } },
): unknown {
  const { tally, topic, source, out } = at;
  if (!(error instanceof FeedSendError)) {
    // Kafka unreachable or the topic missing at the first valid request, or the input failed to read.
    if (!(error instanceof Error) || tally.lines === 0) return error;
    const stored =
      at.acked.requests === 0
        ? 'nothing was sent'
        : `Kafka acknowledged every request through line ${at.acked.line} (${plural(at.acked.requests, 'request')})`;
    return new CrawlClusterError(`${error.message}; ${stored}`, { cause: error });
  }
  const k = error.ackedThroughLine;
  const input = source === '-' ? '<your input>' : shellWord(source);
  if (out.json) {
    out.data({
      topic,
      sent: error.ackedRequests,
      ackedThroughLine: k,
      failedFromLine: error.failedFromLine,
      linesRead: tally.lines,
      invalid: tally.invalid,
      error: error.message,
    });
  }
  const stored =
    error.ackedRequests === 0
      ? 'Kafka acknowledged no request'
      : `Kafka acknowledged every request through line ${k} (${plural(error.ackedRequests, 'request')})`;
  return new CrawlClusterError(
    [
      `sending to ${topic} failed at line ${error.failedFromLine}: ${error.message}`,
      `${stored}; the ${plural(error.failedRequests, 'request')} from line ${error.failedFromLine} may be partly stored, the lines after it were not sent.`,
      `Feed the rest again with: tail -n +${k + 1} ${input} | crawl-cluster feed -`,
    ].join('\n'),
    { cause: error },
  );
}

/** `path` as one word for a shell command line, quoted when it needs to be. */
function shellWord(path: string): string {
  return /^[\w./@%+=:,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

function report(
  out: Output,
  r: { tally: FeedTally; topic: string; shown: FeedRejection[]; answers: FeedAnswers; waited: number | undefined },
): void {
  const { tally, topic, shown, answers, waited } = r;
  const seconds = Math.round((Date.now() - tally.startedAt) / 100) / 10;
  const refusals = answers.refusals;
  const followedAll = tally.valid <= FEED_WAIT_FOLLOWED;
  if (out.json) {
    const doc: Record<string, unknown> = {
      topic,
      sent: tally.valid,
      requests: Object.fromEntries(tally.byType),
      lines: tally.lines,
      invalid: tally.invalid,
      invalidLines: shown,
      seconds,
    };
    if (waited !== undefined) {
      doc.rejected = refusals;
      if (!followedAll) doc.rejectionsFollowed = FEED_WAIT_FOLLOWED;
    }
    out.data(doc);
  } else if (tally.valid > 0) {
    const types = [...tally.byType].map(([type, n]) => `${count(n)} ${type}`).join(', ');
    const skipped = tally.invalid === 0 ? '' : ` (${plural(tally.invalid, 'invalid line')} skipped)`;
    let heard = '';
    if (waited !== undefined) {
      heard =
        refusals.length === 0 ? `; no rejection within ${waited} s` : `; ${count(refusals.length)} rejected (above)`;
      if (!followedAll) heard += ` (rejections followed for the first ${count(FEED_WAIT_FOLLOWED)} requests)`;
    }
    out.info(`sent ${plural(tally.valid, 'request')} to ${topic} (${types})${skipped} in ${seconds} s${heard}`);
  }
  if (tally.invalid > 0 && !out.json) {
    const more = tally.invalid > shown.length ? ` (the first ${shown.length} shown above)` : '';
    const what = tally.valid === 0 ? 'nothing was sent' : `the other ${plural(tally.valid, 'request')} were sent`;
    out.error(`${count(tally.invalid)} of ${plural(tally.valid + tally.invalid, 'request')} invalid${more}; ${what}`);
  }
  if (refusals.length > 0) {
    throw new CrawlClusterError(
      `the cluster rejected ${count(refusals.length)} of ${plural(tally.valid, 'request')} sent`,
    );
  }
  if (tally.invalid > 0) throw new CommanderError(2, 'crawl-cluster.invalidRequest', 'invalid lines were skipped');
}
