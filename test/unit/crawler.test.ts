/**
 * The crawl loop against small in-memory fakes of its seams (frontier, fetcher, robots, sink, body store):
 * every branch of the failure decision as the loop acts on it, and the poison-proofing around delivery
 * (messages always fit, per-app copies best effort, page before children, nothing released for poison).
 */
import { describe, expect, it } from 'vitest';
import { ConcurrencyController, type LoadSignals } from '../../lib/crawl/crawler/concurrency.ts';
import { Crawler, RECLAIMED_TOO_OFTEN } from '../../lib/crawl/crawler/crawler.ts';
import { DELIVERIES_PER_FETCH } from '../../lib/crawl/crawler/delivery.ts';
import { MAX_CRAWL_DELAY_MS, MAX_RESTAMP_WAIT_MS, RESTAMP_AFTER_MS } from '../../lib/crawl/crawler/fetch-slot.ts';
import { PUBLISH_STALL_MS } from '../../lib/crawl/crawler/gate.ts';
import { LEASE_AHEAD_MS, MAX_LEASE_BATCH, QUIET_MAX_MS } from '../../lib/crawl/crawler/leasing.ts';
import { CRAWLER_TASK_KIND, type CrawlerLoad, parseCrawlerLoad } from '../../lib/crawl/crawler/load-report.ts';
import type { CrawlerOptions } from '../../lib/crawl/crawler/options.ts';
import type { RobotsDecision } from '../../lib/crawl/fetch/robots.ts';
import builtInSpiders from '../../lib/crawl/spiders/index.ts';
import { type SandboxResult, SpiderBudgetError } from '../../lib/crawl/spiders/sandbox.ts';
import {
  FetchError,
  type FetchRequest,
  type FetchResult,
  MAX_DATA_BYTES,
  type PageItem,
  type Spider,
} from '../../lib/crawl/types.ts';
import { PartialBatchError } from '../../lib/errors.ts';
import type {
  AckResult,
  CrawlRef,
  CrawlSettings,
  Lease,
  LeaseLeft,
  LeaseMany,
  QueueRequest,
} from '../../lib/frontier-model.ts';
import type { CrawlerFrontier } from '../../lib/ports.ts';
import { FakeSink, MemoryStatsStore, RecordingLog, type SentBatch } from '../helpers/fake-stores.ts';
import { htmlResponse } from '../helpers/fakes.ts';

const SETTINGS: CrawlSettings = {
  appid: 'app1',
  crawlid: 'c1',
  spiderid: 'link',
  priority: 1,
  maxdepth: 1,
  expires: 0,
};
const FIREHOSE = 'demo.crawled_firehose';

let handles = 0;
function lease(url: string, fields: Partial<Lease> = {}): Lease {
  handles += 1;
  // A lease comes from its spider type's queue: the crawl's type unless the test says otherwise (a hand-off).
  const spider = fields.crawl?.spiderid ?? SETTINGS.spiderid;
  return {
    handle: `h${handles}`,
    partition: { prefix: 't', scope: spider, partition: 0, spider },
    url,
    domain: 'a.example',
    priority: 1,
    depth: 0,
    retries: 0,
    crawl: SETTINGS,
    ...fields,
  };
}

