/**
 * What one fetch slot of the crawler does with a leased request (docs/design.md §5): robots.txt (and telling the
 * frontier the site's Crawl-delay), the politeness restamp of a fetch that starts late, the fetch, and the page's
 * processing: link extraction, its spider (on this event loop under a time budget, or a plugin in the spider sandbox),
 * the page item and its children. The outcome is a processed page, a failure for the failure decision (failure.ts),
 * or `requeued` (the domain's turn was too far off). Delivery is lib/crawl/crawler/delivery.ts's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Lease } from '../../frontier-model.ts';
import type { CrawlerFrontier, Log } from '../../ports.ts';
import { followable, type SkippedLinks } from '../extract/filters.ts';
import { extractPageLinks, type PageLinks } from '../extract/links.ts';
import { type CrawlFailure, RETRY_STATUSES } from '../failure.ts';
import type { RobotsCache, RobotsDecision } from '../fetch/robots.ts';
import { buildPage, putSkipped } from '../page.ts';
import { followOf, putData, runSpider } from '../spiders/run.ts';
import { type SandboxResult, withBudget } from '../spiders/sandbox.ts';
import {
  FetchError,
  type Fetcher,
  type FetchResult,
  type FollowRequest,
  type Link,
  type Spider,
  type SpiderRequest,
} from '../types.ts';
import { type ChildBatch, childRequests, type DroppedFollow } from './children.ts';
import type { Processed } from './delivery.ts';

/**
 * A fetch that starts more than this after its lease (robots.txt read first, a busy event loop) first moves its
 * throttle hit to then (frontier `restamp`, one script call). Below it, the throttle's margin (THROTTLE_MARGIN_MS,
 * 100 ms) absorbs the lateness.
 */
export const RESTAMP_AFTER_MS = 50;

/** The longest a fetch waits for its domain's next turn after a restamp; past it the request goes back to its queue. */
export const MAX_RESTAMP_WAIT_MS = 10_000;

/** The longest robots.txt Crawl-delay obeyed (a site asking for more gets this): one page a minute. */
export const MAX_CRAWL_DELAY_MS = 60_000;

/** Domains whose Crawl-delay a crawler process remembers having told the frontier. */
const CRAWL_DELAY_MEMORY = 10_000;

/** Where plugin spiders' code runs (lib/crawl/spiders/sandbox.ts): the spider types it serves and how to run a page. */
export interface SpiderSandboxPort {
  spiders: ReadonlySet<string>;
  run(spider: string, request: SpiderRequest, response: FetchResult, links: Link[]): Promise<SandboxResult>;
}

export interface PageFetchOptions {
  frontier: Pick<CrawlerFrontier, 'restamp' | 'setCrawlDelay' | 'throttleScope'>;
  fetcher: Fetcher;
  /** Undefined when robots.txt is not obeyed. `checkNow`, where given, is asked first (no promise per page). */
  robots?: Pick<RobotsCache, 'check'> & Partial<Pick<RobotsCache, 'checkNow'>>;
  spiders: ReadonlyMap<string, Spider>;
  sandbox?: SpiderSandboxPort;
  parseTimeoutMs: number;
  /** Distinct links read from one HTML page (`CRAWLER_MAX_LINKS`; extract.ts). */
  maxLinks: number;
  base64: boolean;
  userAgent: string;
  ip?: string;
  now: () => number;
  log: Log;
}

export class PageFetch {
  readonly #o: PageFetchOptions;
  /** Crawl-delay last told to the frontier, per throttle scope and domain (insertion order: oldest first). */
  readonly #toldCrawlDelay = new Map<string, number>();
  /** Fetches that started late enough to move their throttle hit (frontier `restamp`) since start. */
  restamps = 0;

  constructor(options: PageFetchOptions) {
    this.#o = options;
  }

