/**
 * `crawl-cluster crawl <url>`: feeds one crawl to a running cluster and follows it to the end. It listens
 * on `<p>.crawled_firehose` and `<p>.outbound_firehose` before feeding (so no page is missed), asks the
 * cluster every 2 s what is still pending, shows a live progress line, writes the pages to `--out`, and
 * ends when the crawl's `complete` notice arrives. Ctrl-C offers to stop the crawl in the cluster.
 */
import { randomBytes } from 'node:crypto';
import type { WriteStream } from 'node:fs';
import { type Command, CommanderError } from 'commander';
import { config } from '../lib/config/index.ts';
import { CrawlClusterError, SchemaValidationError } from '../lib/errors.ts';
import { FRONTIER_STATE_LOST } from '../lib/monitor/state-watch.ts';
import { type CrawlRequest, validateRequest } from '../lib/schemas/index.ts';
import { closePagesFile, openPagesFile } from './crawl-pages-file.ts';
import { offerStop } from './crawl-stop.ts';
import { skippedLinksLine, statusClassLine } from './crawl-summary.ts';
import { type CrawlSummary, CrawlTally, type Ending, failureReason, refusalReason } from './crawl-tally.ts';
import { CrawlWarcFile } from './crawl-warc-file.ts';
import { DEFAULT_APPID, integerOption, positiveSeconds } from './options.ts';
import type { Output } from './output.ts';
import { ProgressLine } from './progress-line.ts';
import {
  ClusterSession,
  type Message,
  type MessageSource,
  noClusterHint,
  ReplyWaiter,
  requestUuid,
} from './reply-wait.ts';

/** What `crawl` is told on the command line. */
interface CrawlOptions {
  depth: number;
  allowedDomain?: string[];
  priority?: number;
  appid: string;
  crawlid?: string;
  spiderid: string;
  out?: string;
  warc?: string;
  timeout?: number;
  prefix?: string;
}

/** How often the cluster is asked what is pending: often enough for a live count, rare enough to cost nothing. */
const INFO_EVERY_MS = 2000;
/** Silence for this long after feeding means nothing is listening for requests on this prefix. */
const NO_ANSWER_HINT_MS = 10_000;
/** Work pending but no page for this long: no crawler is running (or the domain is throttled hard). */
const NO_PAGE_HINT_MS = 30_000;
/**
 * The `complete` notice and the last pages travel on different topics, so the notice can be read first;
 * the pages it counts are waited for this long.
 */
const LATE_PAGES_MS = 5000;
/**
 * How long after feeding a "frontier state lost" answer about a crawl never seen alive is taken for granted (until
 * then it may be a new crawl whose seed is not queued yet, asked about while an older loss is on record).
 */
const LOST_GRACE_MS = 15_000;
/** The exit code of a command ended by Ctrl-C, as shells report it. */
const EXIT_INTERRUPTED = 130;

