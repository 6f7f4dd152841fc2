/**
 * The in-memory frontier of the unit tier (docs/style.md §9): {@link FakeFrontier}, the frontier the monitors use,
 * with the semantics its interface documents (frontier.ts module doc, enqueue.lua, stop.lua) in the simplest form,
 * held to the real frontier's answers by test/integration/frontier-contract.test.ts, and the entries it takes
 * ({@link seed}, {@link child}). It has a switch to fail as when Redis is unreachable.
 */
import { registrableDomain } from '../../lib/crawl/domain.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import { InfrastructureError } from '../../lib/errors.ts';
import type {
  CrawlInfo,
  CrawlRef,
  CrawlSettings,
  DomainAction,
  EnqueueOutcome,
  FrontierItem,
  QueueRequest,
  QueueSummary,
} from '../../lib/frontier-model.ts';
import { seedEntry } from '../../lib/monitor/kafka-monitor.ts';
import type { FrontierApi } from '../../lib/ports.ts';
import type { CrawlRequest } from '../../lib/schemas/index.ts';

/** A seed entry as the kafka-monitor makes it (seedEntry), with the defaults validation fills. */
export function seed(fields: Partial<CrawlRequest> & Pick<CrawlRequest, 'appid' | 'crawlid' | 'url'>): FrontierItem {
  return seedEntry({ spiderid: 'link', priority: 1, maxdepth: 0, expires: 0, ...fields } as CrawlRequest);
}

/** A child entry of an existing crawl (no settings: refused when the crawl has ended). */
export function child(
  crawl: { appid: string; crawlid: string },
  url: string,
  priority: number,
  depth = 1,
): FrontierItem {
  return {
    crawl: { appid: crawl.appid, crawlid: crawl.crawlid },
    request: { url, domain: registrableDomain(url), fingerprint: requestFingerprint(url), priority, depth },
  };
}

interface FakeCrawl {
  settings: CrawlSettings;
  /** Fingerprints (hex) ever accepted: the per-crawl dupefilter. */
  seen: Set<string>;
  queued: QueueRequest[];
  /** Requests accepted per domain, for `domain_max_pages`. */
  perDomain: Map<string, number>;
  /** Requests crawled (see {@link FakeFrontier.finishCrawl}). */
  done?: number;
}

/** A call of {@link FakeFrontier.configureDomain}. */
export interface DomainConfigCall {
  action: DomainAction;
  domain: string;
  limits: { hits?: number; window?: number; scale?: number };
  now: number;
}

/**
 * The frontier in memory. Per crawl: a dupefilter on the fingerprint's hex, the queued requests, and the
 * settings of its seed (the first seed of the batch that registers it). Enqueue checks, in enqueue.lua's order:
 * stopped, unknown crawl, expired, duplicate, domain page cap; priorities are clamped as the Lua clamps them.
 * `stop` purges, counts and blacklists the crawl for `stopTtlMs`. Leases are not modelled; `reclaim` hands back
 * what {@link expireLeases} planted. test/integration/frontier-contract.test.ts runs the same scenarios against
 * this and the real frontier.
 */
export class FakeFrontier implements FrontierApi {
  /** Method names in call order, including calls that threw. */
  readonly calls: string[] = [];
  /** Every enqueue call that went through. */
  readonly enqueueCalls: { spider: string; items: FrontierItem[]; now: number }[] = [];
  /** Every configureDomain call that went through. */
  readonly domainConfigs: DomainConfigCall[] = [];
  /** When set, every call throws an {@link InfrastructureError}, as when Redis is unreachable. */
  down = false;
  readonly #stopTtlMs: number;
  #callsLeft: number | undefined;
  readonly #crawls = new Map<string, FakeCrawl>();
  readonly #stopped = new Map<string, number>();
  readonly #spiders = new Set<string>();
  readonly #expiredLeases = new Map<string, number>();

  /** @param options.stopTtlMs how long a stopped crawl refuses requests. @default 3600000 */
  constructor(options: { stopTtlMs?: number } = {}) {
    this.#stopTtlMs = options.stopTtlMs ?? 3_600_000;
  }