/** A frontier of a fixed list of leases that records what the crawler did with each. */
class ScriptedFrontier implements CrawlerFrontier {
  readonly events: string[] = [];
  readonly acked: { handle: string; outcome: string }[] = [];
  readonly retried: { handle: string; delayMs: number; holdDomainMs?: number }[] = [];
  readonly released: string[] = [];
  readonly enqueued: { spider: string; urls: string[] }[] = [];
  /** Every enqueued item as given, by spider type. */
  readonly items: { spider: string; crawl: CrawlRef; request: QueueRequest }[] = [];
  /** Makes an ack with children throw this (before anything is stored). */
  enqueueError: Error | undefined;
  /** How many acks with children {@link enqueueError} fails (default: all of them). */
  enqueueErrorTimes = Number.POSITIVE_INFINITY;
  readonly #leases: Lease[];
  #total: number;
  constructor(leases: Lease[]) {
    this.#leases = [...leases];
    this.#total = leases.length;
  }
  /** When empty, answer that more is due this many ms from now (retries waiting out their delay) instead of none. */
  dueLaterMs: number | undefined;
  /** New work appears (as a crawl request fed while the crawler idles). */
  add(leases: Lease[]): void {
    this.#leases.push(...leases);
    this.#total += leases.length;
  }
  /** Every lease got its one outcome. */
  get settled(): boolean {
    return this.acked.length + this.retried.length + this.released.length >= this.#total;
  }
  /** The `max` of every leaseMany call. */
  readonly asks: number[] = [];
  /** The `exclude` of every leaseMany call that had one. */
  readonly excludes: string[][] = [];
  async leaseMany(
    _spider: string,
    max: number,
    options: { exclude?: readonly string[]; perDomain?: number } = {},
  ): Promise<LeaseMany> {
    this.asks.push(max);
    // As the lease script: the excluded domains' requests, and a domain's past `perDomain` in this call, keep their
    // place; the others are taken in order.
    const skip = new Set(options.exclude ?? []);
    if (skip.size > 0) this.excludes.push([...skip]);
    const taken = new Map<string, number>();
    const leases: Lease[] = [];
    for (let i = 0; i < this.#leases.length && leases.length < max; ) {
      const domain = (this.#leases[i] as Lease).domain;
      if (skip.has(domain)) i++;
      else {
        leases.push(...this.#leases.splice(i, 1));
        taken.set(domain, (taken.get(domain) ?? 0) + 1);
        if (options.perDomain && (taken.get(domain) ?? 0) >= options.perDomain) skip.add(domain);
      }
    }
    // As the script's `left`: more now in a domain the caller did not exclude and this call took nothing of, else
    // only in domains this call took from, else only in the excluded ones.
    const caller = new Set(options.exclude ?? []);
    const open = this.#leases.filter((l) => !caller.has(l.domain));
    const left: LeaseLeft = open.some((l) => !taken.has(l.domain))
      ? 'more'
      : open.length > 0
        ? 'leased'
        : this.#leases.length > 0
          ? 'excluded'
          : 'none';
    const later = this.dueLaterMs === undefined ? null : Date.now() + this.dueLaterMs;
    return { leases, nextDueMs: open.length > 0 ? Date.now() : later, left, skipped: 0 };
  }
  async ack(
    l: Pick<Lease, 'handle'>,
    outcome: 'done' | 'fail' = 'done',
    _now?: number,
    children?: ReadonlyMap<string, readonly { crawl: CrawlRef; request: QueueRequest }[]>,
  ): Promise<AckResult> {
    // The real frontier stores the children first (in the ack's own script call when they share its partition).
    for (const [spider, items] of children ?? []) {
      if (items.length === 0) continue;
      this.events.push(`enqueue ${items.length}`);
      if (this.enqueueError && this.enqueueErrorTimes-- > 0) throw this.enqueueError;
      this.enqueued.push({ spider, urls: items.map((i) => i.request.url) });
      this.items.push(...items.map((i) => ({ spider, ...i })));
    }
    this.events.push(`ack ${l.handle}`);
    this.acked.push({ handle: l.handle, outcome });
    const complete = this.settled && this.#leases.length === 0;
    return { acked: true, complete, queued: 0, leased: 0, done: this.acked.length, failed: 0 };
  }
  /** The size of every ackMany call. */
  readonly ackBatches: number[] = [];
  /** As the frontier's: each item as if acked alone; when some fail, a PartialBatchError says which. */
  async ackMany(
    items: readonly {
      lease: Pick<Lease, 'handle'>;
      outcome: 'done' | 'fail';
      children?: ReadonlyMap<string, readonly { crawl: CrawlRef; request: QueueRequest }[]>;
    }[],
  ): Promise<AckResult[]> {
    this.ackBatches.push(items.length);
    const out: (AckResult | undefined)[] = [];
    const errors: unknown[] = [];
    for (const [i, it] of items.entries()) {
      try {
        out[i] = await this.ack(it.lease, it.outcome, undefined, it.children);
      } catch (error) {
        errors[i] = error;
      }
    }
    if (errors.some((e) => e !== undefined)) throw new PartialBatchError(out, errors);
    return out as AckResult[];
  }
  async retry(
    l: Pick<Lease, 'handle'>,
    delayMs: number,
    _now?: number,
    holdDomainMs = 0,
  ): Promise<{ retried: boolean; handle: string | undefined }> {
    this.retried.push({ handle: l.handle, delayMs, ...(holdDomainMs > 0 ? { holdDomainMs } : {}) });
    return { retried: true, handle: `${l.handle}r` };
  }
  readonly crawlDelays: { domain: string; delayMs: number | undefined }[] = [];
  async setCrawlDelay(_p: unknown, domain: string, delayMs: number | undefined): Promise<void> {
    this.crawlDelays.push({ domain, delayMs });
  }
  throttleScope(l: Pick<Lease, 'partition'>): string {
    return `${l.partition.scope}:${l.partition.partition}`;
  }
  /** Makes a release throw this (before anything is released). */
  releaseError: Error | undefined;
  /** How many releases {@link releaseError} fails (default: all of them). */
  releaseErrorTimes = Number.POSITIVE_INFINITY;
  /** The handles of every release call, in order. */
  readonly releaseCalls: string[][] = [];
  async release(ls: Pick<Lease, 'handle'>[]): Promise<number> {
    this.releaseCalls.push(ls.map((l) => l.handle));
    if (this.releaseError && this.releaseErrorTimes-- > 0) throw this.releaseError;
    this.released.push(...ls.map((l) => l.handle));
    return ls.length;
  }
  readonly extended: string[] = [];
  async extend(ls: Pick<Lease, 'handle'>[]): Promise<number> {
    this.extended.push(...ls.map((l) => l.handle));
    return ls.length;
  }
  /** What restamp answers (null: the turn was too far off, the request went back to its queue). */
  turn: { waitMs: number } | null = { waitMs: 0 };
  readonly restamped: { handle: string; hitMs: number | undefined; maxWaitMs: number }[] = [];
  async restamp(
    l: Pick<Lease, 'handle' | 'hitMs'>,
    options: { maxWaitMs: number },
  ): Promise<{ waitMs: number } | null> {
    this.events.push(`restamp ${l.handle}`);
    this.restamped.push({ handle: l.handle, hitMs: l.hitMs, maxWaitMs: options.maxWaitMs });
    return this.turn;
  }
}

/** A sink that also records the order of sends among the frontier's events, and can refuse some topics. */
class OrderedSink extends FakeSink {
  readonly events: string[];
  readonly refuse: (topic: string) => Error | undefined;
  constructor(events: string[], refuse: (topic: string) => Error | undefined = () => undefined) {
    super();
    this.events = events;
    this.refuse = refuse;
  }
  override async send(batch: SentBatch): Promise<void> {
    for (const { topic } of batch) {
      const error = this.refuse(topic);
      if (error) throw error;
    }
    this.events.push(`send ${batch.map((b) => b.topic).join(',')}`);
    await super.send(batch);
  }
}

/** A stats store that also counts its increment calls. */
class CountingStats extends MemoryStatsStore {
  calls = 0;
  override async increment(...args: Parameters<MemoryStatsStore['increment']>): Promise<void> {
    this.calls++;
    await super.increment(...args);
  }
}

/** A fetcher whose pages answer 'ok', counting its fetches. */
function countingFetcher(): { fetcher: CrawlerOptions['fetcher']; count: () => number } {
  let n = 0;
  return {
    fetcher: {
      fetch: async (q) => {
        n++;
        return htmlResponse(q.url, 'ok');
      },
      close: async () => undefined,
    },
    count: () => n,
  };
}

/** A crawler over `frontier` with the loop tests' defaults (pages answer 'ok', one worker, fast polls). */
function testCrawler(frontier: CrawlerFrontier, options: Partial<CrawlerOptions> = {}): Crawler {
  return new Crawler({
    frontier,
    fetcher: { fetch: async (q) => htmlResponse(q.url, 'ok'), close: async () => undefined },
    sink: new FakeSink(),
    stats: new MemoryStatsStore(),
    spiders: new Map(builtInSpiders.map((s) => [s.name, s])),
    spiderTypes: ['link'],
    topicPrefix: 'demo',
    concurrency: 1,
    userAgent: 'test-agent',
    nodeId: 'test:1',
    host: 'test',
    log: new RecordingLog(),
    idlePollMs: 5,
    scoutPollMs: 5,
    ...options,
  });
}

interface Run {
  stats: CountingStats;
  frontier: ScriptedFrontier;
  sink: OrderedSink;
  log: RecordingLog;
  pages: PageItem[];
  stored: Map<string, Buffer>;
}

async function crawl(
  leases: Lease[],
  fetch: (request: FetchRequest) => FetchResult | Promise<FetchResult>,
  options: {
    /** The robots.txt decision for every URL, answered at once (checkNow). */
    robots?: RobotsDecision;
    refuse?: (topic: string) => Error | undefined;
    maxMessageBytes?: number;
    appidTopics?: boolean;
    enqueueError?: Error;
    /** How many acks with children `enqueueError` fails (default: all). */
    enqueueErrorTimes?: number;
    releaseError?: Error;
    /** How many releases `releaseError` fails (default: all). */
    releaseErrorTimes?: number;
    /** Spiders registered besides the built-ins. */
    plugins?: Spider[];
    spider?: (url: string) => void;
    /** The crawler's clock (default Date.now) and a robots check that may move it (how long robots.txt took). */
    now?: () => number;
    robotsCheck?: () => Promise<RobotsDecision>;
    /** What the frontier's restamp answers. */
    turn?: { waitMs: number } | null;
    sandbox?: CrawlerOptions['sandbox'];
    parseTimeoutMs?: number;
    maxLinks?: number;
  } = {},
): Promise<Run> {
  const frontier = new ScriptedFrontier(leases);
  frontier.enqueueError = options.enqueueError;
  if (options.enqueueErrorTimes !== undefined) frontier.enqueueErrorTimes = options.enqueueErrorTimes;
  frontier.releaseError = options.releaseError;
  if (options.releaseErrorTimes !== undefined) frontier.releaseErrorTimes = options.releaseErrorTimes;
  if (options.turn !== undefined) frontier.turn = options.turn;
  const sink = new OrderedSink(frontier.events, options.refuse);
  const log = new RecordingLog();
  const stored = new Map<string, Buffer>();
  const stats = new CountingStats();
  const spiders = new Map([...builtInSpiders, ...(options.plugins ?? [])].map((s) => [s.name, s]));
  if (options.spider) {
    const hook = options.spider;
    spiders.set('link', {
      name: 'link',
      parse: ({ request, links }) => {
        hook(request.url);
        return { follow: links.map((l) => ({ url: l.url })) };
      },
    });
  }
  const crawler = new Crawler({
    frontier,
    fetcher: { fetch: async (r) => fetch(r), close: async () => undefined },
    robots: options.robotsCheck
      ? { check: options.robotsCheck }
      : options.robots
        ? {
            // The decision as the in-process rules give it (checkNow); check is what a miss would ask.
            checkNow: () => options.robots as RobotsDecision,
            check: async () => {
              throw new Error('check called although checkNow answered');
            },
          }
        : undefined,
    ...(options.now ? { now: options.now } : {}),
    ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    ...(options.parseTimeoutMs ? { parseTimeoutMs: options.parseTimeoutMs } : {}),
    ...(options.maxLinks ? { maxLinks: options.maxLinks } : {}),
    sink,
    stats,
    spiders,
    spiderTypes: ['link'],
    topicPrefix: 'demo',
    appidTopics: options.appidTopics ?? false,
    maxMessageBytes: options.maxMessageBytes ?? 1_000_000,
    bodyStore: {
      put: async (key, body) => {
        stored.set(key, Buffer.from(body));
        return `s3://bodies/${key}`;
      },
    },
    concurrency: 1,
    retryTimes: 3,
    retryBaseDelayMs: 100,
    userAgent: 'test-agent',
    nodeId: 'test:1',
    host: 'test',
    log,
    idlePollMs: 5,
    scoutPollMs: 5,
  });
  crawler.start();
  const deadline = Date.now() + 10_000;
  while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
  await crawler.stop(1000);
  return { stats, frontier, sink, log, pages: sink.values<PageItem>(FIREHOSE), stored };
}

describe('Crawler: the failure decision in the loop', () => {
  it('retries a 503 with its Retry-After as the delay, publishing nothing yet', async () => {
    const l = lease('http://a.example/busy');
    const r = await crawl([l], (q) =>
      htmlResponse(q.url, '', { status: 503, statusText: 'Service Unavailable', headers: { 'retry-after': ['7'] } }),
    );
    expect(r.frontier.retried).toEqual([{ handle: l.handle, delayMs: 7000, holdDomainMs: 7000 }]);
    expect(r.pages).toEqual([]);
  });

  it('gives up on a 503 after the last retry with a success:false page, acked as failed', async () => {
    const l = lease('http://a.example/busy', { retries: 3 });
    const r = await crawl([l], (q) => htmlResponse(q.url, 'down', { status: 503, statusText: 'Service Unavailable' }));
    expect(r.pages).toHaveLength(1);
    expect(r.pages[0]).toMatchObject({ success: false, exception: 'HTTP 503 Service Unavailable', status_code: 503 });
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'fail' }]);
    // Noted in the crawl's failure log for the dashboard: the URL, the last status and the reason.
    const { spiderid, appid, crawlid } = SETTINGS;
    const [notes] = await r.stats.failures([{ spiderid, appid, crawlid }], 5);
    expect(notes).toMatchObject([{ url: l.url, status_code: 503, exception: 'HTTP 503 Service Unavailable' }]);
  });

  it('notes no failure for a page that succeeded, and removes its heartbeat when it stops', async () => {
    const r = await crawl([lease('http://a.example/fine')], (q) => htmlResponse(q.url, 'ok'));
    const { spiderid, appid, crawlid } = SETTINGS;
    expect(await r.stats.failures([{ spiderid, appid, crawlid }], 5)).toEqual([[]]);
    // It beat while running; stopped, it is no longer live however short ago that beat was.
    expect(await r.stats.live('crawler', Date.now(), 300_000)).toEqual([]);
  });

  it('retries a connection failure, then gives up on a blocked address at once', async () => {
    const a = lease('http://a.example/refused');
    const b = lease('http://a.example/private');
    const r = await crawl([a, b], (q) => {
      if (q.url.endsWith('refused')) throw new FetchError('connect', 'ECONNREFUSED');
      throw new FetchError('blocked_address', '10.0.0.1 is not a public address');
    });
    expect(r.frontier.retried).toEqual([{ handle: a.handle, delayMs: 100 }]);
    expect(r.pages).toMatchObject([
      { url: b.url, success: false, exception: 'blocked_address: 10.0.0.1 is not a public address' },
    ]);
  });

  it('says robots.txt could not be read, not that it disallows, when it failed closed', async () => {
    const reason = 'robots.txt could not be read (HTTP 503); failing closed, so the URL is not fetched';
    const r = await crawl(
      [lease('http://a.example/x')],
      () => {
        throw new Error('must not fetch');
      },
      { robots: { allowed: false, reason } },
    );
    expect(r.pages).toMatchObject([{ success: false, exception: reason }]);
  });

  it('sums page counters in process and writes them once (at stop at the latest), not once per page', async () => {
    const leases = ['/1', '/2', '/3'].map((p) => lease(`http://a.example${p}`));
    const r = await crawl(leases, (q) => htmlResponse(q.url, 'ok'));
    expect(r.pages).toHaveLength(3);
    expect(r.stats.calls).toBe(1);
    const counts = await r.stats.read(['crawler:link:200', 'machine:test:200'], Date.now());
    expect(counts['crawler:link:200']?.lifetime).toBe(3);
    expect(counts['machine:test:200']?.lifetime).toBe(3);
  });

