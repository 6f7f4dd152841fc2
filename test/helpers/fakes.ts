/**
 * In-memory fakes of our own seams (docs/style.md §9, unit tier): the frontier the monitors use, the message sink,
 * the stats and reply stores, a log that keeps its lines, and {@link testContext} to put them together
 * under a fixed clock. Each fake keeps the semantics its interface documents (frontier.ts module doc,
 * enqueue.lua, stop.lua) in the simplest form, and has a switch to fail like its infrastructure does.
 */
import { registrableDomain } from '../../lib/crawl/domain.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import type { FetchResult } from '../../lib/crawl/types.ts';
import { InfrastructureError } from '../../lib/errors.ts';
import type { MonitorContext } from '../../lib/monitor/context.ts';
import type {
  FrontierApi,
  Log,
  MessageSink,
  OutMessage,
  ReplyStore,
  StatsStore,
  UrlFrontierView,
} from '../../lib/ports.ts';
import { type CrawlKey, FAILURES_KEPT, type FailureNote } from '../../lib/redis/failure-log.ts';
import type {
  CrawlInfo,
  CrawlRef,
  CrawlSettings,
  DomainAction,
  EnqueueOutcome,
  QueueRequest,
} from '../../lib/redis/frontier-types.ts';
import { type MinuteCount, STATS_WINDOWS, type StatsCounts, type StatsIncrement } from '../../lib/redis/stats.ts';
import type { CrawlRequest } from '../../lib/schemas/index.ts';

/** The fixed clock of {@link testContext} (epoch ms, a whole second): the time of events/scheduled.json. */
export const TEST_NOW = Date.UTC(2026, 10, 22, 15, 0, 0);

/** {@link TEST_NOW} in epoch seconds, as replies carry it in `server_time`. */
export const TEST_NOW_SEC = TEST_NOW / 1000;

/** The node id of {@link testContext}. */
export const TEST_NODE_ID = 'monitor@test-host:4242';

/** One frontier entry, as `enqueue` takes it. */
export type FrontierItem = { crawl: CrawlRef; request: QueueRequest };

