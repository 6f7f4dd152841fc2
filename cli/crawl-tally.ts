/**
 * What `crawl` knows about the crawl it follows: the pages seen (once each by URL: delivery is at least
 * once), the last pending count, the `complete` notice, and from these the progress line and the summary.
 * No I/O, so the rules of when a crawl is done are unit-testable.
 */
import {
  countSkippedLinks,
  countStatusClass,
  type SkippedLinkCounts,
  type StatusClassCounts,
} from './crawl-summary.ts';
import type { Message } from './reply-wait.ts';

/** How a watched crawl ended. */
export type Ending =
  | { kind: 'complete'; notice: Message }
  | { kind: 'timeout' }
  | { kind: 'interrupted' }
  | { kind: 'stopped-elsewhere'; reply: Message }
  /** The cluster refused the crawl request (a rejection naming the crawl, e.g. `duplicate`): nothing will come. */
  | { kind: 'refused'; rejection: Message }
  /** `info` answered "frontier state lost": the cluster lost the crawl's queue (docs/design.md §12); nothing will come. */
  | { kind: 'lost'; reply: Message };

/** Why a page failed, for a person: its HTTP status (when it had a response) and its `exception`. */
export function failureReason(page: Message): string {
  const status = typeof page.status_code === 'number' ? `HTTP ${page.status_code}` : undefined;
  const msg = typeof page.status_msg === 'string' && page.status_msg !== '' ? ` ${page.status_msg}` : '';
  const exception = typeof page.exception === 'string' && page.exception !== '' ? page.exception : undefined;
  // The crawler's exception for an HTTP error already names the status (`HTTP 500 Internal Server Error`): once is enough.
  if (status !== undefined && exception !== undefined) {
    return exception.startsWith(status) ? exception : `${status}${msg}: ${exception}`;
  }
  return exception ?? (status === undefined ? 'no reason given' : `${status}${msg}`);
}

/** Failed pages that share a reason: how many, and the first URL that failed so. */
export interface FailureGroup {
  reason: string;
  count: number;
  example: string;
}

/** Most distinct failure reasons kept (a crawl of many failures has few reasons; the rest are counted as `other`). */
const MAX_REASONS = 20;

/** The result document (`--json`) and the basis of the human summary. */
export interface CrawlSummary {
  /** `failed`: the crawl completed, but every one of its pages failed (the command exits 1). */
  status: 'complete' | 'failed' | 'timeout' | 'interrupted' | 'stopped' | 'refused' | 'lost';
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
  /** The WARC file of `--warc`. */
  warc?: string;
  /** The `complete` notice, as it came. */
  notice?: Message;
  /** The reply to the stop sent on Ctrl-C, as it came. */
  stop?: Message;
  /** The rejection that refused the crawl request, as it came. */
  rejection?: Message;
  /** Why the cluster says the crawl's frontier state was lost (status `lost`). */
  lost_reason?: string;
  /** The failed pages grouped by reason, most frequent first (at most 20 reasons; absent when none failed). */
  failures?: FailureGroup[];
  /** Pages by HTTP status class (`2xx`, `4xx`, ...) and `failed` (no HTTP status); classes without a page absent. */
  status_classes: StatusClassCounts;
  /** Links of the pages the crawl's rules kept from being followed, by rule (`deny_extensions`...); empty when none. */
  links_skipped: SkippedLinkCounts;
}

