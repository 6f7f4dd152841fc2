/**
 * The URL Frontier API's state, all in Redis (it survives restarts and is shared by every server instance):
 * crawls, queues per crawl, URLs per queue with metadata, next-fetch and creation dates and the completed flag,
 * holds (leases), per-queue delay / blockedUntil / crawl limit / lastProduced, the default delay and the active
 * flag, and two frontier-wide indexes: every crawl's due queues by due time and the backlog total. Keys:
 * lib/redis/url-frontier/keys.ts (one hash tag per partition, `FRONTIER_PARTITIONS`; a queue belongs to the partition
 * of its key); atomic steps: scripts/uf-*.lua, each in one partition; its model lib/redis/url-frontier/model.ts,
 * PutURLs put.ts, GetURLs get-urls.ts, the frontier-wide settings settings.ts, the admin reads inspect.ts, the walk
 * that indexes an older frontier index-walk.ts. Over several partitions this store answers for all of them: lists
 * are merged, counts summed, a queue's call goes to its partition.
 */

import type { DomainAction } from '../../frontier-model.ts';
import type { UrlFrontierView } from '../../ports.ts';
import type { RedisClient } from '../client.ts';
import { runScript, runScriptBuffer, script } from '../scripts.ts';
import { getUrlsPacked } from './get-urls.ts';
import { holdKeys, releaseEnded } from './holds.ts';
import { UrlFrontierIndex } from './index-walk.ts';
import { backlog, countUrls, createdPages, listQueues, listUrls, queueStats, urlStatus } from './inspect.ts';
import {
  type UrlFrontierPartition,
  type UrlFrontierPartitions,
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierPartitionIndex,
  urlFrontierPartitions,
  urlFrontierQueueKeyList,
  urlFrontierQueueKeys,
  urlFrontierServeKeys,
} from './keys.ts';
import {
  BLACKLIST_RECHECK_MS,
  byteOrder,
  type GetUrlsRequest,
  inChunks,
  type PackedQueue,
  type PutItem,
  type PutStatus,
  type QueueStats,
  SERVE_CAP,
  type ServedUrl,
  servedUrls,
  splitCreated,
  type UrlRecord,
} from './model.ts';
import { putItems } from './put.ts';
import { FrontierSettings } from './settings.ts';

export interface UrlFrontierStoreOptions {
  /** The clock, epoch ms (injectable for tests). @default Date.now */
  now?: () => number;
  /**
   * Partitions of the frontier (`FRONTIER_PARTITIONS`, the crawl frontier's knob): a queue belongs to one by its key
   * (lib/redis/url-frontier/keys.ts). A frontier is read only with the count it was stored with. @default 1
   */
  partitions?: number;
}

export class UrlFrontierStore implements UrlFrontierView {
  readonly redis: RedisClient;
  readonly prefix: string;
  /** The frontier's partitions; one holds the whole frontier when `FRONTIER_PARTITIONS` is 1. */
  readonly partitions: UrlFrontierPartitions;
  readonly #now: () => number;
  /**
   * The walk that indexes a frontier stored by an older version (lib/redis/url-frontier/index-walk.ts): only ever one
   * partition, since partitions came after the indexes, so a partitioned frontier is indexed from its creation.
   */
  readonly index: UrlFrontierIndex;
  readonly #settings: FrontierSettings;
  /** The partition the next GetURLs claims from first ({@link claimOrder}). */
  #turn = 0;

  constructor(redis: RedisClient, prefix: string, options: UrlFrontierStoreOptions = {}) {
    this.redis = redis;
    this.prefix = prefix;
    this.#now = options.now ?? Date.now;
    this.partitions = urlFrontierPartitions(prefix, options.partitions);
    this.index = new UrlFrontierIndex(redis, this.partitions[0], this.partitions.length > 1);
    this.#settings = new FrontierSettings(redis, this.partitions);
  }