  /**
   * Robots, restamp, fetch and processing of one leased request; `leasedAt` is when this process got the lease (how
   * late the fetch starts is measured from it), `signal` aborts the fetch at shutdown.
   */
  async process(
    lease: Lease,
    req: SpiderRequest,
    leasedAt: number,
    signal: AbortSignal,
  ): Promise<Processed | CrawlFailure | 'requeued'> {
    const o = this.#o;
    const ua = lease.crawl.useragent ?? o.userAgent;
    // The crawl's proxy group (docs/proxies.md), checked by the kafka-monitor; undefined: CRAWLER_PROXIES.
    const group = lease.crawl.attrs?.proxy;
    const proxy = group === undefined ? undefined : String(group);
    if (o.robots) {
      // The robots.txt lookup is shared by every request to the origin, so it is not aborted, only not
      // waited for: a shutdown deadline must not wait on a slow robots.txt.
      let verdict: RobotsDecision;
      try {
        verdict = o.robots.checkNow?.(req.url, ua) ?? (await abortable(o.robots.check(req.url, ua, proxy), signal));
      } catch (error) {
        // robots.txt could not be fetched through the proxies (or the crawl's group is not this crawler's): the page
        // fails as its fetch would.
        if (!signal.aborted && error instanceof FetchError) return { kind: 'fetch', error };
        throw error;
      }
      if (!verdict.allowed) return { kind: 'robots', reason: verdict.reason ?? 'robots.txt disallows this URL' };
      const told = this.#crawlDelay(lease, verdict.crawlDelayMs);
      if (told !== undefined) await told;
    }
    // Most fetches start on time: no call, no await.
    if (lease.hitMs !== undefined && o.now() - leasedAt > RESTAMP_AFTER_MS) {
      if (!(await this.#onTurn(lease, signal))) return 'requeued';
    }
    let response: FetchResult;
    try {
      response = await o.fetcher.fetch(
        {
          url: req.url,
          userAgent: ua,
          headers: lease.crawl.headers,
          cookie: lease.crawl.cookie,
          crawl: `${lease.crawl.appid}/${lease.crawl.crawlid}`,
          proxy,
          // The body counts in the process's body budget until the page is done with it (the crawler releases it).
          holdBody: true,
        },
        signal,
      );
    } catch (error) {
      if (!signal.aborted && error instanceof FetchError) return { kind: 'fetch', error };
      throw error;
    }
    try {
      return await this.#processResponse(lease, req, response);
    } catch (error) {
      response.release?.();
      throw error;
    }
  }

  /** {@link process} once the response is here: a status to retry, or the page with its links, data and children. */
  async #processResponse(lease: Lease, req: SpiderRequest, response: FetchResult): Promise<Processed | CrawlFailure> {
    const o = this.#o;
    if (RETRY_STATUSES.has(response.status)) {
      return { kind: 'status', response, retryAfterMs: retryAfterMs(response.headers['retry-after']?.[0], o.now()) };
    }
    const spiderid = req.spider ?? lease.crawl.spiderid;
    const spider = o.spiders.get(spiderid);
    if (o.sandbox?.spiders.has(spiderid)) return this.#processSandboxed(lease, req, response, spiderid, spider);
    // A page whose links its spider does not use (the link spider's at maxdepth) is not parsed at all.
    const extracted: PageLinks =
      response.text && isHtml(response) && wantsLinks(spider, req)
        ? extractPageLinks(response.text, response.url, { maxLinks: o.maxLinks })
        : { links: [] };
    this.#logCut(req, spiderid, extracted);
    const page = buildPage({ ...req, spiderid }, response, extracted.links, {
      base64: o.base64,
      success: true,
      retryTimes: lease.retries,
    });
    if (extracted.stopped !== undefined) page.links_stopped = extracted.stopped;
    const skipped: SkippedLinks = {};
    const allowed = followable(req.crawl, extracted.links, skipped);
    putSkipped(page, skipped);
    // A spider that throws fails this page only: 'process' stage, poison, a success:false page (failure.ts). An
    // async parse has a time budget: one that never settles costs its slot that long, then a failed try.
    const result = await withBudget(
      runSpider(spider, req, response, allowed),
      o.parseTimeoutMs,
      () => `spider "${spiderid}": parse did not finish within ${o.parseTimeoutMs} ms (CRAWLER_PARSE_TIMEOUT_MS)`,
    );
    putData(page, result.data);
    if (spider?.attrs) page.attrs = spider.attrs(req);
    return { page, response, children: this.#children(lease, req, spider, spiderid, followOf(result)) };
  }

  /**
   * {@link process} for a plugin spider: its code runs in the spider sandbox's thread under a time and memory budget
   * (lib/crawl/spiders/sandbox.ts). Links are extracted here, on this thread, as for every page (bounded by
   * extract.ts); the spider's `wantsLinks` is asked in the thread, so a page it does not spider carries none.
   */
  async #processSandboxed(
    lease: Lease,
    req: SpiderRequest,
    response: FetchResult,
    spiderid: string,
    spider: Spider | undefined,
  ): Promise<Processed> {
    const o = this.#o;
    const sandbox = o.sandbox as SpiderSandboxPort;
    const extracted: PageLinks =
      response.text && isHtml(response)
        ? extractPageLinks(response.text, response.url, { maxLinks: o.maxLinks })
        : { links: [] };
    const skipped: SkippedLinks = {};
    const result = await sandbox.run(spiderid, req, response, followable(req.crawl, extracted.links, skipped));
    if (result.wantsLinks) this.#logCut(req, spiderid, extracted);
    const page = buildPage({ ...req, spiderid }, response, result.wantsLinks ? extracted.links : [], {
      base64: o.base64,
      success: true,
      retryTimes: lease.retries,
    });
    if (result.wantsLinks && extracted.stopped !== undefined) page.links_stopped = extracted.stopped;
    if (result.wantsLinks) putSkipped(page, skipped);
    if (result.dataTruncated) {
      page.data = null;
      page.data_truncated = true;
    } else if (result.dataJson !== undefined) page.data = JSON.parse(result.dataJson) as unknown;
    if (result.attrs !== undefined) page.attrs = result.attrs;
    if (result.followDropped > 0)
      o.log.warn('follow entries over the per-page bound dropped', {
        url: req.url,
        spider: spiderid,
        dropped: result.followDropped,
      });
    return { page, response, children: this.#children(lease, req, spider, spiderid, result.follow) };
  }

  /** A page whose links were cut at `maxLinks` is logged: its URL, how many it had (more than the cap), the cap. */
  #logCut(req: SpiderRequest, spiderid: string, extracted: PageLinks): void {
    if (extracted.moreThan === undefined) return;
    this.#o.log.warn('page links cut at CRAWLER_MAX_LINKS', {
      url: req.url,
      spider: spiderid,
      found: `more than ${extracted.moreThan}`,
      kept: extracted.links.length,
      maxLinks: extracted.moreThan,
    });
  }

  /** A page's children from its spider's follow entries; entries that cannot be queued are logged and dropped. */
  #children(
    lease: Lease,
    req: SpiderRequest,
    spider: Spider | undefined,
    spiderid: string,
    follow: FollowRequest[],
  ): ChildBatch {
    const dropped: DroppedFollow[] = [];
    const children = childRequests(lease, req, spider, follow, dropped);
    if (dropped.length > 0)
      this.#o.log.warn('follow entries dropped', { url: req.url, spider: spiderid, dropped: dropped.slice(0, 5) });
    return children;
  }

  /**
   * The lease charged its domain's throttle when it was leased. A fetch that starts more than
   * {@link RESTAMP_AFTER_MS} later (the caller checks) moves that charge to now (frontier `restamp`), and waits when
   * a later lease took the turn meanwhile, so the site never sees two fetches closer than the throttle and
   * Crawl-delay allow, however long robots.txt or a busy loop kept this one. False: the turn was more than
   * {@link MAX_RESTAMP_WAIT_MS} off (or the domain is held now), and the request went back to its queue.
   */
  async #onTurn(lease: Lease, signal: AbortSignal): Promise<boolean> {
    const o = this.#o;
    const turn = await o.frontier.restamp(lease, { ip: o.ip, maxWaitMs: MAX_RESTAMP_WAIT_MS });
    this.restamps++;
    if (turn === null) {
      o.log.info('fetch started too late for its domain turn; the request went back to its queue', { url: lease.url });
      return false;
    }
    if (turn.waitMs > 0) await sleep(turn.waitMs, undefined, { signal });
    return true;
  }

  /**
   * Tells the frontier a domain's robots.txt Crawl-delay (at most {@link MAX_CRAWL_DELAY_MS}) when it differs from
   * what this process last told it: one Redis write per domain and change, not per page. The memory of what was
   * told is bounded (oldest forgotten first; forgetting only costs one more write). Undefined: nothing to tell.
   */
  #crawlDelay(lease: Lease, delayMs: number | undefined): Promise<void> | undefined {
    const ms = delayMs === undefined ? 0 : Math.min(delayMs, MAX_CRAWL_DELAY_MS);
    const key = `${this.#o.frontier.throttleScope(lease)}\u0000${lease.domain}`;
    if (this.#toldCrawlDelay.get(key) === ms) return undefined;
    return this.#tellCrawlDelay(lease, key, ms);
  }

  async #tellCrawlDelay(lease: Lease, key: string, ms: number): Promise<void> {
    await this.#o.frontier.setCrawlDelay(lease.partition, lease.domain, ms);
    this.#toldCrawlDelay.delete(key);
    this.#toldCrawlDelay.set(key, ms);
    if (this.#toldCrawlDelay.size > CRAWL_DELAY_MEMORY) {
      const oldest = this.#toldCrawlDelay.keys().next().value;
      if (oldest !== undefined) this.#toldCrawlDelay.delete(oldest);
    }
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
function retryAfterMs(value: string | undefined, now: number): number {
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.min(seconds, 3600) * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, Math.min(at - now, 3_600_000)) : 0;
}

/** Whether `spider` uses the links of this request's page ({@link Spider.wantsLinks}); a hook that throws: yes. */
function wantsLinks(spider: Spider | undefined, req: SpiderRequest): boolean {
  try {
    return spider?.wantsLinks?.(req) ?? true;
  } catch {
    return true;
  }
}