export class CrawlTally {
  readonly succeeded = new Set<string>();
  readonly failed = new Set<string>();
  /** Failed pages by reason, in order of first sight. */
  readonly reasons = new Map<string, FailureGroup>();
  /** Pages by outcome class (cli/crawl-summary.ts). */
  readonly statusClasses: StatusClassCounts = {};
  /** Links not followed, by rule, summed over the pages (cli/crawl-summary.ts). */
  readonly skippedLinks: SkippedLinkCounts = {};
  /** The last pending count the cluster reported. */
  pending: number | undefined;
  /** The crawl's `complete` notice, once read. */
  notice: Message | undefined;
  started: number;
  firstAnswerAt: number | undefined;
  lastPageAt: number | undefined;
  /** Why pending pages wait, as the last info reply said (empty when nothing waits). */
  waits = '';
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
    countStatusClass(this.statusClasses, page);
    countSkippedLinks(this.skippedLinks, page);
    if (page.success === false) {
      const reason = failureReason(page);
      const key = this.reasons.has(reason) || this.reasons.size < MAX_REASONS ? reason : 'other reasons';
      const group = this.reasons.get(key) ?? { reason: key, count: 0, example: url };
      group.count += 1;
      this.reasons.set(key, group);
    }
    this.lastPageAt = this.#now();
    this.firstAnswerAt ??= this.lastPageAt;
    return true;
  }

  /** An info reply: the cluster answered, with this many pending, and why they wait (`throttled`, `retrying`). */
  info(totalPending: unknown, reply: Message = {}): void {
    this.firstAnswerAt ??= this.#now();
    if (typeof totalPending === 'number') this.pending = totalPending;
    this.waits = waitsOf(reply);
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
    const waits = this.pending === 0 || this.waits === '' ? '' : `; ${this.waits}`;
    return `pages ${this.succeeded.size}, failed ${this.failed.size}, pending ${pending}, ${this.rate().toFixed(1)} pages/s, ${this.elapsedSeconds().toFixed(0)} s${waits}`;
  }

  summary(
    request: { appid: string; crawlid: string; url: string },
    prefix: string,
    ending: Ending,
    extra: { out?: string; warc?: string; stop?: Message } = {},
  ): CrawlSummary {
    const allFailed = ending.kind === 'complete' && this.succeeded.size === 0 && this.failed.size > 0;
    const summary: CrawlSummary = {
      status: ending.kind === 'stopped-elsewhere' ? 'stopped' : allFailed ? 'failed' : ending.kind,
      appid: request.appid,
      crawlid: request.crawlid,
      url: request.url,
      prefix,
      pages: this.succeeded.size,
      failed: this.failed.size,
      seconds: Math.round(this.elapsedSeconds() * 1000) / 1000,
      pages_per_second: Math.round(this.rate() * 100) / 100,
      status_classes: { ...this.statusClasses },
      links_skipped: { ...this.skippedLinks },
    };
    if (this.pending !== undefined) summary.pending = this.pending;
    if (extra.out !== undefined) summary.out = extra.out;
    if (extra.warc !== undefined) summary.warc = extra.warc;
    if (ending.kind === 'complete') summary.notice = ending.notice;
    if (ending.kind === 'refused') summary.rejection = ending.rejection;
    if (ending.kind === 'lost') summary.lost_reason = String(ending.reply.reason ?? ending.reply.error);
    if (extra.stop !== undefined) summary.stop = extra.stop;
    if (this.reasons.size > 0)
      summary.failures = [...this.reasons.values()].map((g) => ({ ...g })).sort((a, b) => b.count - a.count);
    return summary;
  }
}

/** What a rejection says, for a person: its kind and its first detail's message. */
export function refusalReason(rejection: Message): string {
  const details = Array.isArray(rejection.details) ? (rejection.details as { message?: unknown }[]) : [];
  const first = typeof details[0]?.message === 'string' ? details[0].message : undefined;
  return first === undefined ? String(rejection.error) : `${String(rejection.error)}: ${first}`;
}

/**
 * Why pending pages wait, for a person, from an info reply's `throttled` and `retrying` (docs/contract.md): e.g.
 * `waiting on the domain throttle (1 domain, next in 5.2 s); 1 page waits for a retry (attempt 3, next in 8 s)`.
 */
function waitsOf(reply: Message): string {
  const parts: string[] = [];
  const t = reply.throttled as { domains?: unknown; next_in_s?: unknown } | undefined;
  if (t && typeof t.domains === 'number' && t.domains > 0) {
    parts.push(
      `waiting on the domain throttle (${t.domains} domain${t.domains === 1 ? '' : 's'}, next in ${String(t.next_in_s)} s)`,
    );
  }
  const r = reply.retrying as { requests?: unknown; attempt?: unknown; next_in_s?: unknown } | undefined;
  if (r && typeof r.requests === 'number' && r.requests > 0) {
    parts.push(
      `${r.requests} page${r.requests === 1 ? '' : 's'} wait${r.requests === 1 ? 's' : ''} for a retry (attempt ${String(r.attempt)}, next in ${String(r.next_in_s)} s)`,
    );
  }
  return parts.join('; ');
}
