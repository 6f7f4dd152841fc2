/**
 * The crawl loop (DESIGN.md §5): N concurrent workers per process lease requests from the frontier, fetch,
 * extract and filter links, enqueue children, publish the page, and only then ack. Retryable failures go
 * back with a growing delay; after the last retry, and for failures that retrying cannot fix, a
 * `success:false` page is published (nothing an application asked for disappears without a trace).
 *
 * Waiting: when nothing is due, a worker sleeps until the frontier says the next domain is due (capped,
 * so new work is noticed within a second) — no busy polling.
 *
 * Shutdown: `stop()` stops leasing, lets in-flight work finish until the deadline, then aborts what is
 * left and releases those leases back to the queue, so nothing is lost.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MessageSink, OutMessage } from '../kafka/sink.ts';
import { clusterTopics, crawledAppTopic } from '../kafka/topics.ts';
import type { MonitorLog } from '../monitor/context.ts';
import type { StatsStore } from '../monitor/stores.ts';
import type { CrawlRef, Frontier, Lease, QueueRequest } from '../redis/frontier.ts';
import type { StatsIncrement } from '../redis/stats.ts';
import type { BodyStore } from './body-store.ts';
import { extractLinks } from './extract.ts';
import { linkFilter } from './filters.ts';
import { buildPage, failedPage } from './page.ts';
import type { RobotsCache } from './robots.ts';
import {
  FetchError,
  type Fetcher,
  type FetchResult,
  type FollowRequest,
  type Link,
  type PageItem,
  type Spider,
  type SpiderRequest,
} from './types.ts';
import { registrableDomain, requestFingerprint } from './url.ts';

/** HTTP statuses that are retried (CONTRACT.md behaviour 6). */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504, 522, 524]);

export type CrawlerFrontier = Pick<Frontier, 'lease' | 'ack' | 'retry' | 'release' | 'enqueue'>;

export interface CrawlerOptions {
  frontier: CrawlerFrontier;
  fetcher: Fetcher;
  /** Undefined when robots.txt is not obeyed. */
  robots?: Pick<RobotsCache, 'check'>;
  sink: MessageSink;
  stats: StatsStore;
  spiders: ReadonlyMap<string, Spider>;
  /** Spider types to lease for, in turn. */
  spiderTypes: string[];
  topicPrefix: string;
  /** @default false */
  appidTopics?: boolean;
  /** Page bodies base64 (`KAFKA_BASE_64_ENCODE`). @default false */
  base64?: boolean;
  /** Largest page message; bigger bodies go to `bodyStore`. @default 1000000 */
  maxMessageBytes?: number;
  bodyStore?: BodyStore;
  /** @default 16 */
  concurrency?: number;
  /** @default 3 */
  retryTimes?: number;
  /** @default 2000 */
  retryBaseDelayMs?: number;
  /** Default User-Agent. */
  userAgent: string;
  /** Egress IP for IP-scoped throttles. */
  ip?: string;
  /** host:pid, for heartbeats and machine stats. */
  nodeId: string;
  host: string;
  log: MonitorLog;
  /** @default Date.now */
  now?: () => number;
  /** Longest idle sleep before looking again (ms). @default 1000 */
  idlePollMs?: number;
  /**
   * How often one worker per process (the scout) looks for new work while idle (ms); when it leases
   * something it wakes the others. Bounds the pickup latency of new work at one lease call per this
   * interval per idle process. @default 50
   */
  scoutPollMs?: number;
}

interface InFlight {
  lease: Lease;
  abort: AbortController;
  /** Past the fetch (publishing, acking): left to finish at the shutdown deadline rather than released. */
  fetched: boolean;
}

export class Crawler {
  readonly #o: Required<Omit<CrawlerOptions, 'robots' | 'bodyStore' | 'ip'>> &
    Pick<CrawlerOptions, 'robots' | 'bodyStore' | 'ip'>;
  readonly #inFlight = new Set<InFlight>();
  #stopping = false;
  /** Aborted by {@link stop}: wakes idle workers at once. */
  #workers: Promise<void>[] = [];
  #turn = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  /** Pages published since start (for progress and tests). */
  pages = 0;