  it('gives up a request reclaimed past its retries without fetching it: a success:false page, acked as failed', async () => {
    const l = lease('http://a.example/killer', { retries: 4 });
    const r = await crawl([l], () => {
      throw new Error('must not fetch');
    });
    expect(r.pages).toMatchObject([{ url: l.url, success: false, exception: RECLAIMED_TOO_OFTEN, retry_times: 4 }]);
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'fail' }]);
  });

  it("tells the frontier a domain's robots.txt Crawl-delay once, capped at a minute, not once per page", async () => {
    const leases = ['/1', '/2', '/3'].map((p) => lease(`http://a.example${p}`));
    const r = await crawl(leases, (q) => htmlResponse(q.url, 'ok'), {
      robots: { allowed: true, crawlDelayMs: 3_600_000 },
    });
    expect(r.pages).toHaveLength(3);
    expect(r.frontier.crawlDelays).toEqual([{ domain: leases[0]?.domain, delayMs: MAX_CRAWL_DELAY_MS }]);
  });

  it('restamps a lease whose fetch starts more than RESTAMP_AFTER_MS late (robots.txt was slow), waits its turn, then fetches', async () => {
    let clock = 1_000_000;
    const fetched: number[] = [];
    const late = lease('http://a.example/late', { hitMs: 5 });
    const r = await crawl(
      [late],
      (q) => {
        fetched.push(Date.now());
        return htmlResponse(q.url, 'ok');
      },
      {
        now: () => clock,
        robotsCheck: async () => {
          clock += RESTAMP_AFTER_MS + 1;
          return { allowed: true };
        },
        turn: { waitMs: 150 },
      },
    );
    expect(r.frontier.restamped).toEqual([{ handle: late.handle, hitMs: 5, maxWaitMs: MAX_RESTAMP_WAIT_MS }]);
    expect(r.frontier.events.indexOf(`restamp ${late.handle}`)).toBeLessThan(
      r.frontier.events.indexOf(`ack ${late.handle}`),
    );
    expect(fetched).toHaveLength(1);
    expect(r.frontier.acked).toEqual([{ handle: late.handle, outcome: 'done' }]);
  });

  it('waits the turn restamp gives before fetching', async () => {
    let clock = 0;
    let restampedAt = 0;
    let fetchedAt = 0;
    const l = lease('http://a.example/wait', { hitMs: 1 });
    await crawl(
      [l],
      (q) => {
        fetchedAt = performance.now();
        return htmlResponse(q.url, 'ok');
      },
      {
        now: () => clock,
        robotsCheck: async () => {
          clock += 1000;
          restampedAt = performance.now();
          return { allowed: true };
        },
        turn: { waitMs: 200 },
      },
    );
    expect(fetchedAt - restampedAt).toBeGreaterThanOrEqual(190);
  });

  it('does not restamp a fetch that starts on time, nor a lease without a throttle hit', async () => {
    let clock = 0;
    const onTime = lease('http://a.example/on-time', { hitMs: 7 });
    const byHand = lease('http://a.example/by-hand');
    const r = await crawl([onTime, byHand], (q) => htmlResponse(q.url, 'ok'), {
      now: () => clock,
      robotsCheck: async () => {
        clock += RESTAMP_AFTER_MS; // exactly the limit: on time
        return { allowed: true };
      },
    });
    const r2 = await crawl([lease('http://a.example/slow-by-hand')], (q) => htmlResponse(q.url, 'ok'), {
      now: () => clock,
      robotsCheck: async () => {
        clock += 10 * RESTAMP_AFTER_MS;
        return { allowed: true };
      },
    });
    expect(r.frontier.restamped).toEqual([]);
    expect(r.frontier.acked).toHaveLength(2);
    expect(r2.frontier.restamped).toEqual([]);
    expect(r2.frontier.acked).toHaveLength(1);
  });

  it('leaves a request restamp sent back to its queue alone: not fetched, published, acked, retried or released', async () => {
    let clock = 0;
    const counting = countingFetcher();
    const l = lease('http://a.example/too-late', { hitMs: 1 });
    const frontier = new ScriptedFrontier([l]);
    frontier.turn = null;
    const sink = new FakeSink();
    const crawler = testCrawler(frontier, {
      fetcher: counting.fetcher,
      robots: {
        check: async () => {
          clock += 1000;
          return { allowed: true };
        },
      },
      now: () => clock,
      sink,
    });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (crawler.restamps === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await new Promise((r) => setTimeout(r, 20));
    await crawler.stop(1000);
    expect(crawler.restamps).toBe(1);
    expect(counting.count()).toBe(0);
    expect(sink.sent).toEqual([]);
    expect([frontier.acked, frontier.retried, frontier.released]).toEqual([[], [], []]);
  });

  it('turns a spider that throws (poison) into a success:false page and goes on with the next request', async () => {
    const bad = lease('http://a.example/bad');
    const good = lease('http://a.example/good');
    const r = await crawl([bad, good], (q) => htmlResponse(q.url, '<a href="/next">n</a>'), {
      spider: (url) => {
        if (url.endsWith('bad')) throw new RangeError('Maximum call stack size exceeded');
      },
    });
    expect(r.pages.map((p) => [p.url, p.success, p.exception])).toEqual([
      [bad.url, false, 'the page could not be processed: RangeError: Maximum call stack size exceeded'],
      [good.url, true, undefined],
    ]);
    expect(r.frontier.released).toEqual([]);
  });

  it('keeps the page while Kafka is unreachable and publishes it once Kafka is back: never released, fetched once', async () => {
    const l = lease('http://a.example/x');
    const down = Object.assign(new Error('Connection error: connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' });
    let refusals = 3;
    let fetches = 0;
    const r = await crawl(
      [l],
      (q) => {
        fetches++;
        return htmlResponse(q.url, 'ok');
      },
      { refuse: (topic) => (topic === FIREHOSE && refusals-- > 0 ? down : undefined) },
    );
    expect(fetches).toBe(1);
    expect(r.frontier.released).toEqual([]);
    expect(r.frontier.retried).toEqual([]);
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'done' }]);
    expect(r.pages).toHaveLength(1);
    expect(r.log.at('warn').map((w) => w.message)).toContain(
      'page not stored; kept and tried again while this process holds the lease',
    );
  });

  it('publishes a small give-up page when the broker refuses the page itself as too large', async () => {
    const l = lease('http://a.example/x');
    let refused = 0;
    const tooLarge = Object.assign(new Error('message too large'), {
      name: 'KafkaJSProtocolError',
      type: 'MESSAGE_TOO_LARGE',
    });
    const r = await crawl([l], (q) => htmlResponse(q.url, 'ok'), {
      refuse: (topic) => (topic === FIREHOSE && refused++ === 0 ? tooLarge : undefined),
    });
    expect(r.pages).toMatchObject([{ success: false, exception: expect.stringContaining('could not be published') }]);
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'fail' }]);
    expect(r.frontier.released).toEqual([]);
  });
});

describe('Crawler: messages always fit', () => {
  it('fits a page with 20,000 links under a 100 KB limit, keeps the first links, and still enqueues them all', async () => {
    const links = Array.from({ length: 20_000 }, (_, i) => `<a href="/p${i}">page ${i}</a>`).join('');
    const r = await crawl([lease('http://a.example/')], (q) => htmlResponse(q.url, links), {
      maxMessageBytes: 100_000,
    });
    const [m] = r.sink.messages(FIREHOSE);
    expect(Buffer.byteLength(String(m?.value))).toBeLessThanOrEqual(100_000);
    const page = r.pages[0] as PageItem;
    expect(page.links_truncated).toBe(true);
    expect(page.links.length).toBeGreaterThan(100);
    expect(page.links[0]?.url).toBe('http://a.example/p0');
    expect(page.body_truncated).toBe(true);
    expect(page.body_ref).toMatch(/^s3:\/\/bodies\//);
    expect(r.frontier.enqueued.flatMap((e) => e.urls)).toHaveLength(10_000);
  });

  it('does not follow a link longer than 2048 characters (a page cannot fill Redis with megabyte URLs)', async () => {
    const long = `/x${'y'.repeat(5_000)}`;
    const r = await crawl([lease('http://a.example/')], (q) =>
      htmlResponse(q.url, `<a href="${long}">long</a><a href="/ok">ok</a>`),
    );
    expect(r.frontier.enqueued.flatMap((e) => e.urls)).toEqual(['http://a.example/ok']);
    expect(r.pages[0]?.links).toHaveLength(2);
  });

  it('stores the response bytes, not their lossy decoding, when a binary body labelled text/html is offloaded', async () => {
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 256));
    const r = await crawl(
      [lease('http://a.example/bin')],
      (q) => htmlResponse(q.url, '', { body: bytes, text: new TextDecoder().decode(bytes) }),
      { maxMessageBytes: 50_000 },
    );
    const [stored] = [...r.stored.values()];
    expect(stored?.equals(bytes)).toBe(true);
  });

  it('publishes a give-up page when not even an empty page fits (huge response headers)', async () => {
    const l = lease('http://a.example/x');
    const headers = { 'content-type': ['text/html'], 'x-junk': ['j'.repeat(20_000)] };
    const r = await crawl([l], (q) => htmlResponse(q.url, 'ok', { headers }), { maxMessageBytes: 5_000 });
    expect(r.pages).toMatchObject([
      { success: false, exception: expect.stringContaining('PageTooLargeError'), response_headers: {} },
    ]);
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'fail' }]);
  });
});

describe('Crawler: pages whose links are not used', () => {
  const body = '<a href="/a">a</a><a href="/b">b</a>';

  it('does not parse a link-spider page at the crawl’s maxdepth: links [] and no children, as Scrapy Cluster sends it', async () => {
    const atMax = { ...SETTINGS, maxdepth: 2 };
    const r = await crawl(
      [
        lease('http://a.example/deep', { crawl: atMax, depth: 2 }),
        lease('http://a.example/mid', { crawl: atMax, depth: 1 }),
      ],
      (q) => htmlResponse(q.url, body),
    );
    const byUrl = new Map(r.pages.map((p) => [p.url, p]));
    expect(byUrl.get('http://a.example/deep')?.links).toEqual([]);
    expect(byUrl.get('http://a.example/deep')?.success).toBe(true);
    expect(byUrl.get('http://a.example/mid')?.links.map((l) => l.url)).toEqual([
      'http://a.example/a',
      'http://a.example/b',
    ]);
    expect(r.frontier.enqueued.flatMap((e) => e.urls).sort()).toEqual(['http://a.example/a', 'http://a.example/b']);
  });

  it('gives a plugin without wantsLinks the links at any depth, and one whose wantsLinks throws too', async () => {
    const seen: number[] = [];
    const parse = ({ links }: { links: unknown[] }) => {
      seen.push(links.length);
      return {};
    };
    const plain: Spider = { name: 'plain', parse };
    const broken: Spider = {
      name: 'broken',
      wantsLinks: () => {
        throw new Error('boom');
      },
      parse,
    };
    const r = await crawl(
      [
        lease('http://a.example/p', { crawl: { ...SETTINGS, spiderid: 'plain' }, depth: 0 }),
        lease('http://a.example/b', { crawl: { ...SETTINGS, spiderid: 'broken' }, depth: 0 }),
      ],
      (q) => htmlResponse(q.url, body),
      { plugins: [plain, broken] },
    );
    expect(seen).toEqual([2, 2]);
    expect(r.pages.map((p) => p.links.length)).toEqual([2, 2]);
  });
});