  /** The partition that holds the queues with key `key` (of every crawl). */
  partitionOf(key: string): UrlFrontierPartition {
    const ps = this.partitions;
    return (ps.length === 1 ? ps[0] : ps[urlFrontierPartitionIndex(key, ps.length)]) as UrlFrontierPartition;
  }

  /**
   * The partitions in the order one GetURLs over due queues claims from them: each call starts one partition further
   * on, so every partition is first in turn and none starves behind a busy one (as crawlers lease:
   * lib/redis/lease-call.ts).
   */
  claimOrder(): UrlFrontierPartition[] {
    const ps = this.partitions;
    if (ps.length === 1) return [...ps];
    const start = this.#turn % ps.length;
    this.#turn = start + 1;
    return [...ps.slice(start), ...ps.slice(0, start)];
  }

  #keys(crawl: string, key: string): string[] {
    return urlFrontierQueueKeyList(this.partitionOf(key), crawl, key);
  }

  /** Every crawl that has at least one queue (in any partition). */
  async crawls(): Promise<string[]> {
    if (this.partitions.length === 1)
      return (await this.redis.smembers(urlFrontierGlobalKeys(this.partitions[0]).crawls)).sort();
    const sets = await Promise.all(this.partitions.map((p) => this.redis.smembers(urlFrontierGlobalKeys(p).crawls)));
    return [...new Set(sets.flat())].sort();
  }

  /** The queue keys of a crawl in each partition (each list in lexicographic order), partitions in order. */
  async queuesByPartition(crawl: string): Promise<[UrlFrontierPartition, string[]][]> {
    const ps = this.partitions;
    const lists = await Promise.all(ps.map((p) => this.redis.zrange(urlFrontierCrawlKeys(p, crawl).queues, '0', '-1')));
    return lists.map((keys, i) => [ps[i] as UrlFrontierPartition, keys]);
  }

  /** The queue keys of a crawl, in lexicographic order (byte order, as Redis sorts them) over every partition. */
  async queues(crawl: string): Promise<string[]> {
    const lists = await this.queuesByPartition(crawl);
    if (lists.length === 1) return lists[0]?.[1] ?? [];
    return lists.flatMap(([, keys]) => keys).sort(byteOrder);
  }

  /** The queue `key` when the crawl has it (else none), or every queue of the crawl when no key is given. */
  async queueKeys(crawl: string, key: string | undefined): Promise<string[]> {
    if (!key) return this.queues(crawl);
    return (await this.hasQueue(crawl, key)) ? [key] : [];
  }

  async hasQueue(crawl: string, key: string): Promise<boolean> {
    return (await this.redis.zscore(urlFrontierCrawlKeys(this.partitionOf(key), crawl).queues, key)) !== null;
  }

  /**
   * Stores items, grouped per partition, crawl and queue: one script call for up to `QUEUES_PER_CALL` queues (of any
   * crawls of one partition) and `ITEMS_PER_CALL` items; statuses in input order (lib/redis/url-frontier/put.ts).
   */
  put(items: PutItem[]): Promise<PutStatus[]> {
    return putItems(this.redis, (key) => this.partitionOf(key), Math.floor(this.#now() / 1000), items);
  }

  /** Serves queues of one crawl in one script call per partition (see uf-serve.lua): the URLs of each, in `keys` order. */
  async serveQueues(crawl: string, keys: string[], maxUrls: number, holdSeconds: number): Promise<ServedUrl[][]> {
    return (await this.servePacked(crawl, keys, maxUrls, holdSeconds)).map(servedUrls);
  }

  /**
   * {@link serveQueues} with each queue's URLs left in uf-serve's packed form (for encoders that take bytes), at most
   * {@link SERVE_CAP} per queue; `continuing` serves queues again in the same GetURLs (see uf-serve.lua).
   */
  servePacked(
    crawl: string,
    keys: string[],
    maxUrls: number,
    holdSeconds: number,
    continuing = false,
  ): Promise<PackedQueue[]> {
    return this.serveGroups([{ crawl, keys }], maxUrls, holdSeconds, continuing);
  }

  /**
   * {@link servePacked} over queues of several crawls, one script call per partition: the queues in `groups` order.
   * Unless `full`, each queue's keys for metadata and its crawl limit are left out, and a queue that needs them is
   * counted -1 and left claimed, for the caller to serve again with `full` (see uf-serve.lua).
   */
  async serveGroups(
    groups: readonly { crawl: string; keys: string[] }[],
    maxUrls: number,
    holdSeconds: number,
    continuing = false,
    full = true,
  ): Promise<PackedQueue[]> {
    if (this.partitions.length === 1)
      return this.serveIn(this.partitions[0], groups, maxUrls, holdSeconds, continuing, full);
    // Each partition's queues, in `groups` order, and where each one's answer goes.
    const parts = new Map<UrlFrontierPartition, { groups: { crawl: string; keys: string[] }[]; at: number[] }>();
    let n = 0;
    for (const { crawl, keys } of groups)
      for (const key of keys) {
        const p = this.partitionOf(key);
        let part = parts.get(p);
        if (!part) {
          part = { groups: [], at: [] };
          parts.set(p, part);
        }
        const last = part.groups[part.groups.length - 1];
        if (last?.crawl === crawl) last.keys.push(key);
        else part.groups.push({ crawl, keys: [key] });
        part.at.push(n++);
      }
    const out: PackedQueue[] = new Array(n);
    await Promise.all(
      [...parts].map(async ([p, part]) => {
        const served = await this.serveIn(p, part.groups, maxUrls, holdSeconds, continuing, full);
        served.forEach((q, i) => {
          out[part.at[i] as number] = q;
        });
      }),
    );
    return out;
  }

  /**
   * {@link serveGroups} over queues of one partition, in one script call; `qdueOnly` for queues claimed from the index
   * over every crawl, which places them there alone (see uf-serve.lua).
   */
  async serveIn(
    p: UrlFrontierPartition,
    groups: readonly { crawl: string; keys: string[] }[],
    maxUrls: number,
    holdSeconds: number,
    continuing: boolean,
    full: boolean,
    qdueOnly = false,
  ): Promise<PackedQueue[]> {
    const now = this.#now();
    const until = now + holdSeconds * 1000;
    const args: (string | number)[] = [
      now,
      maxUrls,
      until,
      SERVE_CAP,
      continuing ? 1 : 0,
      BLACKLIST_RECHECK_MS,
      full ? 1 : 0,
      qdueOnly ? 1 : 0,
    ];
    for (const { crawl, keys: queues } of groups) args.push(crawl, queues.length, ...queues);
    const [replies, counts] = await runScriptBuffer<[Buffer[], number[]]>(
      this.redis,
      script('uf-serve'),
      urlFrontierServeKeys(p, groups, full, until, qdueOnly),
      args,
    );
    const out: PackedQueue[] = [];
    for (const { crawl, keys: queues } of groups)
      for (const key of queues) {
        const q = out.length;
        out.push({ crawl, key, packed: replies[q] ?? Buffer.alloc(0), count: counts[q] ?? 0 });
      }
    return out;
  }

  /**
   * GetURLs: one queue with `key`, else the queues of the crawl (or of every crawl) whose time in the `due` index has
   * come, the longest-due first (across crawls too) within a partition, the partitions in turn, each queue at most
   * once, stopping once `maxQueues` queues produced. Queues with nothing due are never looked at (the `due` index of
   * a crawl, `qdue` over every crawl), so the cost is O(log q + queues looked at) per partition, not O(queues) or
   * O(crawls). Calls `emit` per served queue (lib/redis/url-frontier/get-urls.ts).
   */
  async getUrls(req: GetUrlsRequest, emit: (urls: ServedUrl[]) => void | Promise<void>): Promise<void> {
    await getUrlsPacked(this, req, (queue) => emit(servedUrls(queue)));
  }

  /** {@link getUrls} with each served queue's URLs in uf-serve's packed form. */
  getUrlsPacked(req: GetUrlsRequest, emit: (queue: PackedQueue) => void | Promise<void>): Promise<void> {
    return getUrlsPacked(this, req, emit);
  }

  /** The store's clock, epoch ms. */
  now(): number {
    return this.#now();
  }

  async deleteQueue(crawl: string, key: string): Promise<number> {
    return runScript<number>(this.redis, script('uf-delete-queue'), this.#keys(crawl, key), [crawl, key]);
  }

  async deleteCrawl(crawl: string): Promise<number> {
    const keys = (await this.queuesByPartition(crawl)).flatMap(([, k]) => k);
    const removed = await inChunks(keys, (key) => this.deleteQueue(crawl, key));
    return removed.reduce((a, b) => a + b, 0);
  }

  /**
   * URLs not completed (scheduled or held) over every crawl, from the kept totals: O(1) per partition. In a frontier
   * stored by an older version, each call first walks it for up to a second ({@link UrlFrontierIndex}); until the
   * walk ends the total counts only the queues walked so far.
   */
  async backlogTotal(): Promise<number> {
    if (this.partitions.length > 1) {
      const totals = await Promise.all(
        this.partitions.map((p) => this.redis.hget(urlFrontierGlobalKeys(p).state, 'backlog')),
      );
      return totals.reduce((n, t) => n + Number(t ?? 0), 0);
    }
    const g = urlFrontierGlobalKeys(this.partitions[0]);
    const [indexed, total] = await this.redis.hmget(g.state, 'indexed', 'backlog');
    this.index.saw(indexed);
    if (this.index.indexed) return Number(total ?? 0);
    await this.index.walk();
    return Number((await this.redis.hget(g.state, 'backlog')) ?? 0);
  }

  /** URLs not completed (scheduled or held) per crawl, per queue key; one pipeline per partition, O(queues). */
  backlog(crawl?: string): Promise<Record<string, Record<string, number>>> {
    return backlog(this, crawl);
  }

  /**
   * The Kafka API's domain throttle override or blacklist, for the queues of `domain` (a queue's domain is its
   * key's registrable domain): `domain-update` sets `hits`/`window`/`scale`, `domain-remove` clears it,
   * `blacklist-update`/`-remove` stop and resume serving them. Written to every partition (settings.ts).
   */
  configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number } = {},
  ): Promise<void> {
    return this.#settings.configureDomain(action, domain, limits);
  }

  /**
   * Stats of one queue (all zero for an unknown one) or of every queue of a crawl; holds that ended are released
   * first (holds.ts), so in process counts only those that have not.
   */
  async stats(crawl: string, key?: string): Promise<QueueStats> {
    await this.releaseHolds(key === undefined ? this.partitions : [this.partitionOf(key)]);
    return queueStats(this, crawl, key);
  }

  /** Releases the holds that ended in each of `partitions` (holds.ts), the partitions at once. */
  async releaseHolds(partitions: readonly UrlFrontierPartition[]): Promise<void> {
    const now = this.#now();
    await Promise.all(partitions.map((p) => releaseEnded(this.redis, p, now)));
  }

  /**
   * Queue keys of a crawl, page `start`/`size` among the matching ones (in lexicographic order over every partition);
   * active only unless `includeInactive`.
   */
  listQueues(crawl: string, start: number, size: number, includeInactive: boolean): Promise<string[]> {
    return listQueues(this, crawl, start, size, includeInactive);
  }

  /** ListURLs: the URLs of a queue or crawl (completed included), paged among the filtered ones (lib/redis/url-frontier/inspect.ts). */
  listUrls(
    crawl: string,
    key: string | undefined,
    start: number,
    size: number,
    filter: ((url: string) => boolean) | undefined,
    emit: (r: UrlRecord) => void | Promise<void>,
  ): Promise<void> {
    return listUrls(this, crawl, key, start, size, filter, emit);
  }

  /** CountURLs: URLs (active and completed) of a queue or crawl, optionally filtered (lib/redis/url-frontier/inspect.ts). */
  countUrls(crawl: string, key: string | undefined, filter?: (url: string) => boolean): Promise<number> {
    return countUrls(this, crawl, key, filter);
  }

  /** One URL's record, or undefined when the queue does not know it (lib/redis/url-frontier/inspect.ts). */
  urlStatus(crawl: string, key: string, url: string): Promise<UrlRecord | undefined> {
    return urlStatus(this, crawl, key, url);
  }

  /** PurgeURLs: deletes URLs created more than `days` days ago (0: before now). */
  async purge(crawl: string, key: string | undefined, days: number): Promise<number> {
    const cutoff = Math.floor(this.#now() / 1000) - days * 86_400 + (days === 0 ? 1 : 0);
    const keys = await this.queueKeys(crawl, key);
    let n = 0;
    for (const k of keys) {
      const q = urlFrontierQueueKeys(this.partitionOf(k), crawl, k);
      // A page at a time: the old members of each page go to one script call, which checks each date again.
      for await (const page of createdPages(this.redis, q.created)) {
        const old = page.filter(([, value]) => splitCreated(value).created < cutoff).map(([member]) => member);
        if (old.length)
          n += await runScript<number>(this.redis, script('uf-purge'), this.#keys(crawl, k), [
            crawl,
            k,
            cutoff,
            ...old,
          ]);
      }
    }
    return n;
  }

  /** SetDelay: the default (no key; written to every partition) or one queue's politeness delay in seconds; unknown queue: no-op. */
  async setDelay(crawl: string, key: string, seconds: number): Promise<void> {
    if (key === '') {
      await this.#settings.setDefaultDelay(seconds);
      return;
    }
    await this.#setQueue(crawl, key, 'delay', seconds);
  }

  /**
   * Sets a queue's info field and makes the queue due now (scripts/uf-set-queue.lua): a shorter delay, an ended block
   * or a higher limit may let it produce before the time uf-serve gave it. @returns false for an unknown queue
   */
  async #setQueue(crawl: string, key: string, field: string, value: number): Promise<boolean> {
    const set = await runScript<number>(this.redis, script('uf-set-queue'), this.#keys(crawl, key), [
      crawl,
      key,
      field,
      value,
      this.#now(),
    ]);
    return set === 1;
  }

  /** BlockQueueUntil: epoch s (0 unblocks); unknown queue: no-op. */
  async blockQueueUntil(crawl: string, key: string, epochSeconds: number): Promise<void> {
    await this.#setQueue(crawl, key, 'blocked', epochSeconds * 1000);
  }

  /** SetCrawlLimit: false when the queue is unknown. */
  setCrawlLimit(crawl: string, key: string, limit: number): Promise<boolean> {
    return this.#setQueue(crawl, key, 'limit', limit);
  }

  /** SetActive: written to every partition (settings.ts). */
  setActive(state: boolean): Promise<void> {
    return this.#settings.setActive(state);
  }

  active(): Promise<boolean> {
    return this.#settings.active();
  }

  /** Every key name this store may have created (for tests' cleanup; never used in production paths). */
  async knownKeys(): Promise<string[]> {
    const out: string[] = [];
    for (const p of this.partitions) {
      const g = urlFrontierGlobalKeys(p);
      out.push(g.crawls, g.state, g.queueDue, g.legacyCrawlDue, g.domainConfig, g.blacklist);
      out.push(...(await holdKeys(this.redis, p)));
      for (const crawl of await this.redis.smembers(g.crawls)) {
        out.push(...Object.values(urlFrontierCrawlKeys(p, crawl)));
        for (const key of await this.redis.zrange(urlFrontierCrawlKeys(p, crawl).queues, '0', '-1'))
          out.push(...Object.values(urlFrontierQueueKeys(p, crawl, key)));
      }
    }
    return out;
  }
}
