/**
 * What `crawl` knows about the crawl it follows: the pages seen (once each by URL: delivery is at least
 * once), the last pending count, the `complete` notice, and from these the progress line and the summary.
 * No I/O, so the rules of when a crawl is done are unit-testable.
 */
import type { Message } from './reply-wait.ts';

/** How a watched crawl ended. */
export type Ending =
  | { kind: 'complete'; notice: Message }
  | { kind: 'timeout' }
  | { kind: 'interrupted' }
  | { kind: 'stopped-elsewhere'; reply: Message }
  /** The cluster refused the crawl request (a rejection naming the crawl, e.g. `duplicate`): nothing will come. */
  | { kind: 'refused'; rejection: Message };

/** The result document (`--json`) and the basis of the human summary. */
export interface CrawlSummary {
  status: 'complete' | 'timeout' | 'interrupted' | 'stopped' | 'refused';
  appid: string;
  crawlid: string;
  url: string;
  prefix: string;
  pages: number;
  failed: number;
  /** The last pending count the cluster reported, when any. */
  pending?: number;
  seconds: number;
  pages_per_second: number;
  out?: string;
  /** The `complete` notice, as it came. */
  notice?: Message;
  /** The reply to the stop sent on Ctrl-C, as it came. */
  stop?: Message;
  /** The rejection that refused the crawl request, as it came. */
  rejection?: Message;
}

export class CrawlTally {
  readonly succeeded = new Set<string>();
  readonly failed = new Set<string>();
  /** The last pending count the cluster reported. */
  pending: number | undefined;
  /** The crawl's `complete` notice, once read. */
  notice: Message | undefined;
  started: number;
  firstAnswerAt: number | undefined;
  lastPageAt: number | undefined;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
    this.started = now();
  }

  /** Counts a page of the crawl; false when its URL was seen already (a redelivery). */
  page(page: Message): boolean {
    const url = String(page.url);
    if (this.succeeded.has(url) || this.failed.has(url)) return false;
    (page.success === false ? this.failed : this.succeeded).add(url);
    this.lastPageAt = this.#now();
    this.firstAnswerAt ??= this.lastPageAt;
    return true;
  }

  /** An info reply: the cluster answered, with this many pending. */
  info(totalPending: unknown): void {
    this.firstAnswerAt ??= this.#now();
    if (typeof totalPending === 'number') this.pending = totalPending;
  }

  /** The `complete` notice arrived. */
  complete(notice: Message): void {
    this.notice = notice;
    this.pending = 0;
  }

  /** The notice has come and every page it counts has been read. */
  done(): boolean {
    const n = this.notice;
    if (n === undefined) return false;
    return this.succeeded.size >= Number(n.total_pages ?? 0) && this.failed.size >= Number(n.total_failed ?? 0);
  }

  elapsedSeconds(): number {
    return (this.#now() - this.started) / 1000;
  }

  rate(): number {
    return (this.succeeded.size + this.failed.size) / Math.max(this.elapsedSeconds(), 0.001);
  }

  statusLine(): string {
    const pending = this.pending === undefined ? '?' : String(this.pending);
    return `pages ${this.succeeded.size}, failed ${this.failed.size}, pending ${pending}, ${this.rate().toFixed(1)} pages/s, ${this.elapsedSeconds().toFixed(0)} s`;
  }

  summary(
    request: { appid: string; crawlid: string; url: string },
    prefix: string,
    ending: Ending,
    extra: { out?: string; stop?: Message } = {},
  ): CrawlSummary {
    const summary: CrawlSummary = {
      status: ending.kind === 'stopped-elsewhere' ? 'stopped' : ending.kind,
      appid: request.appid,
      crawlid: request.crawlid,
      url: request.url,
      prefix,
      pages: this.succeeded.size,
      failed: this.failed.size,
      seconds: Math.round(this.elapsedSeconds() * 1000) / 1000,
      pages_per_second: Math.round(this.rate() * 100) / 100,
    };
    if (this.pending !== undefined) summary.pending = this.pending;
    if (extra.out !== undefined) summary.out = extra.out;
    if (ending.kind === 'complete') summary.notice = ending.notice;
    if (ending.kind === 'refused') summary.rejection = ending.rejection;
    if (extra.stop !== undefined) summary.stop = extra.stop;
    return summary;
  }
}