/** `crawl-cluster crawl`. */
export function registerCrawl(program: Command, out: Output): void {
  program
    .command('crawl')
    .description(
      'feed one crawl to the running cluster and follow it: live progress, pages to a file, a summary when it completes',
    )
    .argument('<url>', 'the seed URL (a bare host gets http://)')
    .option('--depth <n>', 'follow links this many hops from the seed (0-3)', integerOption(), 0)
    .option(
      '--allowed-domain <domain>',
      'follow links only to this domain and its subdomains (repeat for more)',
      (v: string, list: string[] | undefined) => [...(list ?? []), v],
    )
    .option(
      '--priority <p>',
      "the seed's priority, 1-100; higher is crawled first; each link hop and each retry is 10 lower, so `info` shows children below 1 (default: 1)",
      integerOption(),
    )
    .option('--appid <appid>', 'the application the crawl belongs to (3-40 characters)', DEFAULT_APPID)
    .option('--crawlid <crawlid>', 'the crawl id (1-40 characters; default: a fresh one)')
    .option('--spiderid <spiderid>', 'the spider to crawl with', 'link')
    .option('--out <file>', 'write every page (success or failure) as one JSON line to this file')
    .option(
      '--warc <file>',
      'write every page as WARC 1.1 records (request, response, metadata; gzip per record) to this one file',
    )
    .option('--timeout <seconds>', 'give up following after this many seconds (default: no limit)', positiveSeconds)
    .option('--prefix <prefix>', 'topic prefix (default: KAFKA_TOPIC_PREFIX)')
    .addHelpText(
      'after',
      [
        '',
        'Needs the cluster running (crawl-cluster local, or a deployment) on the same topic prefix.',
        'Progress (pages done, failed, pending, pages/s) goes to stderr; the summary to stdout.',
        'Ctrl-C asks whether to stop the crawl in the cluster (when stdin is not a terminal it is stopped).',
        'Each failed page is shown as it comes with its reason (HTTP status, exception); the summary groups them by reason.',
        'Exit codes: 0 the crawl completed; 1 every page failed, --timeout, stopped by another client, refused by the cluster (e.g. the',
        "URL is already in the dupefilter of this finished crawl: use a new crawlid), the cluster lost the crawl's frontier state",
        '("frontier state lost": its Redis was replaced or emptied; feed it again), or Kafka unreachable',
        '(within about 15 s); 2 invalid input; 130 interrupted by Ctrl-C.',
        'With --json: one JSON document {"status","appid","crawlid","pages","failed","seconds","failures"?,...} on stdout',
        '(status "failed" when the crawl completed but every page failed).',
      ].join('\n'),
    )
    .action(async (url: string, opts: CrawlOptions) => {
      const request = crawlRequest(url, opts, out);
      const file = opts.out === undefined ? undefined : await openPagesFile(opts.out);
      const warc =
        opts.warc === undefined
          ? undefined
          : await CrawlWarcFile.open(opts.warc, config(), `${request.appid}/${request.crawlid}`).catch(
              async (error: unknown) => {
                await closePagesFile(file);
                throw error;
              },
            );
      const closeFiles = async () => {
        await closePagesFile(file);
        await warc?.close();
      };
      const session = await ClusterSession.open(config(), opts.prefix, [
        'incoming',
        'crawledFirehose',
        'outboundFirehose',
      ]).catch(async (error: unknown) => {
        await closeFiles();
        throw error;
      });
      let exitCode = 0;
      try {
        exitCode = await new CrawlWatch(session, request, opts, out, { pages: file, warc }).run();
      } finally {
        await session.close();
        await closeFiles();
      }
      // main() maps errors to 1 and 2 only; an interrupted command ends as shells expect.
      if (exitCode === EXIT_INTERRUPTED) process.exit(EXIT_INTERRUPTED);
    });
}

/** A crawl id that sorts by start time and is unique enough to never collide: `cli-<time>-<random>`. */
function newCrawlid(now = Date.now()): string {
  return `cli-${now.toString(36)}-${randomBytes(3).toString('hex')}`;
}

/**
 * Builds the crawl request and validates it as the kafka-monitor will; an invalid one is reported with
 * every reason and ends the command with exit code 2 before anything is sent.
 */
function crawlRequest(url: string, opts: CrawlOptions, out: Output): CrawlRequest & Message {
  const request: Message = {
    url,
    appid: opts.appid,
    crawlid: opts.crawlid ?? newCrawlid(),
    spiderid: opts.spiderid,
    maxdepth: opts.depth,
  };
  if (opts.priority !== undefined) request.priority = opts.priority;
  if (opts.allowedDomain !== undefined) request.allowed_domains = opts.allowedDomain;
  try {
    const checked = validateRequest(request);
    // The bare-host fix-up is applied here so the progress and summary show the URL that is crawled.
    if (checked.type === 'crawl') request.url = checked.request.url;
  } catch (error) {
    if (!(error instanceof SchemaValidationError)) throw error;
    if (out.json) out.data({ error: error.kind, details: error.details });
    else {
      for (const d of error.details) out.error(`${d.path ? `${d.path} ` : ''}${d.message} (${error.kind})`);
      out.error('invalid crawl request; nothing was sent');
    }
    throw new CommanderError(2, 'crawl-cluster.invalidRequest', 'invalid crawl request; nothing was sent');
  }
  return request as CrawlRequest & Message;
}