  constructor(options: CrawlerOptions) {
    this.#o = {
      appidTopics: false,
      base64: false,
      maxMessageBytes: 1_000_000,
      concurrency: 16,
      retryTimes: 3,
      retryBaseDelayMs: 2000,
      now: Date.now,
      idlePollMs: 1000,
      scoutPollMs: 50,
      ...options,
    };
  }

  /** Starts the workers (returns at once). */
  start(): void {
    const beat = () =>
      void Promise.all(
        this.#o.spiderTypes.map((s) => this.#o.stats.beat('crawler', `${s}|${this.#o.nodeId}`, this.#o.now(), 300_000)),
      ).catch((e: Error) => this.#o.log.warn('heartbeat failed', { error: e.message }));
    beat();
    this.#heartbeat = setInterval(beat, 10_000);
    this.#heartbeat.unref();
    for (let i = 0; i < this.#o.concurrency; i++) this.#workers.push(this.#work(i === 0));
  }

  /**
   * Stops leasing; in-flight requests may finish until `deadlineMs`, then those still being fetched are
   * aborted and released (those already fetched are published and acked). Resolves when every worker has ended.
   */
  async stop(deadlineMs = 25_000): Promise<{ released: number }> {
    this.#stopping = true;
    this.#wakeAll();
    clearInterval(this.#heartbeat);
    const all = Promise.all(this.#workers);
    const deadline = new AbortController();
    const timedOut = await Promise.race([
      all.then(() => false),
      sleep(deadlineMs, true, { signal: deadline.signal }).catch(() => false),
    ]);
    deadline.abort();
    let released = 0;
    if (timedOut) {
      // Requests still being fetched go back to the queue; those already fetched are being published and
      // acked, which is quick, and releasing them would have another crawler fetch them a second time.
      const left = [...this.#inFlight].filter((f) => !f.fetched);
      for (const f of left) f.abort.abort();
      released = await this.#o.frontier.release(left.map((f) => f.lease)).catch(() => 0);
      await all;
    }
    return { released };
  }

  /** Idle workers' wake-up functions. */
  readonly #idle = new Set<() => void>();

  /** Wakes every idle worker: work has appeared, or stop() was called. */
  #wakeAll(): void {
    for (const wake of [...this.#idle]) wake();
  }

  /** Sleeps up to `ms`, or until {@link #wakeAll}. */
  #nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#idle.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#idle.add(wake);
    });
  }

  async #work(scout: boolean): Promise<void> {
    const idleMs = scout ? Math.min(this.#o.scoutPollMs, this.#o.idlePollMs) : this.#o.idlePollMs;
    while (!this.#stopping) {
      let waitMs = idleMs;
      try {
        const r = await this.#lease();
        if (r.lease && this.#stopping) {
          // Leased while stop() began: not started, so it goes straight back.
          await this.#o.frontier.release([r.lease]).catch(() => undefined);
          break;
        }
        if (r.lease) {
          this.#wakeAll();
          await this.#handle(r.lease);
          continue;
        }
        if (r.nextDueMs !== null) waitMs = Math.max(5, Math.min(idleMs, r.nextDueMs - this.#o.now()));
      } catch (error) {
        this.#o.log.error('crawl loop error; backing off', { error: (error as Error).message });
        waitMs = this.#o.idlePollMs;
      }
      if (!this.#stopping) await this.#nap(waitMs);
    }
  }

  /**
   * Leases from the spider types in turn, starting at a rotating one, until one has a request due. Only
   * when none has does the worker sleep, until the earliest `nextDueMs` of them all (null: none has work).
   */
  async #lease(): Promise<{ lease?: Lease; nextDueMs: number | null }> {
    const types = this.#o.spiderTypes;
    const first = this.#turn++;
    let nextDueMs: number | null = null;
    for (let i = 0; i < types.length; i++) {
      const spider = types[(first + i) % types.length] as string;
      const r = await this.#o.frontier.lease(spider, { ip: this.#o.ip, now: this.#o.now() });
      if (r.leased) return { lease: r.lease, nextDueMs: null };
      if (r.nextDueMs !== null) nextDueMs = nextDueMs === null ? r.nextDueMs : Math.min(nextDueMs, r.nextDueMs);
    }
    return { nextDueMs };
  }

  async #handle(lease: Lease): Promise<void> {
    const flight: InFlight = { lease, abort: new AbortController(), fetched: false };
    this.#inFlight.add(flight);
    try {
      await this.#crawl(lease, flight);
    } catch (error) {
      if (flight.abort.signal.aborted) return; // released by stop()
      // Kafka or Redis failed mid-way: give the request back; it will be crawled again.
      this.#o.log.error('request failed on infrastructure; releasing it', {
        url: lease.url,
        error: (error as Error).message,
      });
      await this.#o.frontier.release([lease]).catch(() => undefined);
    } finally {
      this.#inFlight.delete(flight);
    }
  }

  #request(lease: Lease): SpiderRequest {
    return { url: lease.url, depth: lease.depth, priority: lease.priority, retries: lease.retries, crawl: lease.crawl };
  }

  async #crawl(lease: Lease, flight: InFlight): Promise<void> {
    const o = this.#o;
    const signal = flight.abort.signal;
    const req = this.#request(lease);
    const ua = lease.crawl.useragent ?? o.userAgent;
    if (o.robots) {
      // The robots.txt lookup is shared by every request to the origin, so it is not aborted, only not
      // waited for: a shutdown deadline must not wait on a slow robots.txt.
      const verdict = await abortable(o.robots.check(lease.url, ua), signal);
      if (!verdict.allowed) {
        flight.fetched = true;
        await this.#finish(lease, failedPage(req, 'robots.txt disallows this URL', undefined, o.base64), 'robots');
        return;
      }
    }
    let response: FetchResult;
    try {
      response = await o.fetcher.fetch(
        { url: lease.url, userAgent: ua, headers: lease.crawl.headers, cookie: lease.crawl.cookie },
        signal,
      );
    } catch (error) {
      if (signal.aborted) throw error;
      if (!(error instanceof FetchError)) throw error;
      flight.fetched = true;
      await this.#failed(lease, req, `${error.kind}: ${error.message}`, error.retryable, undefined, 0);
      return;
    }
    flight.fetched = true;
    if (RETRY_STATUSES.has(response.status)) {
      const retryAfter = retryAfterMs(response.headers['retry-after']?.[0], o.now());
      await this.#failed(lease, req, `HTTP ${response.status} ${response.statusText}`, true, response, retryAfter);
      return;
    }
    const links = response.text && isHtml(response) ? extractLinks(response.text, response.url) : [];
    await this.#enqueueChildren(lease, req, response, links);
    const page = buildPage({ ...req, spiderid: lease.crawl.spiderid }, response, links, {
      base64: o.base64,
      success: true,
      retryTimes: lease.retries,
    });
    await this.#finish(lease, page, String(response.status));
  }

  async #enqueueChildren(lease: Lease, req: SpiderRequest, response: FetchResult, links: Link[]): Promise<void> {
    const crawl = lease.crawl;
    if (lease.depth >= (crawl.maxdepth ?? 0) || links.length === 0) return;
    const spider = this.#o.spiders.get(crawl.spiderid);
    if (!spider) return;
    const allowed = linkFilter(crawl);
    const follow: FollowRequest[] = spider.follow(
      req,
      response,
      links.filter((l) => allowed(l.url)),
    );
    const bySpider = new Map<string, { crawl: CrawlRef; request: QueueRequest }[]>();
    for (const f of follow) {
      let domain: string;
      let fingerprint: Buffer;
      try {
        domain = registrableDomain(f.url);
        fingerprint = requestFingerprint(f.url);
      } catch {
        continue;
      }
      const type = f.spider ?? crawl.spiderid;
      const list = bySpider.get(type) ?? [];
      list.push({
        crawl: { appid: crawl.appid, crawlid: crawl.crawlid },
        request: { url: f.url, domain, fingerprint, priority: lease.priority - 10, depth: lease.depth + 1 },
      });
      bySpider.set(type, list);
    }
    for (const [type, items] of bySpider) await this.#o.frontier.enqueue(type, items, this.#o.now());
  }

  async #failed(
    lease: Lease,
    req: SpiderRequest,
    reason: string,
    retryable: boolean,
    response: FetchResult | undefined,
    retryAfter: number,
  ): Promise<void> {
    const o = this.#o;
    if (retryable && lease.retries < o.retryTimes) {
      const delay = Math.max(retryAfter, o.retryBaseDelayMs * 2 ** lease.retries);
      await o.frontier.retry(lease, delay, o.now());
      await this.#count(lease, response ? String(response.status) : 'retry');
      return;
    }
    const page = failedPage(req, reason, response, o.base64);
    await this.#finish(lease, page, response ? String(response.status) : 'error', 'fail');
  }

  /** Publishes the page, then acks (a page is never acked before it is stored in Kafka). */
  async #finish(
    lease: Lease,
    page: PageItem,
    status: string,
    outcome: 'done' | 'fail' = page.success ? 'done' : 'fail',
  ) {
    const o = this.#o;
    const message = await this.#message(lease, page);
    const batch = [{ topic: clusterTopics(o.topicPrefix).crawledFirehose, messages: [message] }];
    if (o.appidTopics && /^[A-Za-z0-9._-]{1,200}$/.test(page.appid)) {
      batch.push({ topic: crawledAppTopic(o.topicPrefix, page.appid), messages: [message] });
    }
    await o.sink.send(batch);
    this.pages++;
    const ack = await o.frontier.ack(lease, outcome, o.now());
    if (ack.complete) {
      await o.sink.send([
        {
          topic: clusterTopics(o.topicPrefix).outboundFirehose,
          messages: [
            {
              key: page.appid,
              value: JSON.stringify({
                action: 'complete',
                appid: page.appid,
                crawlid: page.crawlid,
                spiderid: page.spiderid,
                total_pages: ack.done,
                total_failed: ack.failed,
                server_time: Math.floor(o.now() / 1000),
              }),
            },
          ],
        },
      ]);
    }
    await this.#count(lease, status);
  }

  async #message(lease: Lease, page: PageItem): Promise<OutMessage> {
    const o = this.#o;
    let value = JSON.stringify(page);
    if (Buffer.byteLength(value) > o.maxMessageBytes && o.bodyStore) {
      // The stored body is the response's bytes when the message carries them base64 (binary responses always).
      const full = Buffer.from(page.body, o.base64 || page.encoding === 'base64' ? 'base64' : 'utf8');
      // Lease handles are opaque (binary); a hash of one names the body uniquely and safely.
      const key = `${encodeURIComponent(page.appid)}/${encodeURIComponent(page.crawlid)}/${createHash('sha1').update(lease.handle).digest('hex')}`;
      page.body_ref = await o.bodyStore.put(key, full);
      page.body_truncated = true;
      const room = Math.max(0, o.maxMessageBytes - (Buffer.byteLength(value) - Buffer.byteLength(page.body)) - 1024);
      page.body = page.body.slice(0, Math.floor(room / 4));
      value = JSON.stringify(page);
      // JSON escapes can take up to 6 bytes per character: cut further until the message fits.
      while (Buffer.byteLength(value) > o.maxMessageBytes && page.body.length > 0) {
        page.body = page.body.slice(0, Math.floor(page.body.length / 2));
        value = JSON.stringify(page);
      }
    }
    return { key: page.appid, value };
  }

  async #count(lease: Lease, status: string): Promise<void> {
    const incs: StatsIncrement[] = [
      { name: `crawler:${lease.crawl.spiderid}:${status}` },
      { name: `machine:${this.#o.host}:${status}` },
    ];
    await this.#o.stats.increment(incs, this.#o.now()).catch(() => undefined);
  }
}

/** `promise`, or the abort reason as soon as `signal` aborts (the work itself goes on). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function isHtml(r: FetchResult): boolean {
  const type = r.headers['content-type']?.[0] ?? '';
  return type === '' || /html|xml/i.test(type);
}

/** Retry-After as ms from now (seconds or an HTTP date); 0 when absent or unparsable. */
export function retryAfterMs(value: string | undefined, now: number): number {
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.min(seconds, 3600) * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.min(at - now, 3_600_000)) : 0;
}