  /** Lets `calls` more calls succeed, then goes {@link down}. */
  goDownAfter(calls: number): void {
    this.#callsLeft = calls;
  }

  /** Plants `count` expired leases of a spider type for `reclaim` to return. */
  expireLeases(spider: string, count: number): void {
    this.#spiders.add(spider);
    this.#expiredLeases.set(spider, (this.#expiredLeases.get(spider) ?? 0) + count);
  }

  /** The queued requests of one crawl (empty when it is unknown or stopped). */
  queued(spider: string, appid: string, crawlid: string): QueueRequest[] {
    return [...(this.#crawls.get(crawlKey(spider, appid, crawlid))?.queued ?? [])];
  }

  /**
   * Crawls every queued request of a crawl, as the fleet would: the crawl stays known (its settings, its
   * dupefilter) with nothing queued, its requests counted as done.
   */
  finishCrawl(spider: string, appid: string, crawlid: string): void {
    const crawl = this.#crawls.get(crawlKey(spider, appid, crawlid));
    if (crawl === undefined) return;
    crawl.done = (crawl.done ?? 0) + crawl.queued.length;
    crawl.queued = [];
  }

  /** How many requests are queued in total, over every spider type and crawl. */
  totalQueued(): number {
    let n = 0;
    for (const c of this.#crawls.values()) n += c.queued.length;
    return n;
  }

  #enter(method: string): void {
    this.calls.push(method);
    if (this.#callsLeft !== undefined) {
      if (this.#callsLeft <= 0) this.down = true;
      else this.#callsLeft -= 1;
    }
    if (this.down)
      throw new InfrastructureError(`connect ECONNREFUSED 127.0.0.1:6379 (fake frontier down in ${method})`);
  }

  async enqueue(spider: string, items: FrontierItem[], now = Date.now()): Promise<EnqueueOutcome[]> {
    this.#enter('enqueue');
    this.enqueueCalls.push({ spider, items, now });
    if (items.length > 0) this.#spiders.add(spider);
    // A crawl's settings for the whole batch come from its first seed in it (Frontier.enqueue sends each crawl
    // once per script call), so a child ahead of its seed in one batch is not an unknown crawl.
    const seeds = new Map<string, CrawlSettings>();
    for (const { crawl } of items) {
      const key = crawlKey(spider, crawl.appid, crawl.crawlid);
      if (crawl.settings && !seeds.has(key)) seeds.set(key, crawl.settings);
    }
    return items.map(({ crawl, request }) => this.#enqueueOne(spider, crawl, request, now, seeds));
  }

  #enqueueOne(
    spider: string,
    ref: CrawlRef,
    request: QueueRequest,
    now: number,
    seeds: ReadonlyMap<string, CrawlSettings>,
  ): EnqueueOutcome {
    const key = crawlKey(spider, ref.appid, ref.crawlid);
    if ((this.#stopped.get(key) ?? 0) > now) return 'stopped';
    let crawl = this.#crawls.get(key);
    const settings = crawl?.settings ?? seeds.get(key);
    if (settings === undefined) return 'unknown_crawl';
    if (settings.expires > 0 && settings.expires * 1000 <= now) return 'expired';
    crawl ??= { settings, seen: new Set(), queued: [], perDomain: new Map() };
    const fp = request.fingerprint.toString('hex');
    if (crawl.seen.has(fp)) return 'duplicate';
    const pages = crawl.perDomain.get(request.domain) ?? 0;
    const cap = crawl.settings.domain_max_pages ?? 0;
    if (cap > 0 && pages >= cap) return 'capped';
    crawl.seen.add(fp);
    crawl.perDomain.set(request.domain, pages + 1);
    crawl.queued.push({ ...request, priority: clampPriority(request.priority) });
    this.#crawls.set(key, crawl);
    return 'queued';
  }

  async stop(
    spider: string,
    appid: string,
    crawlid: string,
    now = Date.now(),
  ): Promise<{ purged: number; settings: CrawlSettings | undefined }> {
    this.#enter('stop');
    const key = crawlKey(spider, appid, crawlid);
    this.#stopped.set(key, now + this.#stopTtlMs);
    const crawl = this.#crawls.get(key);
    if (crawl === undefined) return { purged: 0, settings: undefined };
    this.#crawls.delete(key);
    return { purged: crawl.queued.length, settings: crawl.settings };
  }

  async crawlInfo(spider: string, appid: string, crawlid: string, _now = Date.now()): Promise<CrawlInfo | undefined> {
    this.#enter('crawlInfo');
    const crawl = this.#crawls.get(crawlKey(spider, appid, crawlid));
    return crawl && infoOf(crawl);
  }

  async appInfo(spider: string, appid: string, _now = Date.now()): Promise<Record<string, CrawlInfo>> {
    this.#enter('appInfo');
    const out: Record<string, CrawlInfo> = {};
    for (const [key, crawl] of this.#crawls) {
      if (key.startsWith(`${spider}\0${appid}\0`)) out[crawl.settings.crawlid] = infoOf(crawl);
    }
    return out;
  }

  async configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number } = {},
    now = Date.now(),
  ): Promise<void> {
    this.#enter('configureDomain');
    this.domainConfigs.push({ action, domain, limits, now });
  }

  async spiders(): Promise<string[]> {
    this.#enter('spiders');
    return [...this.#spiders].sort();
  }

  async queueSummary(spider: string, top = 0): Promise<QueueSummary> {
    this.#enter('queueSummary');
    const per: Record<string, number> = {};
    for (const [key, crawl] of this.#crawls) {
      if (!key.startsWith(`${spider}\0`)) continue;
      for (const r of crawl.queued) per[r.domain] = (per[r.domain] ?? 0) + 1;
    }
    const all = Object.entries(per)
      .map(([domain, backlog]) => ({ domain, backlog }))
      .sort((a, b) => b.backlog - a.backlog || a.domain.localeCompare(b.domain));
    return { queued: all.reduce((s, d) => s + d.backlog, 0), domains: all.length, busiest: all.slice(0, top) };
  }

  async dueCrawls(spider: string, now = Date.now(), limit = 1000): Promise<CrawlSettings[]> {
    this.#enter('dueCrawls');
    const out: CrawlSettings[] = [];
    for (const [key, crawl] of this.#crawls) {
      const { expires } = crawl.settings;
      if (key.startsWith(`${spider}\0`) && expires > 0 && expires * 1000 <= now) out.push(crawl.settings);
    }
    return out.slice(0, limit);
  }

  /** Completed crawls to drop: set by a test; the fake just reports and forgets them. */
  readonly finished = new Map<string, number>();

  async sweepFinished(spider: string, _now = Date.now(), _limit = 1000): Promise<number> {
    this.#enter('sweepFinished');
    const n = this.finished.get(spider) ?? 0;
    this.finished.delete(spider);
    return n;
  }

  async reclaim(spider: string, _now = Date.now(), _limit = 1000): Promise<number> {
    this.#enter('reclaim');
    const n = this.#expiredLeases.get(spider) ?? 0;
    this.#expiredLeases.delete(spider);
    return n;
  }
}

/** A queued request's priority as the frontier stores it: clamped to -1023..1024 (includes/frontier.lua). */
function clampPriority(priority: number): number {
  return Math.min(1024, Math.max(-1023, priority));
}

function crawlKey(spider: string, appid: string, crawlid: string): string {
  return `${spider}\0${appid}\0${crawlid}`;
}

function infoOf(crawl: FakeCrawl): CrawlInfo {
  const domains: CrawlInfo['domains'] = {};
  for (const r of crawl.queued) {
    const d = domains[r.domain] ?? { priorities: {}, total: 0 };
    d.priorities[r.priority] = (d.priorities[r.priority] ?? 0) + 1;
    d.total += 1;
    domains[r.domain] = d;
  }
  return {
    settings: crawl.settings,
    queued: crawl.queued.length,
    leased: 0,
    done: crawl.done ?? 0,
    failed: 0,
    domains,
  };
}