/**
 * One crawl followed from feeding to its end: the Kafka session, the timers, the signals and the pages file;
 * what it has seen is a {@link CrawlTally}.
 */
class CrawlWatch {
  private readonly session: ClusterSession;
  private readonly request: CrawlRequest & Message;
  private readonly opts: CrawlOptions;
  private readonly out: Output;
  private readonly file: WriteStream | undefined;
  private readonly warc: CrawlWarcFile | undefined;
  private readonly replies = new ReplyWaiter();
  private readonly infoUuids = new Set<string>();
  private readonly tally = new CrawlTally();
  private lastInfoAt = 0;
  private hinted = false;
  private infoErrorSaid = false;
  private end!: (ending: Ending) => void;
  private fail!: (error: Error) => void;
  private readonly ended: Promise<Ending>;
  private progress: ProgressLine | undefined;

  constructor(
    session: ClusterSession,
    request: CrawlRequest & Message,
    opts: CrawlOptions,
    out: Output,
    files: { pages?: WriteStream; warc?: CrawlWarcFile },
  ) {
    this.session = session;
    this.request = request;
    this.opts = opts;
    this.out = out;
    this.file = files.pages;
    this.warc = files.warc;
    let settled = false;
    this.ended = new Promise<Ending>((resolve, reject) => {
      this.end = (ending) => {
        if (settled) return;
        settled = true;
        resolve(ending);
      };
      this.fail = (error) => {
        if (settled) return;
        settled = true;
        reject(error);
      };
    });
    this.ended.catch(() => {});
  }