describe("Crawler: links the crawl's rules keep", () => {
  const body =
    '<a href="/a">a</a><a href="/doc.pdf">pdf</a><a href="http://b.example/x">b</a><a href="/private/p">p</a>';
  const rules = { ...SETTINGS, allowed_domains: ['a.example'], deny_regex: ['/private/'] };

  it('a page carries every link, follows the allowed ones and counts the others by rule in links_skipped', async () => {
    const r = await crawl([lease('http://a.example/', { crawl: rules })], (q) => htmlResponse(q.url, body));
    expect(r.pages[0]?.links).toHaveLength(4);
    expect(r.pages[0]?.links_skipped).toEqual({ deny_extensions: 1, allowed_domains: 1, deny_regex: 1 });
    expect(r.frontier.enqueued.flatMap((e) => e.urls)).toEqual(['http://a.example/a']);
  });

  it('a page whose links are all followed carries no links_skipped', async () => {
    const r = await crawl([lease('http://a.example/')], (q) => htmlResponse(q.url, '<a href="/a">a</a>'));
    expect(r.pages[0]).not.toHaveProperty('links_skipped');
  });

  it('a spider, in process or in the sandbox, is given only the allowed links; the count shows when it wants links', async () => {
    const seen: string[][] = [];
    const plain: Spider = {
      name: 'plain',
      parse: ({ links }) => {
        seen.push(links.map((l) => l.url));
        return {};
      },
    };
    const plug = { ...rules, spiderid: 'plug' };
    const partition = { prefix: 't', scope: 'plug', partition: 0, spider: 'plug' };
    const r = await crawl(
      [
        lease('http://a.example/plain', { crawl: { ...rules, spiderid: 'plain' } }),
        lease('http://a.example/wants', { crawl: plug, partition }),
        lease('http://a.example/not', { crawl: plug, partition }),
      ],
      (q) => htmlResponse(q.url, body),
      {
        plugins: [plain, { name: 'plug', parse: () => ({}) }],
        sandbox: {
          spiders: new Set(['plug']),
          run: async (_spider, request, _response, links) => {
            seen.push(links.map((l) => l.url));
            return { wantsLinks: request.url.endsWith('/wants'), follow: [], followDropped: 0 };
          },
        },
      },
    );
    expect(seen).toEqual([['http://a.example/a'], ['http://a.example/a'], ['http://a.example/a']]);
    const byUrl = new Map(r.pages.map((p) => [p.url, p]));
    expect(byUrl.get('http://a.example/wants')?.links_skipped).toEqual({
      deny_extensions: 1,
      allowed_domains: 1,
      deny_regex: 1,
    });
    expect(byUrl.get('http://a.example/not')).not.toHaveProperty('links_skipped');
  });
});

describe('Crawler: the links-per-page cap (CRAWLER_MAX_LINKS, issue 48 item 10)', () => {
  /** A page of `n` distinct links, `/p/0` to `/p/<n-1>`. */
  const manyLinks = (n: number) => Array.from({ length: n }, (_, i) => `<a href="/p/${i}">p${i}</a>`).join('');
  const cutLines = (log: RecordingLog) => log.lines.filter((l) => l.message === 'page links cut at CRAWLER_MAX_LINKS');

  it('a page with more links than a cap of 5 carries exactly 5, says why, queues 5 children and logs the cut once', async () => {
    const l = lease('http://a.example/dir');
    const r = await crawl([l], (q) => htmlResponse(q.url, manyLinks(12)), { maxLinks: 5 });
    expect(r.pages).toHaveLength(1);
    expect(r.pages[0]?.links.map((x) => x.url)).toEqual([0, 1, 2, 3, 4].map((i) => `http://a.example/p/${i}`));
    expect(r.pages[0]?.links_stopped).toBe('link extraction stopped at 5 links');
    expect(r.frontier.enqueued.flatMap((e) => e.urls)).toHaveLength(5);
    expect(cutLines(r.log)).toEqual([
      {
        level: 'warn',
        message: 'page links cut at CRAWLER_MAX_LINKS',
        fields: { url: l.url, spider: 'link', found: 'more than 5', kept: 5, maxLinks: 5 },
      },
    ]);
  });

  it('a page with exactly the cap is not cut, and not logged', async () => {
    const r = await crawl([lease('http://a.example/dir')], (q) => htmlResponse(q.url, manyLinks(5)), { maxLinks: 5 });
    expect(r.pages[0]?.links).toHaveLength(5);
    expect(r.pages[0]?.links_stopped).toBeUndefined();
    expect(cutLines(r.log)).toEqual([]);
  });

  it('the default cap stays 10,000: a page of 10,001 links carries 10,000', async () => {
    const l = lease('http://a.example/big');
    const r = await crawl([l], (q) => htmlResponse(q.url, manyLinks(10_001)));
    expect(r.pages[0]?.links).toHaveLength(10_000);
    expect(r.pages[0]?.links_stopped).toBe('link extraction stopped at 10000 links');
    expect(cutLines(r.log).map((x) => x.fields)).toEqual([
      { url: l.url, spider: 'link', found: 'more than 10000', kept: 10_000, maxLinks: 10_000 },
    ]);
  });

  it('a plugin page in the sandbox gets the capped links and is logged when its spider wants links, not otherwise', async () => {
    const plug = { ...SETTINGS, spiderid: 'plug' };
    const partition = { prefix: 't', scope: 'plug', partition: 0, spider: 'plug' };
    const wants = lease('http://a.example/wants', { crawl: plug, partition });
    const not = lease('http://a.example/not', { crawl: plug, partition });
    const handed: number[] = [];
    const r = await crawl([wants, not], (q) => htmlResponse(q.url, manyLinks(12)), {
      maxLinks: 5,
      plugins: [{ name: 'plug', parse: () => ({}) }],
      sandbox: {
        spiders: new Set(['plug']),
        run: async (_spider, request, _response, links) => {
          handed.push(links.length);
          return { wantsLinks: request.url.endsWith('/wants'), follow: [], followDropped: 0 };
        },
      },
    });
    expect(handed).toEqual([5, 5]);
    const byUrl = new Map(r.pages.map((p) => [p.url, p]));
    expect(byUrl.get(wants.url)?.links).toHaveLength(5);
    expect(byUrl.get(not.url)?.links).toEqual([]);
    expect(cutLines(r.log).map((x) => x.fields?.url)).toEqual([wants.url]);
  });
});

describe('Crawler: the wandering spider', () => {
  it('follows one link past maxdepth 0 and sends its step in attrs, as Scrapy Cluster does', async () => {
    const settings = { ...SETTINGS, spiderid: 'wandering', maxdepth: 0, attrs: { tag: 'w' } };
    const r = await crawl([lease('http://a.example/', { crawl: settings, depth: 3 })], (q) =>
      htmlResponse(q.url, '<a href="/a">a</a><a href="/b">b</a>'),
    );
    expect(r.frontier.enqueued.flatMap((e) => e.urls)).toHaveLength(1);
    expect(r.pages[0]?.attrs).toEqual({ tag: 'w', step: 3 });
  });
});

describe('Crawler: delivery order and best-effort copies', () => {
  it('publishes the page before it enqueues the children, and acks last', async () => {
    const l = lease('http://a.example/');
    const r = await crawl([l], (q) => htmlResponse(q.url, '<a href="/a">a</a><a href="/b">b</a>'));
    expect(r.frontier.events.filter((e) => !e.startsWith('send demo.outbound'))).toEqual([
      `send ${FIREHOSE}`,
      'enqueue 2',
      `ack ${l.handle}`,
    ]);
  });

  it('with per-app topics on and the per-app topic missing, still publishes to the firehose and acks once', async () => {
    const l = lease('http://a.example/');
    const missing = Object.assign(new Error('This server does not host this topic-partition'), {
      name: 'KafkaJSProtocolError',
      type: 'UNKNOWN_TOPIC_OR_PARTITION',
    });
    const r = await crawl([l], (q) => htmlResponse(q.url, 'ok'), {
      appidTopics: true,
      refuse: (topic) =>
        topic.startsWith('demo.crawled_app1') || topic.startsWith('demo.outbound_app1') ? missing : undefined,
    });
    expect(r.pages).toHaveLength(1);
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'done' }]);
    expect(r.frontier.released).toEqual([]);
    expect(r.log.at('warn').map((w) => w.message)).toContain(
      'per-app topic not written (create it with `topics create --appid`, or raise KAFKA_APPID_TOPICS_MAX)',
    );
  });

  it('sends the complete notice to outbound_<appid> too when per-app topics are on', async () => {
    const r = await crawl([lease('http://a.example/')], (q) => htmlResponse(q.url, 'ok'), { appidTopics: true });
    expect(r.sink.values('demo.outbound_firehose')).toMatchObject([{ action: 'complete', crawlid: 'c1' }]);
    expect(r.sink.values('demo.outbound_app1')).toMatchObject([{ action: 'complete', crawlid: 'c1' }]);
    expect(r.sink.values('demo.crawled_app1')).toHaveLength(1);
  });

  it('never acks a page done without its children: refused for good (poison), the request fails visibly', async () => {
    const l = lease('http://a.example/');
    const scriptError = Object.assign(new Error('ERR user_script:3: bad member'), { name: 'ReplyError' });
    const r = await crawl([l], (q) => htmlResponse(q.url, '<a href="/a">a</a>'), { enqueueError: scriptError });
    // Tried ACK_REFUSED_TRIES times with its children, then failed: a success:false page naming the refusal.
    expect(r.frontier.events.filter((e) => e === 'enqueue 1')).toHaveLength(3);
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'fail' }]);
    expect(r.pages).toMatchObject([{ success: true }, { success: false }]);
    expect(r.pages[1]?.exception).toContain('bad member');
    expect(r.frontier.enqueued).toEqual([]);
  });

  it('keeps an ack that fails on infrastructure and tries it again, children and all, without releasing the page', async () => {
    const l = lease('http://a.example/');
    const down = Object.assign(new Error('OOM command not allowed when used memory > maxmemory'), {
      name: 'ReplyError',
    });
    const r = await crawl([l], (q) => htmlResponse(q.url, '<a href="/a">a</a>'), {
      enqueueError: down,
      enqueueErrorTimes: 3,
    });
    expect(r.frontier.released).toEqual([]);
    expect(r.frontier.acked).toEqual([{ handle: l.handle, outcome: 'done' }]);
    expect(r.frontier.enqueued).toEqual([{ spider: 'link', urls: ['http://a.example/a'] }]);
    expect(r.pages).toHaveLength(1);
    expect(r.log.at('warn').map((w) => w.message)).toContain(
      'ack not stored; kept and tried again while this process holds the lease',
    );
  });
});

