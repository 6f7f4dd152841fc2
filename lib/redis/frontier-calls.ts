/**
 * How the frontier (lib/redis/frontier.ts `Frontier`) calls its Lua scripts: every partition's KEYS, built once; the
 * ARGV every frontier script opens with (includes/frontier.lua: the clock, then the throttle settings); the
 * registry of spider types that ever had work; and the grouping of a batch by partition, one script call each.
 * The frontier and the modules it delegates to (ack-fold.ts, frontier-admin.ts) run scripts only through this.
 */
import { type PartitionRef, partitionId } from '../frontier-model.ts';
import type { RedisClient } from './client.ts';
import type { FrontierOptions } from './frontier-options.ts';
import { partitionIndex, partitionKeyList, partitionTag, spiderPartitions, spidersKey } from './keys.ts';
import { type LuaScript, runScript, runScriptBuffer, script } from './scripts.ts';
import { markState } from './state-epoch.ts';

/** Spider types and partitions whose partitions and KEYS a frontier remembers. */
const MEMO_MAX = 1000;

/** Domains whose partition a frontier remembers; past this the memo starts again. */
const DOMAIN_MEMO_MAX = 100_000;

/** An argument of a script call. */
export type ScriptArg = string | number | Buffer;

/** The frontier's options with their defaults filled in. */
export type ResolvedFrontierOptions = Required<FrontierOptions>;

export class FrontierCalls {
  readonly redis: RedisClient;
  readonly options: ResolvedFrontierOptions;
  readonly #knownSpiders = new Set<string>();

  /** ARGV[2..5] of every frontier script (includes/frontier.lua): fixed for a frontier. */
  readonly #commonTail: readonly (string | number)[];

  /** The partitions of each spider type, and each partition's KEYS, built once (they are fixed for a frontier). */
  readonly #partitions = new Map<string, PartitionRef[]>();
  readonly #keyLists = new Map<string, string[]>();
  /** Domain -> partition index (the count is fixed for a frontier). */
  readonly #domainIndex = new Map<string, number>();
  /** The partition each spider type's next lease round starts at ({@link leaseOrder}). */
  readonly #leaseTurn = new Map<string, number>();

  constructor(redis: RedisClient, options: FrontierOptions) {
    this.redis = redis;
    const o = { bound: 100, redisClock: false, throttleMarginMs: 0, dupeCacheEntries: 0, partitions: 1, ...options };
    this.options = o;
    const moderated = `${o.moderated ? 1 : 0}${o.throttleMarginMs > 0 ? `:${Math.round(o.throttleMarginMs)}` : ''}`;
    this.#commonTail = [o.hits, o.windowSec, moderated, o.ipEnabled ? 1 : 0];
  }