  /** @returns the exit code: 0 complete, 130 interrupted; other endings throw */
  async run(): Promise<number> {
    const { topics } = this.session;
    await this.session.listen(
      [topics.crawledFirehose, topics.outboundFirehose],
      (topic, message, source) =>
        topic === topics.crawledFirehose ? this.onPage(message, source) : this.onOutbound(message),
      (error) => this.fail(error),
    );
    await this.session.send(this.request);
    this.tally.started = Date.now();
    const { url, appid, crawlid, maxdepth } = this.request;
    this.out.progress(
      `crawling ${url} to depth ${maxdepth} (appid ${appid}, crawlid ${crawlid}, prefix ${this.session.prefix}); Ctrl-C to stop`,
    );
    this.progress = new ProgressLine(() => this.tally.statusLine());

    const timers = [setInterval(() => this.tick(), 500)];
    if (this.opts.timeout !== undefined) {
      timers.push(setTimeout(() => this.end({ kind: 'timeout' }), this.opts.timeout * 1000));
    }
    let signals = 0;
    const onSignal = () => {
      signals += 1;
      // A second Ctrl-C means whatever the first one started is stuck or unwanted: leave at once.
      if (signals > 1) process.exit(EXIT_INTERRUPTED);
      this.end({ kind: 'interrupted' });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    this.tick();
    try {
      const ending = await this.ended;
      for (const t of timers) clearTimeout(t);
      return await this.finish(ending);
    } finally {
      for (const t of timers) clearTimeout(t);
      this.progress.stop();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }

  /** Asks for the pending count now and then, and says so when the cluster seems absent. */
  private tick(): void {
    const now = Date.now();
    if (now - this.lastInfoAt >= INFO_EVERY_MS) {
      this.lastInfoAt = now;
      const uuid = requestUuid();
      this.infoUuids.add(uuid);
      const { appid, crawlid, spiderid } = this.request;
      this.session.send({ uuid, appid, crawlid, spiderid, action: 'info' }).catch((error: Error) => this.fail(error));
    }
    if (this.hinted) return;
    const { started, firstAnswerAt, lastPageAt, pending } = this.tally;
    const quiet = now - started;
    if (firstAnswerAt === undefined && quiet >= NO_ANSWER_HINT_MS) {
      this.hint(
        `no page and no reply from the cluster after ${NO_ANSWER_HINT_MS / 1000} s; ${noClusterHint(this.session.prefix)}`,
      );
    } else if (lastPageAt === undefined && quiet >= NO_PAGE_HINT_MS && firstAnswerAt !== undefined) {
      this.hint(
        pending === 0
          ? `the cluster has nothing pending for this crawl and no page came after ${NO_PAGE_HINT_MS / 1000} s; was the request rejected? see: crawl-cluster dump rejected`
          : `${pending ?? 'some'} requests pending but no page after ${NO_PAGE_HINT_MS / 1000} s; are crawler workers running (crawl-cluster local starts CRAWLER_WORKERS of them), or is the domain throttled?`,
      );
    }
  }

  private hint(message: string): void {
    this.hinted = true;
    this.progress?.note(message);
  }

  private onPage(page: Message, source: MessageSource): void {
    if (page.crawlid !== this.request.crawlid || page.appid !== this.request.appid) return;
    if (!this.tally.page(page)) return;
    // Each failure as it happens, with its reason (the summary groups them again).
    if (page.success === false) this.progress?.note(`failed ${String(page.url)}: ${failureReason(page)}`);
    this.file?.write(`${JSON.stringify(page)}\n`);
    this.warc?.add(page, source);
    if (this.tally.done()) this.end({ kind: 'complete', notice: this.tally.notice as Message });
  }

  private onOutbound(message: Message): void {
    if (typeof message.uuid === 'string' && this.infoUuids.delete(message.uuid)) {
      if (message.error === FRONTIER_STATE_LOST) this.onLost(message);
      else if (typeof message.error === 'string') this.onInfoError(message);
      else this.tally.info(message.total_pending, message);
      return;
    }
    if (this.replies.offer(message)) return;
    if (message.crawlid !== this.request.crawlid || message.appid !== this.request.appid) return;
    if (message.action === 'complete') {
      this.tally.complete(message);
      if (this.tally.done()) this.end({ kind: 'complete', notice: message });
      // The pages the notice counts should be read by now; if some never come, the notice still ends the crawl.
      setTimeout(() => this.end({ kind: 'complete', notice: message }), LATE_PAGES_MS).unref();
    } else if (message.action === 'stop') {
      this.end({ kind: 'stopped-elsewhere', reply: message });
    } else if (typeof message.error === 'string' && message.uuid === undefined) {
      // The kafka-monitor refused the crawl request (duplicate, stopped, capped, unknown_spider, ...): no page or
      // notice will follow. One with a uuid refused some client's action about this crawl, not the crawl.
      this.end({ kind: 'refused', rejection: message });
    }
  }

  /**
   * An error in reply to an info poll is no pending count. A kafka-monitor rejection of it (it has `source`) refuses
   * what the crawl request carries too (the same appid, crawlid and spiderid, e.g. `unknown_spider`): the crawl ends
   * refused, whichever of the two rejections comes first. Any other error is said once and the polls go on.
   */
  private onInfoError(reply: Message): void {
    if (reply.source !== undefined) {
      this.end({ kind: 'refused', rejection: reply });
    } else if (!this.infoErrorSaid) {
      this.infoErrorSaid = true;
      this.progress?.note(`the cluster answered the pending-count poll with an error: ${String(reply.error)}`);
    }
  }

  /**
   * `info` says the crawl is unknown and its partition lost its state: its queue is gone with the Redis that held it,
   * and its `complete` notice will never come. Believed once this crawl was seen alive (a page, or work pending),
   * else only after {@link LOST_GRACE_MS}: a crawl fed while an older loss is on record is unknown too until the
   * kafka-monitor has queued its seed.
   */
  private onLost(reply: Message): void {
    const { lastPageAt, pending, started } = this.tally;
    if (lastPageAt !== undefined || (pending ?? 0) > 0 || Date.now() - started >= LOST_GRACE_MS) {
      this.end({ kind: 'lost', reply });
    }
  }

  private async finish(ending: Ending): Promise<number> {
    this.progress?.stop();
    let stop: Message | undefined;
    if (ending.kind === 'interrupted') stop = await offerStop(this.session, this.replies, this.request, this.out);
    // The pages still being written go in before the summary names the file.
    await this.warc?.close();
    const summary = this.tally.summary(this.request, this.session.prefix, ending, {
      out: this.opts.out,
      warc: this.opts.warc,
      stop,
    });
    report(summary, this.out);
    switch (ending.kind) {
      case 'complete':
        if (summary.status === 'failed') {
          throw new CrawlClusterError(
            `every page of the crawl failed (${summary.failed}); the reasons are above${this.opts.out === undefined ? '' : ` and in ${this.opts.out}`}`,
          );
        }
        return 0;
      case 'interrupted':
        return EXIT_INTERRUPTED;
      case 'timeout':
        throw new CrawlClusterError(
          `the crawl did not complete within ${this.opts.timeout} s; it goes on in the cluster (stop it with: crawl-cluster stop --appid ${this.request.appid} --crawlid ${this.request.crawlid})`,
        );
      case 'stopped-elsewhere':
        throw new CrawlClusterError(
          `the crawl was stopped by another client (${ending.reply.total_purged} pending requests purged)`,
        );
      case 'refused':
        throw new CrawlClusterError(`the cluster refused the crawl request: ${refusalReason(ending.rejection)}`);
      case 'lost':
        throw new CrawlClusterError(
          `${FRONTIER_STATE_LOST}: the cluster no longer has this crawl's queue (${String(ending.reply.reason ?? 'no reason given')}); ${summary.pages + summary.failed} pages were delivered before; feed it again with a new crawlid`,
        );
    }
  }
}

/** The summary for a person (or, with --json, the document). */
function report(s: CrawlSummary, out: Output): void {
  if (out.json) {
    out.data(s);
    return;
  }
  const what = {
    complete: 'complete',
    failed: 'complete, but every page failed',
    timeout: 'not complete (timed out)',
    interrupted: 'interrupted',
    stopped: 'stopped',
    refused: 'not crawled (refused)',
    lost: 'not complete (frontier state lost)',
  }[s.status];
  out.info(
    `crawl ${s.crawlid} ${what}: ${s.pages} page${s.pages === 1 ? '' : 's'}, ${s.failed} failed in ${s.seconds.toFixed(1)} s (${s.pages_per_second.toFixed(1)} pages/s)`,
  );
  if (s.status !== 'complete' && s.pending !== undefined) out.info(`pending when last asked: ${s.pending}`);
  const byStatus = statusClassLine(s.status_classes);
  if (byStatus !== undefined) out.info(byStatus);
  const skipped = skippedLinksLine(s.links_skipped);
  if (skipped !== undefined) out.info(skipped);
  const n = s.notice;
  if (n !== undefined && (n.total_pages !== s.pages || n.total_failed !== s.failed)) {
    out.info(`the cluster counted ${n.total_pages} pages and ${n.total_failed} failed`);
  }
  if (s.failures !== undefined) {
    out.info('failed pages by reason:');
    for (const f of s.failures) out.info(`  ${f.count} × ${f.reason} (e.g. ${f.example})`);
  }
  if (s.out !== undefined) out.info(`pages written to ${s.out}`);
  if (s.warc !== undefined) out.info(`WARC written to ${s.warc}`);
}