describe('Crawler: releases while Redis fails', () => {
  it('gives a request whose processing failed on infrastructure back, trying the release again until it is stored', async () => {
    const l = lease('http://a.example/');
    // A shard failing over: the robots.txt cache and the release both fail for a while.
    const down = Object.assign(new Error('CLUSTERDOWN The cluster is down'), { name: 'ReplyError' });
    const r = await crawl([l], (q) => htmlResponse(q.url, 'ok'), {
      robotsCheck: async () => {
        throw down;
      },
      releaseError: down,
      releaseErrorTimes: 2,
    });
    // Not dropped after the first failure (held by no one until reclaimed): back in the queue, unfetched.
    expect(r.frontier.releaseCalls).toEqual([[l.handle], [l.handle], [l.handle]]);
    expect(r.frontier.released).toEqual([l.handle]);
    expect(r.frontier.acked).toEqual([]);
    expect(r.pages).toEqual([]);
    expect(r.log.at('warn').map((w) => w.message)).toContain('release not stored; tried again');
  });
});

describe('Crawler: spider plugins', () => {
  const shop: Spider = {
    name: 'shop',
    parse: ({ request, links }) => ({
      data: { title: 'a shop page', attrs: request.attrs ?? null },
      follow: links.map((l) => ({ url: l.url, spider: 'detail', priority: 50, attrs: { from: request.url } })),
    }),
  };
  const shopCrawl = { ...SETTINGS, spiderid: 'shop', attrs: { who: 'me' } };

  it('puts what the spider returns in the page message’s data, and gives it the request’s attrs', async () => {
    const r = await crawl(
      [lease('http://a.example/', { crawl: shopCrawl })],
      (q) => htmlResponse(q.url, '<a href="/x">x</a>'),
      {
        plugins: [shop],
      },
    );
    expect(r.pages[0]).toMatchObject({ spiderid: 'shop', data: { title: 'a shop page', attrs: { who: 'me' } } });
    expect(r.pages[0]?.data_truncated).toBeUndefined();
  });

  it('hands follow entries to the spider type they name, at their priority, with the crawl registered under it', async () => {
    const r = await crawl(
      [lease('http://a.example/', { crawl: shopCrawl })],
      (q) => htmlResponse(q.url, '<a href="/x">x</a>'),
      {
        plugins: [shop],
      },
    );
    expect(r.frontier.items).toHaveLength(1);
    const [child] = r.frontier.items;
    expect(child?.spider).toBe('detail');
    expect(child?.request).toMatchObject({ priority: 50, depth: 1 });
    expect(child?.crawl.settings).toEqual({ ...shopCrawl, spiderid: 'detail' });
    expect(child?.request.url).toMatch(/^http:\/\/a\.example\/x#cc-attrs=/);
  });

  it('crawls a handed-off request with the other spider, its attrs in the page and without the fragment in its URL', async () => {
    const seen: unknown[] = [];
    const detail: Spider = {
      name: 'detail',
      parse: ({ request }) => {
        seen.push({ url: request.url, attrs: request.attrs, spider: request.spider });
        return { data: { ok: true } };
      },
    };
    const first = await crawl(
      [lease('http://a.example/', { crawl: shopCrawl })],
      (q) => htmlResponse(q.url, '<a href="/x">x</a>'),
      {
        plugins: [shop, detail],
      },
    );
    const child = first.frontier.items[0] as { crawl: CrawlRef; request: QueueRequest };
    const fetched: string[] = [];
    const handed = lease(child.request.url, { crawl: child.crawl.settings as CrawlSettings, depth: 1 });
    const r = await crawl(
      [handed],
      (q) => {
        fetched.push(q.url);
        return htmlResponse(q.url, 'detail');
      },
      { plugins: [shop, detail] },
    );
    expect(fetched).toEqual(['http://a.example/x']);
    expect(seen).toEqual([
      { url: 'http://a.example/x', attrs: { who: 'me', from: 'http://a.example/' }, spider: 'detail' },
    ]);
    expect(r.pages[0]).toMatchObject({
      url: 'http://a.example/x',
      spiderid: 'detail',
      attrs: { who: 'me', from: 'http://a.example/' },
      data: { ok: true },
    });
  });

  it('gives a page whose spider throws success:false with the error, and goes on with the next request', async () => {
    const moody: Spider = {
      name: 'moody',
      parse: ({ request }) => {
        if (request.url.endsWith('/bad')) throw new Error('cannot parse this one');
        return { data: { fine: true } };
      },
    };
    const settings = { ...SETTINGS, spiderid: 'moody' };
    const r = await crawl(
      [lease('http://a.example/bad', { crawl: settings }), lease('http://a.example/good', { crawl: settings })],
      (q) => htmlResponse(q.url, 'x'),
      { plugins: [moody] },
    );
    expect(r.pages).toHaveLength(2);
    expect(r.pages.find((p) => p.url.endsWith('/bad'))).toMatchObject({
      success: false,
      exception: 'the page could not be processed: Error: cannot parse this one',
    });
    expect(r.pages.find((p) => p.url.endsWith('/good'))).toMatchObject({ success: true, data: { fine: true } });
    expect(r.frontier.retried).toEqual([]);
    expect(r.frontier.released).toEqual([]);
    expect(r.frontier.acked.map((a) => a.outcome).sort()).toEqual(['done', 'fail']);
  });

  it('sends data over MAX_DATA_BYTES (or not JSON) as null with data_truncated', async () => {
    const big: Spider = { name: 'big', parse: () => ({ data: 'x'.repeat(MAX_DATA_BYTES + 1) }) };
    const bigint: Spider = { name: 'bigint', parse: () => ({ data: { n: 1n } }) };
    for (const spider of [big, bigint]) {
      const r = await crawl(
        [lease('http://a.example/', { crawl: { ...SETTINGS, spiderid: spider.name } })],
        (q) => htmlResponse(q.url, 'x'),
        { plugins: [spider] },
      );
      expect(r.pages[0]).toMatchObject({ success: true, data: null, data_truncated: true });
    }
  });

  it('cuts data to null before attrs when the page message would not fit otherwise', async () => {
    const fat: Spider = { name: 'fat', parse: () => ({ data: 'd'.repeat(20_000) }) };
    const r = await crawl(
      [lease('http://a.example/', { crawl: { ...SETTINGS, spiderid: 'fat', attrs: { keep: 'me' } } })],
      (q) => htmlResponse(q.url, 'x'),
      { plugins: [fat], maxMessageBytes: 10_000 },
    );
    expect(r.pages[0]).toMatchObject({ success: true, data: null, data_truncated: true, attrs: { keep: 'me' } });
    expect(r.pages[0]?.attrs_truncated).toBeUndefined();
  });
});

describe('Crawler: leasing across spider types', () => {
  /** link has the scripted leases; every other type has no work at all. Records which type each lease asked. */
  class TwoTypeFrontier extends ScriptedFrontier {
    readonly asked: string[] = [];
    override async leaseMany(spider: string, max: number): Promise<LeaseMany> {
      this.asked.push(spider);
      return spider === 'link'
        ? super.leaseMany(spider, max)
        : { leases: [], nextDueMs: null, left: 'none', skipped: 0 };
    }
  }

  it('asks a spider type that had no work at all again only after scoutPollMs, however many pages the others have', async () => {
    const frontier = new TwoTypeFrontier(Array.from({ length: 30 }, (_, i) => lease(`http://a.example/${i}`)));
    const crawler = testCrawler(frontier, { spiderTypes: ['link', 'wandering'], scoutPollMs: 60_000 });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    expect(frontier.acked).toHaveLength(30);
    // Every other lease starts at wandering (the types take turns): only the first of them asks it.
    expect(frontier.asked.filter((s) => s === 'wandering')).toHaveLength(1);
    expect(frontier.asked.filter((s) => s === 'link').length).toBeGreaterThanOrEqual(30);
  });

  it('asks a type that stays empty less and less often (doubling up to QUIET_MAX_MS), and still finds its new work', async () => {
    const frontier = new ScriptedFrontier([]);
    const asked: number[] = [];
    const leaseMany = frontier.leaseMany.bind(frontier);
    frontier.leaseMany = (spider, max, options) => {
      asked.push(Date.now());
      return leaseMany(spider, max, options);
    };
    const crawler = testCrawler(frontier, { concurrency: 4, scoutPollMs: 20, idlePollMs: 1000 });
    crawler.start();
    const started = Date.now();
    await new Promise((r) => setTimeout(r, 1300));
    // Pauses of 20, 40, 80, 160, 320, 500, 500 ms: ~7 asks in 1.3 s, where a fixed 20 ms pause asks ~65 times.
    expect(asked.length).toBeGreaterThanOrEqual(5);
    expect(asked.length).toBeLessThanOrEqual(10);
    const last = asked.at(-1) as number;
    expect(last - (asked.at(-2) as number)).toBeLessThanOrEqual(QUIET_MAX_MS + 100);
    frontier.add([lease('http://a.example/new')]);
    const fed = Date.now();
    await waitFor(() => frontier.settled);
    await crawler.stop(1000);
    expect(frontier.acked).toHaveLength(1);
    expect(Date.now() - fed).toBeLessThan(QUIET_MAX_MS + 400);
    expect(last).toBeGreaterThan(started);
  });
});

describe('Crawler: delivery in the background', () => {
  /** A sink that holds every send until opened, as a slow broker would. */
  class GatedSink extends FakeSink {
    #open!: () => void;
    readonly #gate = new Promise<void>((resolve) => {
      this.#open = resolve;
    });
    open(): void {
      this.#open();
    }
    override async send(batch: SentBatch): Promise<void> {
      await this.#gate;
      await super.send(batch);
    }
  }

  /**
   * A crawler over `n` leases whose Kafka stalls: started, and given 100 ms to fill what may wait for Kafka. `drain`
   * opens Kafka, waits (up to 5 s) until every lease is acked, and stops the crawler.
   */
  async function stalledCrawl(n: number, options: Partial<CrawlerOptions>) {
    const frontier = new ScriptedFrontier(Array.from({ length: n }, (_, i) => lease(`http://a.example/${i}`)));
    const sink = new GatedSink();
    const counting = countingFetcher();
    const crawler = testCrawler(frontier, { fetcher: counting.fetcher, sink, produceLingerMs: 0, ...options });
    crawler.start();
    await new Promise((r) => setTimeout(r, 100));
    const drain = async () => {
      sink.open();
      const deadline = Date.now() + 5_000;
      while (frontier.acked.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
      await crawler.stop(1000);
    };
    return { frontier, counting, drain };
  }

  it('fetches the next page while earlier pages wait for Kafka, at most maxDelivering of them, and stop waits for them all', async () => {
    const frontier = new ScriptedFrontier(Array.from({ length: 6 }, (_, i) => lease(`http://a.example/${i}`)));
    const sink = new GatedSink();
    const counting = countingFetcher();
    const crawler = testCrawler(frontier, {
      fetcher: counting.fetcher,
      sink,
      maxDelivering: 2,
      produceLingerMs: 0,
    });
    crawler.start();
    const deadline = Date.now() + 5_000;
    while (counting.count() < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await new Promise((r) => setTimeout(r, 50));
    // One worker: page 0 and page 1 wait for Kafka in the background, page 2 is processed and waits for room.
    expect(counting.count()).toBe(3);
    expect(frontier.acked).toEqual([]);
    const stopped = crawler.stop(5_000);
    sink.open();
    await stopped;
    // Stop let the three fetched pages be published and acked, and leased nothing more.
    expect(frontier.acked.map((a) => a.handle)).toHaveLength(3);
    expect(sink.sent.flatMap((b) => b.flatMap((t) => t.messages))).toHaveLength(3);
    expect(counting.count()).toBe(3);
  });

  it('holds at most maxDelivering pages plus one per worker while Kafka stalls, then delivers every page', async () => {
    const { frontier, counting, drain } = await stalledCrawl(12, { concurrency: 4, maxDelivering: 2 });
    // Each of the 4 workers waits with one processed page; 2 more wait for Kafka.
    expect(counting.count()).toBe(6);
    expect(frontier.acked).toEqual([]);
    await drain();
    expect(new Set(frontier.acked.map((a) => a.handle)).size).toBe(12);
    expect(counting.count()).toBe(12);
  });

  it('lets DELIVERIES_PER_FETCH pages per worker wait for Kafka by default', async () => {
    const { frontier, counting, drain } = await stalledCrawl(20, { concurrency: 2 });
    // 2 × DELIVERIES_PER_FETCH wait for Kafka, and each of the 2 workers holds one more processed page.
    expect(counting.count()).toBe(2 * DELIVERIES_PER_FETCH + 2);
    expect(frontier.acked).toEqual([]);
    await drain();
    expect(new Set(frontier.acked.map((a) => a.handle)).size).toBe(20);
  });
});

describe('Crawler: one lease call for the workers that wait at once', () => {
  class SlowFrontier extends ScriptedFrontier {
    override async leaseMany(spider: string, max: number): Promise<LeaseMany> {
      await new Promise((r) => setTimeout(r, 5));
      return super.leaseMany(spider, max);
    }
  }

  it('workers asking while a lease call is under way are served by the next call, up to MAX_LEASE_BATCH at once', async () => {
    const frontier = new SlowFrontier(
      Array.from({ length: 4 * MAX_LEASE_BATCH }, (_, i) => lease(`http://a.example/${i}`)),
    );
    const crawler = testCrawler(frontier, { concurrency: MAX_LEASE_BATCH + 4 });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    const handles = frontier.acked.map((a) => a.handle);
    expect(new Set(handles).size).toBe(4 * MAX_LEASE_BATCH);
    expect(handles).toHaveLength(4 * MAX_LEASE_BATCH);
    // The first call is made for the first worker alone; the others wait for it and are served together.
    expect(frontier.asks[0]).toBe(1);
    expect(frontier.asks[1]).toBe(MAX_LEASE_BATCH);
    expect(Math.max(...frontier.asks)).toBe(MAX_LEASE_BATCH);
    expect(frontier.asks.length).toBeLessThan(2 * MAX_LEASE_BATCH);
  });
});

describe('Crawler: one idle worker polls, the others sleep until work appears', () => {
  it('64 idle workers make about one lease call per poll, and a burst of work still fills their slots', async () => {
    const frontier = new ScriptedFrontier([]);
    // Nothing due now, but something in a while (the retries of a dead host): every idle worker would wake to ask.
    frontier.dueLaterMs = 5_000;
    const crawler = testCrawler(frontier, {
      concurrency: 64,
      idlePollMs: 100,
      scoutPollMs: 25,
      fetcher: {
        fetch: async (q) => {
          await new Promise((r) => setTimeout(r, 30));
          return htmlResponse(q.url, 'ok');
        },
        close: async () => undefined,
      },
    });
    crawler.start();
    await new Promise((r) => setTimeout(r, 400));
    // Idle for 400 ms: one poller whose pause doubles from 25 ms (25, 50, 100, 200) is ~5 calls; one every 25 ms
    // would be ~16; each of 64 workers asking every 100 ms ~256.
    const idleCalls = frontier.asks.length;
    expect(idleCalls).toBeGreaterThanOrEqual(3);
    expect(idleCalls).toBeLessThanOrEqual(8);
    frontier.add(
      Array.from({ length: 300 }, (_, i) => lease(`http://d${i % 30}.example/${i}`, { domain: `d${i % 30}.example` })),
    );
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, crawler.slotsInUse);
    }, 2);
    await waitFor(() => frontier.settled);
    clearInterval(sampler);
    await crawler.stop(1000);
    expect(frontier.acked).toHaveLength(300);
    // The poller's lease wakes two more, each of which wakes two more when it leases: the slots fill.
    expect(peak).toBeGreaterThanOrEqual(48);
  });
});