/** A seed entry: the crawl's settings (defaults filled as validation does) and its first request at depth 0. */
export function seed(fields: Partial<CrawlRequest> & Pick<CrawlRequest, 'appid' | 'crawlid' | 'url'>): FrontierItem {
  const { url, ...rest } = fields;
  const settings: CrawlSettings = { spiderid: 'link', priority: 1, maxdepth: 0, expires: 0, ...rest };
  return {
    crawl: { appid: settings.appid, crawlid: settings.crawlid, settings },
    request: {
      url,
      domain: registrableDomain(url),
      fingerprint: requestFingerprint(url),
      priority: settings.priority,
      depth: 0,
    },
  };
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

  async backlog(spider: string): Promise<Record<string, number>> {
    this.#enter('backlog');
    const out: Record<string, number> = {};
    for (const [key, crawl] of this.#crawls) {
      if (!key.startsWith(`${spider}\0`)) continue;
      for (const r of crawl.queued) out[r.domain] = (out[r.domain] ?? 0) + 1;
    }
    return out;
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

// Kafka's rule for topic names: what a real producer refuses, the fake refuses too.
const LEGAL_TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;

/** One topic's messages of one `send` call. */
export type SentBatch = { topic: string; messages: OutMessage[] }[];

/**
 * A message sink that keeps what it was sent. Like a kafkajs producer it refuses topic names Kafka
 * does not allow; with {@link down} set it throws as when Kafka is unreachable, and keeps nothing.
 */
export class FakeSink implements MessageSink {
  /** Every successful `send`, in order. */
  readonly sent: SentBatch[] = [];
  /** How many times `send` was called, successful or not. */
  sendCalls = 0;
  /** When set, `send` throws, as when Kafka is unreachable. */
  down = false;
  /**
   * Topics that do not exist: a send naming one fails as kafkajs's does, after {@link missingDelayMs} (kafkajs spends
   * 5-7 s in metadata retries), and stores nothing.
   */
  readonly missingTopics = new Set<string>();
  missingDelayMs = 0;

  async send(batch: SentBatch): Promise<void> {
    this.sendCalls += 1;
    if (this.down) throw new Error('KafkaJSNumberOfRetriesExceeded: connect ECONNREFUSED (fake sink down)');
    if (batch.some((b) => b.messages.length > 0 && this.missingTopics.has(b.topic))) {
      if (this.missingDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.missingDelayMs));
      throw new Error('KafkaJSNumberOfRetriesExceeded: This server does not host this topic-partition');
    }
    for (const { topic, messages } of batch) {
      if (messages.length > 0 && !LEGAL_TOPIC.test(topic)) {
        throw new Error(
          `KafkaJSProtocolError: The request attempted to perform an operation on an invalid topic "${topic}"`,
        );
      }
    }
    this.sent.push(batch.map(({ topic, messages }) => ({ topic, messages: [...messages] })));
  }

  /** Every message sent to `topic`, in order. */
  messages(topic: string): OutMessage[] {
    return this.sent.flatMap((b) => b.filter((t) => t.topic === topic).flatMap((t) => t.messages));
  }

  /** The JSON values of every message sent to `topic`, in order. */
  values<T = Record<string, unknown>>(topic: string): T[] {
    return this.messages(topic).map((m) => JSON.parse(m.value.toString()) as T);
  }

  /** The keys of every message sent to `topic`, as strings (null for none). */
  keys(topic: string): (string | null)[] {
    return this.messages(topic).map((m) => (m.key === undefined || m.key === null ? null : m.key.toString()));
  }

  /** Topics that received at least one message, sorted. */
  topics(): string[] {
    return [...new Set(this.sent.flatMap((b) => b.filter((t) => t.messages.length > 0).map((t) => t.topic)))].sort();
  }
}

/**
 * Time-bucketed counters and heartbeats in memory. A window's count is exact: the events of the last W
 * seconds (the Redis store may miss up to W/15 of its oldest, see lib/redis/stats.ts).
 */
export class MemoryStatsStore implements StatsStore {
  /** Every increment call that went through. */
  readonly incrementCalls: { increments: StatsIncrement[]; nowMs: number }[] = [];
  /** When set, every call throws, as when Redis is unreachable. */
  down = false;
  readonly #events = new Map<string, { at: number; by: number }[]>();
  readonly #beats = new Map<string, Map<string, number>>();
  readonly #reports = new Map<string, string>();
  readonly #failures = new Map<string, FailureNote[]>();

  #enter(): void {
    if (this.down) throw new InfrastructureError('connect ECONNREFUSED 127.0.0.1:6379 (fake stats store down)');
  }

  async increment(increments: StatsIncrement[], nowMs: number): Promise<void> {
    this.#enter();
    this.incrementCalls.push({ increments, nowMs });
    for (const { name, by = 1 } of increments) {
      const list = this.#events.get(name) ?? [];
      list.push({ at: nowMs, by });
      this.#events.set(name, list);
    }
  }

  async read(names: string[], nowMs: number): Promise<Record<string, StatsCounts>> {
    this.#enter();
    const out: Record<string, StatsCounts> = {};
    for (const name of names) {
      const events = (this.#events.get(name) ?? []).filter((e) => e.at <= nowMs);
      const counts = { lifetime: events.reduce((s, e) => s + e.by, 0) } as StatsCounts;
      for (const w of STATS_WINDOWS) {
        counts[w] = events.filter((e) => nowMs - e.at < Number(w) * 1000).reduce((s, e) => s + e.by, 0);
      }
      out[name] = counts;
    }
    return out;
  }

  async names(namePrefix: string): Promise<string[]> {
    this.#enter();
    return [...this.#events.keys()].filter((n) => n.startsWith(namePrefix)).sort();
  }

  async beat(kind: string, id: string, nowMs: number, _ttlMs: number, report?: string): Promise<void> {
    this.#enter();
    const members = this.#beats.get(kind) ?? new Map<string, number>();
    members.set(id, nowMs);
    this.#beats.set(kind, members);
    if (report !== undefined) this.#reports.set(`${kind}\0${id}`, report);
  }

  async reports(kind: string, ids: readonly string[]): Promise<Record<string, string>> {
    this.#enter();
    const out: Record<string, string> = {};
    for (const id of ids) {
      const report = this.#reports.get(`${kind}\0${id}`);
      if (report !== undefined) out[id] = report;
    }
    return out;
  }

  async live(kind: string, nowMs: number, ttlMs: number): Promise<string[]> {
    this.#enter();
    return [...(this.#beats.get(kind) ?? new Map<string, number>())]
      .filter(([, last]) => nowMs - last < ttlMs)
      .map(([id]) => id)
      .sort();
  }

  async forget(kind: string, id: string): Promise<void> {
    this.#enter();
    this.#beats.get(kind)?.delete(id);
  }

  async minutes(names: string[], nowMs: number): Promise<MinuteCount[]> {
    this.#enter();
    // The Redis store's buckets: 60 s, aligned on the epoch, the last one holding nowMs.
    const current = Math.floor(nowMs / 60_000);
    return Array.from({ length: 15 }, (_, i) => {
      const startMs = (current - 14 + i) * 60_000;
      const count = names
        .flatMap((n) => this.#events.get(n) ?? [])
        .filter((e) => e.at >= startMs && e.at < startMs + 60_000 && e.at <= nowMs)
        .reduce((sum, e) => sum + e.by, 0);
      return { startMs, count };
    });
  }

  async noteFailure(crawl: CrawlKey, note: FailureNote): Promise<void> {
    this.#enter();
    const key = `${crawl.spiderid}\0${crawl.appid}\0${crawl.crawlid}`;
    this.#failures.set(key, [note, ...(this.#failures.get(key) ?? [])].slice(0, FAILURES_KEPT));
  }

  async failures(crawls: readonly CrawlKey[], n: number): Promise<FailureNote[][]> {
    this.#enter();
    return crawls.map((c) => (this.#failures.get(`${c.spiderid}\0${c.appid}\0${c.crawlid}`) ?? []).slice(0, n));
  }

  /** A counter's lifetime total (0 for a name never incremented). */
  lifetime(name: string): number {
    return (this.#events.get(name) ?? []).reduce((s, e) => s + e.by, 0);
  }
}

/**
 * Stored replies in memory, with the TTL each was stored with: one per uuid and appid, stamped with a counter that
 * plays the store's clock ({@link mark} reads it).
 */
export class MemoryReplyStore implements ReplyStore {
  readonly #replies = new Map<string, Map<string, { reply: string; ttlSec: number; stamp: number }>>();
  #clock = 0;
  /** When set, every call throws, as when Redis is unreachable. */
  down = false;

  #enter(): void {
    if (this.down) throw new InfrastructureError('connect ECONNREFUSED 127.0.0.1:6379 (fake reply store down)');
  }

  async put(uuid: string, reply: string, ttlSec: number, appid: string): Promise<void> {
    this.#enter();
    const byApp = this.#replies.get(uuid) ?? new Map();
    byApp.set(appid, { reply, ttlSec, stamp: ++this.#clock });
    this.#replies.set(uuid, byApp);
  }

  async mark(_uuid: string): Promise<number> {
    this.#enter();
    return ++this.#clock;
  }

  async take(uuid: string, only?: { appid: string; after: number }): Promise<string | undefined> {
    this.#enter();
    const byApp = this.#replies.get(uuid);
    if (byApp === undefined) return undefined;
    const newest = [...byApp].sort((a, b) => b[1].stamp - a[1].stamp)[0];
    const [appid, stored] = only ? [only.appid, byApp.get(only.appid)] : (newest ?? []);
    if (appid === undefined || stored === undefined || (only && stored.stamp < only.after)) return undefined;
    byApp.delete(appid);
    if (byApp.size === 0) this.#replies.delete(uuid);
    return stored.reply;
  }

  /** The newest reply stored under `uuid`, parsed, with its TTL; left in place. */
  peek(uuid: string): { reply: Record<string, unknown>; ttlSec: number } | undefined {
    const stored = [...(this.#replies.get(uuid)?.values() ?? [])].sort((a, b) => b.stamp - a.stamp)[0];
    return stored && { reply: JSON.parse(stored.reply) as Record<string, unknown>, ttlSec: stored.ttlSec };
  }

  /** The uuids with a stored reply, sorted. */
  uuids(): string[] {
    return [...this.#replies.keys()].sort();
  }
}

/** One line of a {@link RecordingLog}. */
export interface LogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
  fields?: Record<string, unknown>;
}

/** A monitor log that keeps its lines. */
export class RecordingLog implements Log {
  readonly lines: LogLine[] = [];
  info(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: 'info', message, fields });
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: 'warn', message, fields });
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.lines.push({ level: 'error', message, fields });
  }
  /** The lines of one level. */
  at(level: LogLine['level']): LogLine[] {
    return this.lines.filter((l) => l.level === level);
  }
}

/** The URL Frontier's crawls in memory: backlog per crawl per queue key, the domain settings it was given. */
export class FakeUrlFrontier implements UrlFrontierView {
  readonly crawls: Record<string, Record<string, number>>;
  readonly domainConfig = new Map<string, string>();
  readonly blacklist = new Set<string>();

  constructor(crawls: Record<string, Record<string, number>> = {}) {
    this.crawls = structuredClone(crawls);
  }

  async backlog(crawl?: string): Promise<Record<string, Record<string, number>>> {
    if (crawl === undefined) return structuredClone(this.crawls);
    const queues = this.crawls[crawl];
    return queues ? { [crawl]: { ...queues } } : {};
  }

  async deleteCrawl(crawl: string): Promise<number> {
    const n = Object.values(this.crawls[crawl] ?? {}).reduce((s, v) => s + v, 0);
    delete this.crawls[crawl];
    return n;
  }

  async configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number },
  ): Promise<void> {
    if (action === 'domain-update')
      this.domainConfig.set(domain, `${limits.hits ?? 0},${limits.window ?? 0},${limits.scale ?? 1}`);
    else if (action === 'domain-remove') this.domainConfig.delete(domain);
    else if (action === 'blacklist-update') this.blacklist.add(domain);
    else this.blacklist.delete(domain);
  }
}

/** A monitor context whose parts are the fakes above, so tests can reach their extra methods. */
export interface TestContext extends MonitorContext {
  frontier: FakeFrontier;
  stats: MemoryStatsStore;
  replies: MemoryReplyStore;
  sink: FakeSink;
  log: RecordingLog;
}

/**
 * A monitor context of fresh fakes: prefix `demo`, per-app topics off, the known spiders, replies kept 300 s,
 * and the clock fixed at {@link TEST_NOW}.
 */
export function testContext(overrides: Partial<TestContext> = {}): TestContext {
  return {
    frontier: new FakeFrontier(),
    stats: new MemoryStatsStore(),
    replies: new MemoryReplyStore(),
    sink: new FakeSink(),
    topicPrefix: 'demo',
    appidTopics: false,
    spiders: BUILT_IN_SPIDERS,
    replyTtlSec: 300,
    nodeId: TEST_NODE_ID,
    log: new RecordingLog(),
    now: () => TEST_NOW,
    ...overrides,
  };
}

/** A 200 text/html response of `body` from `url` (UTF-8), as the fetcher gives it; `fields` change any of it. */
export function htmlResponse(url: string, body: string, fields: Partial<FetchResult> = {}): FetchResult {
  return {
    requestUrl: url,
    url,
    status: 200,
    statusText: 'OK',
    headers: { 'content-type': ['text/html'] },
    requestHeaders: {},
    body: Buffer.from(body),
    text: body,
    encoding: 'utf-8',
    truncated: false,
    redirects: [],
    fetchedMs: 3,
    ...fields,
  };
}
