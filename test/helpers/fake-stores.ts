/**
 * In-memory fakes of the monitors' other seams (docs/style.md §9, unit tier): the message sink, the stats and reply
 * stores, a log that keeps its lines, the URL Frontier API's crawls and the fleet's registries. Each keeps the semantics its interface
 * documents (lib/ports.ts) in the simplest form, and the stores have a switch to fail as when Redis is unreachable.
 */
import { InfrastructureError } from '../../lib/errors.ts';
import type { DomainAction } from '../../lib/frontier-model.ts';
import type { FleetRegistryStore } from '../../lib/monitor/fleet-registry.ts';
import { FLEET_WAKE_MS, type FleetWake } from '../../lib/monitor/fleet-wake.ts';
import type { Log, MessageSink, OutMessage, ReplyStore, StatsStore, UrlFrontierView } from '../../lib/ports.ts';
import { FAILURES_KEPT } from '../../lib/redis/failure-log.ts';
import type { CrawlKey, FailureNote } from '../../lib/stats-model.ts';
import { type MinuteCount, STATS_WINDOWS, type StatsCounts, type StatsIncrement } from '../../lib/stats-model.ts';

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

  async backlogTotal(): Promise<number> {
    let n = 0;
    for (const queues of Object.values(this.crawls)) for (const v of Object.values(queues)) n += v;
    return n;
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

/** The fleet's wake record in memory (lib/monitor/fleet-wake.ts): every `want`, in order. */
export class MemoryFleetWake implements FleetWake {
  readonly wants: number[] = [];
  failing = false;
  async want(nowMs: number): Promise<void> {
    if (this.failing) throw new Error('Connection is closed.');
    this.wants.push(nowMs);
  }
  async wanted(nowMs: number): Promise<boolean> {
    const last = this.wants.at(-1);
    return last !== undefined && nowMs - last < FLEET_WAKE_MS;
  }
}

/** An in-memory fleet registry (lib/monitor/fleet-registry.ts) that counts its reads. */
export class MemoryRegistry implements FleetRegistryStore {
  readonly names = new Map<string, number>();
  reads = 0;
  failing = false;
  async register(names: readonly string[], nowMs: number): Promise<void> {
    for (const n of names) this.names.set(n, nowMs);
  }
  async registered(): Promise<Map<string, number>> {
    this.reads++;
    if (this.failing) throw new Error('Connection is closed.');
    return new Map(this.names);
  }
}