  /** The partition holding a spider type's requests for a domain (lib/redis/keys.ts `partitionIndex`). */
  partitionFor(spider: string, domain: string): PartitionRef {
    const ps = this.partitionsOf(spider);
    if (ps.length === 1) return ps[0] as PartitionRef;
    // Asked for every child of every page (enqueue, the ack's fold): the hash once per domain while it is remembered.
    let n = this.#domainIndex.get(domain);
    if (n === undefined) {
      n = partitionIndex(domain, ps.length);
      if (this.#domainIndex.size >= DOMAIN_MEMO_MAX) this.#domainIndex.clear();
      this.#domainIndex.set(domain, n);
    }
    return ps[n] as PartitionRef;
  }

  /** Every partition of a spider type (periodic jobs and info visit them all). */
  partitionsOf(spider: string): PartitionRef[] {
    let ps = this.#partitions.get(spider);
    if (ps === undefined) {
      ps = spiderPartitions(this.options.prefix, spider, this.options.typeEnabled, this.options.partitions);
      if (this.#partitions.size < MEMO_MAX) this.#partitions.set(spider, ps);
    }
    return ps;
  }

  /**
   * The partitions of a spider type in the order one lease round asks them: each round starts one partition further
   * on, so every partition is asked first in turn and none starves behind a busy one.
   */
  leaseOrder(spider: string): PartitionRef[] {
    const ps = this.partitionsOf(spider);
    if (ps.length === 1) return ps;
    const start = (this.#leaseTurn.get(spider) ?? 0) % ps.length;
    if (this.#leaseTurn.size < MEMO_MAX || this.#leaseTurn.has(spider)) this.#leaseTurn.set(spider, start + 1);
    return [...ps.slice(start), ...ps.slice(0, start)];
  }

  /** A partition's fixed KEYS ({@link partitionKeyList}), remembered. */
  #keys(p: PartitionRef): string[] {
    const id = partitionId(p);
    let keys = this.#keyLists.get(id);
    if (keys === undefined) {
      keys = partitionKeyList(p);
      if (this.#keyLists.size < MEMO_MAX) this.#keyLists.set(id, keys);
    }
    return keys;
  }

  /** Spider types that ever had work queued (a registry, not a keyspace scan). */
  async spiders(): Promise<string[]> {
    return (await this.redis.smembers(spidersKey(this.options.prefix))).sort();
  }

  /** Spider types this process registered (they may not have reached {@link spiders}' answer yet). */
  get knownSpiders(): ReadonlySet<string> {
    return this.#knownSpiders;
  }

  /** Adds a spider type to the registry of types that ever had work (once per process and type). */
  async register(spider: string): Promise<void> {
    if (this.#knownSpiders.has(spider)) return;
    await this.redis.sadd(spidersKey(this.options.prefix), spider);
    this.#knownSpiders.add(spider);
  }

  /**
   * Creates partition `p`'s state marker unless it exists (lib/redis/state-marker.ts), before anything is queued
   * there: one `SET NX` in the partition's slot. A marker created here means the partition starts (again) empty, so
   * the spider type is registered again too (a registry emptied with it would hide its crawls from the periodic jobs).
   */
  async mark(p: PartitionRef): Promise<void> {
    if (await markState(this.redis, partitionTag(p))) this.#knownSpiders.delete(p.spider);
  }

  #common(now: number): (string | number)[] {
    return [this.options.redisClock ? 'T' : now, ...this.#commonTail];
  }

  /** Runs a frontier script on partition `p`: its KEYS then `extraKeys`; the common ARGV then `args`. */
  run<T>(name: string, p: PartitionRef, extraKeys: string[], args: ScriptArg[], now: number): Promise<T> {
    const s: LuaScript = script(name);
    const keys = extraKeys.length > 0 ? [...this.#keys(p), ...extraKeys] : this.#keys(p);
    return runScript<T>(this.redis, s, keys, [...this.#common(now), ...args]);
  }

  /** {@link run} with bulk replies as Buffers (replies that carry members, which are binary). */
  runBuffer<T>(name: string, p: PartitionRef, args: ScriptArg[], now: number): Promise<T> {
    return runScriptBuffer<T>(this.redis, script(name), this.#keys(p), [...this.#common(now), ...args]);
  }
}

/** `items`' indexes grouped by their partition (one script call each), in first-seen order. */
export function byPartition<T>(
  items: readonly T[],
  partitionOf: (item: T) => PartitionRef,
): { p: PartitionRef; idx: number[] }[] {
  const groups = new Map<string, { p: PartitionRef; idx: number[] }>();
  items.forEach((item, i) => {
    const p = partitionOf(item);
    const id = partitionId(p);
    const g = groups.get(id) ?? { p, idx: [] };
    g.idx.push(i);
    groups.set(id, g);
  });
  return [...groups.values()];
}

export function samePartition(a: PartitionRef, b: PartitionRef): boolean {
  return a.prefix === b.prefix && a.scope === b.scope && a.partition === b.partition && a.spider === b.spider;
}