describe('Crawler: leasing ahead when busy', () => {
  /** Records which leases it handed out. */
  class CountingFrontier extends ScriptedFrontier {
    readonly handedOut: string[] = [];
    override async leaseMany(spider: string, max: number): Promise<LeaseMany> {
      const r = await super.leaseMany(spider, max);
      this.handedOut.push(...r.leases.map((l) => l.handle));
      return r;
    }
  }

  it('a busy crawler takes several requests per lease call, beyond the workers waiting, and crawls each once', async () => {
    const frontier = new CountingFrontier(Array.from({ length: 300 }, (_, i) => lease(`http://a.example/${i}`)));
    // Pages take 1 to 4 ms, so the workers come back one or two at a time, not all together.
    let n = 0;
    const crawler = testCrawler(frontier, {
      concurrency: 8,
      fetcher: {
        fetch: async (q) => {
          await new Promise((r) => setTimeout(r, 1 + (n++ % 4)));
          return htmlResponse(q.url, 'ok');
        },
        close: async () => undefined,
      },
    });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    const handles = frontier.acked.map((a) => a.handle);
    expect(new Set(handles).size).toBe(300);
    expect(handles).toHaveLength(300);
    // Without leasing ahead a call asks for the workers waiting at once, one or two here: 197 calls for the 300
    // pages before leasing ahead, 93 with it (the buffer is refilled once half empty, so each call brings several).
    expect(frontier.asks.length).toBeLessThan(140);
  });

  it('a crawler taking a request less often than every LEASE_AHEAD_MS leases only for the workers that wait', async () => {
    const frontier = new CountingFrontier(Array.from({ length: 8 }, (_, i) => lease(`http://a.example/${i}`)));
    const slow: CrawlerOptions['fetcher'] = {
      fetch: async (q) => {
        await new Promise((r) => setTimeout(r, 3 * LEASE_AHEAD_MS));
        return htmlResponse(q.url, 'ok');
      },
      close: async () => undefined,
    };
    const crawler = testCrawler(frontier, { concurrency: 1, fetcher: slow });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    expect(frontier.acked).toHaveLength(8);
    expect(frontier.asks.slice(0, 8)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
  });

  it('stop sends requests leased ahead back to their queue unfetched: each handed-out request is acked or released once', async () => {
    const frontier = new CountingFrontier(Array.from({ length: 400 }, (_, i) => lease(`http://a.example/${i}`)));
    const fetched: string[] = [];
    const crawler = testCrawler(frontier, {
      concurrency: 4,
      fetcher: {
        fetch: async (q) => {
          fetched.push(q.url);
          return htmlResponse(q.url, 'ok');
        },
        close: async () => undefined,
      },
    });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (frontier.acked.length < 60 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    await crawler.stop(1000);

    const acked = frontier.acked.map((a) => a.handle);
    expect(frontier.released.length).toBeGreaterThan(0);
    expect([...acked, ...frontier.released].sort()).toEqual([...frontier.handedOut].sort());
    expect(new Set(fetched).size).toBe(fetched.length);
    expect(fetched).toHaveLength(acked.length);
  });
});

describe('Crawler: the acks of one Kafka batch go together', () => {
  it('acks pages without children in batches (one ackMany per turn), each page once and after it was sent', async () => {
    const leases = Array.from({ length: 24 }, (_, i) => lease(`http://a.example/${i}`, { depth: 1 }));
    const frontier = new ScriptedFrontier(leases);
    const sink = new OrderedSink(frontier.events);
    const crawler = testCrawler(frontier, { concurrency: 8, produceLingerMs: 5, sink });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    expect(frontier.acked.map((a) => a.handle).sort()).toEqual(leases.map((l) => l.handle).sort());
    expect(frontier.ackBatches.reduce((a, b) => a + b, 0)).toBe(24);
    expect(Math.max(...frontier.ackBatches)).toBeGreaterThan(1);
    expect(frontier.ackBatches.length).toBeLessThan(24);
    // Every ack comes after a send (the page is stored before it is acked).
    const firstSend = frontier.events.findIndex((e) => e.startsWith('send '));
    expect(firstSend).toBeGreaterThanOrEqual(0);
    expect(frontier.events.findIndex((e) => e.startsWith('ack '))).toBeGreaterThan(firstSend);
  });

  it('when Redis refuses a batch of acks as poison, acks each alone so only the one at fault fails', async () => {
    class RefusingFrontier extends ScriptedFrontier {
      override async ackMany(): Promise<AckResult[]> {
        throw Object.assign(new Error('ERR user_script:1: bad member'), { name: 'ReplyError' });
      }
    }
    const leases = Array.from({ length: 12 }, (_, i) => lease(`http://a.example/${i}`, { depth: 1 }));
    const frontier = new RefusingFrontier(leases);
    const crawler = testCrawler(frontier, { concurrency: 6, produceLingerMs: 5 });
    crawler.start();
    const deadline = Date.now() + 10_000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    expect(frontier.acked.map((a) => a.handle).sort()).toEqual(leases.map((l) => l.handle).sort());
    expect(frontier.acked.every((a) => a.outcome === 'done')).toBe(true);
  });
});

describe('Crawler: page budgets (issue 30 defects 2 and 3)', () => {
  const PLUG = { ...SETTINGS, spiderid: 'plug' };
  const plugLease = (url: string, retries = 0) =>
    lease(url, { crawl: PLUG, retries, partition: { prefix: 't', scope: 'plug', partition: 0, spider: 'plug' } });
  /** A sandbox of one plugin type whose pages answer as `answer` says. */
  const sandboxOf = (answer: (url: string) => Promise<SandboxResult>): CrawlerOptions['sandbox'] => ({
    spiders: new Set(['plug']),
    run: (_spider, request) => answer(request.url),
  });
  const plugSpider: Spider = {
    name: 'plug',
    parse: () => {
      throw new Error('plugin code must run in the sandbox, never here');
    },
  };

  it('an async parse that never settles is a failed try at the budget, and its one slot serves the next request', async () => {
    const stuck = lease('http://a.example/stuck');
    const next = lease('http://a.example/next');
    const frontier = new ScriptedFrontier([stuck, next]);
    const sink = new FakeSink();
    const spider: Spider = {
      name: 'link',
      parse: ({ request }) => (request.url.endsWith('stuck') ? new Promise(() => undefined) : Promise.resolve({})),
    };
    const crawler = testCrawler(frontier, { sink, parseTimeoutMs: 50, spiders: new Map([['link', spider]]) });
    crawler.start();
    const deadline = Date.now() + 5000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    expect(frontier.retried.map((x) => x.handle)).toEqual([stuck.handle]);
    expect(sink.values<PageItem>(FIREHOSE).map((p) => p.url)).toEqual([next.url]);
  });

  it('gives up a page whose parse never settles after its retries, with the budget as the reason', async () => {
    const l = lease('http://a.example/forever', { retries: 3 });
    const frontier = new ScriptedFrontier([l]);
    const sink = new FakeSink();
    const crawler = testCrawler(frontier, {
      sink,
      retryTimes: 3,
      parseTimeoutMs: 50,
      spiders: new Map([['link', { name: 'link', parse: () => new Promise(() => undefined) } as Spider]]),
    });
    crawler.start();
    const deadline = Date.now() + 5000;
    while (!frontier.settled && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    await crawler.stop(1000);
    const pages = sink.values<PageItem>(FIREHOSE);
    expect(pages.map((p) => [p.url, p.success, p.exception])).toEqual([
      [l.url, false, 'spider "link": parse did not finish within 50 ms (CRAWLER_PARSE_TIMEOUT_MS)'],
    ]);
    expect(frontier.acked).toEqual([{ handle: l.handle, outcome: 'fail' }]);
  });

  it('runs a plugin spider in the sandbox: its data, attrs and follow entries become the page and its children', async () => {
    const l = plugLease('http://a.example/p');
    const r = await crawl([l], (q) => htmlResponse(q.url, '<a href="/a">a</a>'), {
      plugins: [plugSpider],
      sandbox: sandboxOf(async () => ({
        wantsLinks: false,
        dataJson: '{"k":1}',
        follow: [{ url: 'http://a.example/child' }],
        followDropped: 0,
        attrs: { mine: true },
      })),
    });
    expect(r.pages).toHaveLength(1);
    expect(r.pages[0]).toMatchObject({ url: l.url, success: true, data: { k: 1 }, attrs: { mine: true }, links: [] });
    expect(r.frontier.enqueued).toEqual([{ spider: 'plug', urls: ['http://a.example/child'] }]);
  });

  it("retries a page whose plugin overran its budget in the sandbox, and gives it up after the last retry with the sandbox's reason", async () => {
    const first = plugLease('http://a.example/loop');
    const last = plugLease('http://a.example/loop-again', 3);
    const reason = 'spider "plug": parse ran for more than 100 ms (its time budget, CRAWLER_PARSE_TIMEOUT_MS)';
    const r = await crawl([first, last], (q) => htmlResponse(q.url, 'ok'), {
      plugins: [plugSpider],
      sandbox: sandboxOf(async () => {
        throw new SpiderBudgetError(reason);
      }),
    });
    expect(r.frontier.retried.map((x) => x.handle)).toEqual([first.handle]);
    expect(r.pages.map((p) => [p.url, p.success, p.exception])).toEqual([[last.url, false, reason]]);
  });

  it('a plugin error from the sandbox stays poison: a success:false page at once, not retried', async () => {
    const l = plugLease('http://a.example/bug');
    const r = await crawl([l], (q) => htmlResponse(q.url, 'ok'), {
      plugins: [plugSpider],
      sandbox: sandboxOf(async () => {
        throw new Error('plugin bug');
      }),
    });
    expect(r.frontier.retried).toEqual([]);
    expect(r.pages.map((p) => [p.success, p.exception])).toEqual([
      [false, 'the page could not be processed: Error: plugin bug'],
    ]);
  });
});

describe('Crawler: leasing stops while delivery is down (issue 30 defect 4)', () => {
  /** A sink refusing every send as Kafka does when the broker is gone, until `up()`. */
  class DownSink extends FakeSink {
    #down = true;
    attempts = 0;
    up(): void {
      this.#down = false;
    }
    override async send(batch: SentBatch): Promise<void> {
      this.attempts++;
      if (this.#down)
        throw Object.assign(new Error('Connection error: connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' });
      await super.send(batch);
    }
  }

  it('fetches only a probe now and then while Kafka is down, keeps what it fetched, and publishes every page once it is back', async () => {
    const n = 200;
    const frontier = new ScriptedFrontier(Array.from({ length: n }, (_, i) => lease(`http://a.example/${i}`)));
    const sink = new DownSink();
    const counting = countingFetcher();
    const log = new RecordingLog();
    const crawler = testCrawler(frontier, {
      fetcher: counting.fetcher,
      sink,
      log,
      concurrency: 4,
      produceLingerMs: 0,
    });
    crawler.start();
    await new Promise((r) => setTimeout(r, 2000));
    const fetchedWhileDown = counting.count();
    // The first pages in flight, then one probe per backoff (0.5 s, 1 s, ...): nowhere near the 200 an ungated
    // crawler fetched and released within the same 2 s.
    expect(fetchedWhileDown).toBeLessThan(16);
    // Kept, never released: each page fetched is published once Kafka is back, and fetched only that once.
    expect(frontier.released).toEqual([]);
    expect(frontier.acked).toEqual([]);
    expect(crawler.gateClosings).toBe(1);
    expect(log.lines.some((l) => l.message.startsWith('delivery failing; leasing stops'))).toBe(true);
    sink.up();
    const deadline = Date.now() + 10_000;
    while (frontier.acked.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await crawler.stop(1000);
    expect(frontier.acked).toHaveLength(n);
    expect(frontier.released).toEqual([]);
    expect(counting.count()).toBe(n);
    expect(log.lines.some((l) => l.message === 'delivery works again; leasing resumes')).toBe(true);
  }, 20_000);
});

describe('Crawler: adaptive concurrency (issue 32)', () => {
  const IDLE: LoadSignals = { loopDelayMs: 1, cpuShare: 0.1, heapShare: 0.1, rssShare: 0.1, bodyShare: 0 };

  /** A fetcher whose pages take `ms` (a slow site), recording how many fetches run at once. */
  function slowFetcher(ms: number) {
    const seen = { now: 0, peak: 0, peaks: [] as number[] };
    const fetcher: CrawlerOptions['fetcher'] = {
      fetch: async (q) => {
        seen.now++;
        seen.peak = Math.max(seen.peak, seen.now);
        await new Promise((r) => setTimeout(r, ms));
        seen.now--;
        return htmlResponse(q.url, 'ok');
      },
      close: async () => undefined,
    };
    return { fetcher, seen };
  }

  it('grows its fetch slots past the start while every slot is busy, and shrinks them when a budget is exceeded', async () => {
    const frontier = new ScriptedFrontier(Array.from({ length: 3000 }, (_, i) => lease(`http://a.example/${i}`)));
    const { fetcher, seen } = slowFetcher(20);
    const controller = new ConcurrencyController({ min: 2, max: 64, initial: 4 });
    let signals = IDLE;
    // One domain: its per-domain cap lifted, so the slots are all that bound it.
    const crawler = testCrawler(frontier, {
      fetcher,
      domainConcurrency: 1000,
      adaptive: { controller, signals: () => signals, tickMs: 15 },
    });
    crawler.start();
    try {
      await waitFor(() => controller.limit === 64);
      seen.peak = 0;
      await new Promise((r) => setTimeout(r, 100));
      // Every slot of the ceiling in use at once, never more.
      expect(seen.peak).toBeGreaterThan(32);
      expect(seen.peak).toBeLessThanOrEqual(64);
      signals = { ...IDLE, rssShare: 0.95 };
      await waitFor(() => controller.limit === 2);
      await new Promise((r) => setTimeout(r, 60));
      seen.peak = 0;
      await new Promise((r) => setTimeout(r, 100));
      expect(seen.peak).toBeLessThanOrEqual(2);
      expect(crawler.slots).toBe(2);
    } finally {
      await crawler.stop(1000);
    }
    expect(frontier.released.length + frontier.acked.length).toBeGreaterThan(0);
  });

  it('holds its slots while they are not all in use (work arrives slower than the slots take it)', async () => {
    // 6 requests, 4 slots: after the first turn the crawler never has every slot busy again.
    const frontier = new ScriptedFrontier(Array.from({ length: 6 }, (_, i) => lease(`http://a.example/${i}`)));
    const controller = new ConcurrencyController({ min: 2, max: 64, initial: 4 });
    const crawler = testCrawler(frontier, { adaptive: { controller, signals: () => IDLE, tickMs: 10 } });
    crawler.start();
    try {
      await waitFor(() => frontier.settled);
      await new Promise((r) => setTimeout(r, 100));
      // At most one growth (the first turn had all 4 busy: slow start doubles once), never more.
      expect(controller.limit).toBeLessThanOrEqual(8);
    } finally {
      await crawler.stop(1000);
    }
  });
});

describe('Crawler: the load report its heartbeat carries (issue 32)', () => {
  const IDLE: LoadSignals = { loopDelayMs: 1, cpuShare: 0.1, heapShare: 0.1, rssShare: 0.1, bodyShare: 0 };

  async function lastReport(stats: MemoryStatsStore): Promise<CrawlerLoad | undefined> {
    const ids = await stats.live(CRAWLER_TASK_KIND, Date.now(), 300_000);
    const text = (await stats.reports(CRAWLER_TASK_KIND, ids))['test:1'];
    return text === undefined ? undefined : parseCrawlerLoad(text);
  }

  it('reports pages/s, slots in use, its slot limit and the budget that bounds it, beat after beat', async () => {
    const frontier = new ScriptedFrontier(Array.from({ length: 100_000 }, (_, i) => lease(`http://a.example/${i}`)));
    const fetcher: CrawlerOptions['fetcher'] = {
      fetch: async (q) => {
        await new Promise((r) => setTimeout(r, 5));
        return htmlResponse(q.url, 'ok');
      },
      close: async () => undefined,
    };
    const stats = new MemoryStatsStore();
    // The CPU near its budget all along: the slots grow one a tick, bound by CPU.
    const controller = new ConcurrencyController({ min: 2, max: 64, initial: 8 });
    const signals = { ...IDLE, cpuShare: 0.8 };
    const crawler = testCrawler(frontier, {
      fetcher,
      stats,
      adaptive: { controller, signals: () => signals, tickMs: 10 },
      heartbeatMs: 50,
    });
    crawler.start();
    try {
      await waitFor(() => crawler.pages > 200);
      await new Promise((r) => setTimeout(r, 120));
      const r = await lastReport(stats);
      expect(r?.pagesPerSec).toBeGreaterThan(0);
      expect(r?.slotsInUse).toBeGreaterThan(0);
      expect(r?.slotLimit).toBeGreaterThan(8);
      expect(r?.slotLimit).toBeLessThanOrEqual(64);
      expect(r?.bound).toBe('cpu');
      expect(r?.saturated).toBeGreaterThan(0.5);
      expect(r?.load).toBeCloseTo(0.8 / 0.9, 2);
      expect(Date.now() - (r?.at ?? 0)).toBeLessThan(1000);
    } finally {
      await crawler.stop(1000);
    }
  }, 20_000);

  it('fixed slots report too: bound by work when they are not all busy', async () => {
    const frontier = new ScriptedFrontier(Array.from({ length: 3 }, (_, i) => lease(`http://a.example/${i}`)));
    const stats = new MemoryStatsStore();
    const crawler = testCrawler(frontier, { stats, concurrency: 4, heartbeatMs: 50 });
    crawler.start();
    try {
      await waitFor(() => frontier.settled);
      await new Promise((r) => setTimeout(r, 700));
      const r = await lastReport(stats);
      expect(r).toMatchObject({ slotLimit: 4, bound: 'work', saturated: 0, spiders: ['link'] });
      expect(r?.pagesPerSec).toBeGreaterThan(0);
      expect(r?.load).toBeLessThan(1);
    } finally {
      await crawler.stop(1000);
    }
  });
});

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('Crawler: per-domain in-flight cap (issue 32)', () => {
  it('a dead site holds at most its cap of slots: the other sites are crawled meanwhile, then its requests', async () => {
    // 40 requests of a site that does not answer until released, queued before 20 of a site that does.
    const dead = Array.from({ length: 40 }, (_, i) => lease(`http://dead.example/${i}`, { domain: 'dead.example' }));
    const live = Array.from({ length: 20 }, (_, i) => lease(`http://live.example/${i}`, { domain: 'live.example' }));
    const frontier = new ScriptedFrontier([...dead, ...live]);
    let deadNow = 0;
    let deadPeak = 0;
    let open!: () => void;
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    const crawler = testCrawler(frontier, {
      concurrency: 32,
      domainConcurrency: 4,
      fetcher: {
        async fetch(q) {
          if (!q.url.includes('dead.example')) return htmlResponse(q.url, 'ok');
          deadNow++;
          deadPeak = Math.max(deadPeak, deadNow);
          await opened;
          deadNow--;
          return htmlResponse(q.url, 'late');
        },
        close: async () => undefined,
      },
    });
    crawler.start();
    try {
      await waitFor(() => frontier.acked.length >= 20);
      // Every live page is done while the dead site holds a few slots: at most 2 x 4 - 1 (4 once listed at its cap).
      expect(deadNow).toBeGreaterThanOrEqual(4);
      expect(deadNow).toBeLessThanOrEqual(7);
      expect(frontier.acked.every((a) => live.some((l) => l.handle === a.handle))).toBe(true);
      expect(frontier.excludes.some((e) => e.includes('dead.example'))).toBe(true);
      open();
      await waitFor(() => frontier.settled);
      expect(new Set(frontier.acked.map((a) => a.handle)).size).toBe(60);
      expect(deadPeak).toBeLessThanOrEqual(7);
    } finally {
      open();
      await crawler.stop(1000);
    }
  });
});

describe('Crawler: a crawl’s tail on a domain at its cap', () => {
  it('each request that ends lets one more of the domain start, without waking workers that would find nothing', async () => {
    const drip = Array.from({ length: 12 }, (_, i) => lease(`http://drip.example/${i}`, { domain: 'drip.example' }));
    const frontier = new ScriptedFrontier(drip);
    const pending: (() => void)[] = [];
    let open = false;
    const crawler = testCrawler(frontier, {
      concurrency: 16,
      domainConcurrency: 2,
      idlePollMs: 10_000,
      scoutPollMs: 10_000,
      fetcher: {
        async fetch(q) {
          if (!open) await new Promise<void>((resolve) => pending.push(resolve));
          return htmlResponse(q.url, 'ok');
        },
        close: async () => undefined,
      },
    });
    crawler.start();
    try {
      await waitFor(() => pending.length === 3);
      await new Promise((r) => setTimeout(r, 30));
      const asked = frontier.asks.length;
      const starts: number[] = [];
      for (let acked = 1; acked <= 8; acked++) {
        pending.shift()?.();
        await waitFor(() => frontier.acked.length === acked);
        await new Promise((r) => setTimeout(r, 30));
        starts.push(pending.length);
      }
      // The domain stays at its cap (2 x cap - 1 right after a lease call: lib/crawl/crawler/leasing.ts) while requests end.
      expect(starts.every((n) => n >= 2)).toBe(true);
      // Two releases take it from 3 in flight to 1 under the cap: the worker whose request ended asks once (only the
      // capped domain is ready), then the ending worker and the one it woke take one each. 12 calls for 8 ends; a
      // lease that woke WAKE_ON_LEASE more workers each time, which found only the capped domain, made 20.
      expect(frontier.asks.length - asked).toBeLessThanOrEqual(14);
      open = true;
      for (const resolve of pending.splice(0)) resolve();
      await waitFor(() => frontier.settled);
    } finally {
      open = true;
      for (const resolve of pending.splice(0)) resolve();
      await crawler.stop(1000);
    }
  });
});

describe('Crawler: a publish that hangs (the broker gone, kafkajs still retrying)', () => {
  it('closes the delivery gate after PUBLISH_STALL_MS and stops leasing until a page message is stored', async () => {
    const frontier = new ScriptedFrontier(
      Array.from({ length: 400 }, (_, i) => lease(`http://h${i % 40}.example/${i}`)),
    );
    let open!: () => void;
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    class HangingSink extends FakeSink {
      override async send(batch: SentBatch): Promise<void> {
        await opened;
        await super.send(batch);
      }
    }
    const { fetcher, count } = countingFetcher();
    const log = new RecordingLog();
    const crawler = testCrawler(frontier, { fetcher, sink: new HangingSink(), log, concurrency: 4 });
    const started = Date.now();
    crawler.start();
    try {
      await waitFor(
        () => log.at('warn').some((l) => l.message === 'delivery failing; leasing stops until a probe gets through'),
        PUBLISH_STALL_MS + 2000,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(PUBLISH_STALL_MS - 50);
      const warn = log.at('warn').find((l) => l.message.startsWith('delivery failing'));
      expect(String(warn?.fields?.error)).toMatch(/Kafka has not stored a page message for \d+ ms/);
      // Leasing stopped: no fetch but at most the one probe while the sink hangs.
      const fetched = count();
      await new Promise((r) => setTimeout(r, 600));
      expect(count() - fetched).toBeLessThanOrEqual(1);
      open();
      await waitFor(() => frontier.settled, 20_000);
      expect(log.at('info').map((l) => l.message)).toContain('delivery works again; leasing resumes');
      expect(frontier.acked).toHaveLength(400);
    } finally {
      open();
      await crawler.stop(1000);
    }
  });
});
