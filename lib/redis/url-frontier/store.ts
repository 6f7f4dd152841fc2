/**
 * The URL Frontier API's state, all in Redis (it survives restarts and is shared by every server instance):
 * crawls, queues per crawl, URLs per queue with metadata, next-fetch and creation dates and the completed flag,
 * holds (leases), per-queue delay / blockedUntil / crawl limit / lastProduced, the default delay and the active
 * flag, and two frontier-wide indexes: every crawl's due queues by due time and the backlog total. Keys: keys.ts
 * (one hash tag per prefix); atomic steps: scripts/uf-*.lua; its model lib/redis/url-frontier/model.ts, its admin
 * reads lib/redis/url-frontier/inspect.ts, the walk that indexes an older frontier
 * lib/redis/url-frontier/index-walk.ts.
 */

import type { DomainAction } from '../../frontier-model.ts';
import type { UrlFrontierView } from '../../ports.ts';
import type { RedisClient } from '../client.ts';
import {
  urlFrontierCrawlGroup,
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierQueueKeyList,
  urlFrontierQueueKeys,
  urlFrontierScriptGlobals,
  urlFrontierServeKeys,
} from '../keys.ts';
import { runScript, runScriptBuffer, script } from '../scripts.ts';
import { getUrlsPacked } from './get-urls.ts';
import { UrlFrontierIndex } from './index-walk.ts';
import { countUrls, createdPages, listUrls, urlStatus } from './inspect.ts';
import {
  BLACKLIST_RECHECK_MS,
  type GetUrlsRequest,
  ITEMS_PER_CALL,
  inChunks,
  metadataValue,
  type PackedQueue,
  type PutItem,
  type PutStatus,
  QUEUES_PER_CALL,
  type QueueStats,
  queueDomain,
  queueMember,
  SERVE_CAP,
  type ServedUrl,
  servedUrls,
  splitCreated,
  type UrlRecord,
  urlMember,
} from './model.ts';

export class UrlFrontierStore implements UrlFrontierView {
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly #now: () => number;
  /** The walk that indexes a frontier stored by an older version (lib/redis/url-frontier/index-walk.ts). */
  readonly index: UrlFrontierIndex;

  /** @param now the clock, epoch ms (injectable for tests) */
  constructor(redis: RedisClient, prefix: string, now: () => number = Date.now) {
    this.redis = redis;
    this.prefix = prefix;
    this.#now = now;
    this.index = new UrlFrontierIndex(redis, prefix);
  }

  #keys(crawl: string, key: string): string[] {
    return urlFrontierQueueKeyList(this.prefix, crawl, key);
  }

  /** Every crawl that has at least one queue. */
  async crawls(): Promise<string[]> {
    return (await this.redis.smembers(urlFrontierGlobalKeys(this.prefix).crawls)).sort();
  }

  /** The queue keys of a crawl, in lexicographic order. */
  async queues(crawl: string): Promise<string[]> {
    return this.redis.zrange(urlFrontierCrawlKeys(this.prefix, crawl).queues, '0', '-1');
  }

  /** The queue `key` when the crawl has it (else none), or every queue of the crawl when no key is given. */
  async queueKeys(crawl: string, key: string | undefined): Promise<string[]> {
    if (!key) return this.queues(crawl);
    return (await this.hasQueue(crawl, key)) ? [key] : [];
  }

  async hasQueue(crawl: string, key: string): Promise<boolean> {
    return (await this.redis.zscore(urlFrontierCrawlKeys(this.prefix, crawl).queues, key)) !== null;
  }

  /**
   * Stores items, grouped per crawl and queue: one script call for up to {@link QUEUES_PER_CALL} queues (of any
   * crawls) and {@link ITEMS_PER_CALL} items; statuses in input order.
   */
  async put(items: PutItem[]): Promise<PutStatus[]> {
    const now = Math.floor(this.#now() / 1000);
    const byCrawl = new Map<string, Map<string, number[]>>();
    items.forEach((item, i) => {
      let queues = byCrawl.get(item.crawl);
      if (!queues) {
        queues = new Map();
        byCrawl.set(item.crawl, queues);
      }
      const group = queues.get(item.key);
      if (group) group.push(i);
      else queues.set(item.key, [i]);
    });
    // Calls of at most QUEUES_PER_CALL queues and ITEMS_PER_CALL items, of any crawls (one URL into each of many
    // crawls is one call, not one per crawl); a queue with more items spans calls, which Redis runs in the order
    // they are sent (one connection: all keys share one slot).
    type Call = { crawls: { crawl: string; groups: [string, number[]][] }[]; queues: number; items: number };
    const calls: Call[] = [];
    let call: Call | undefined;
    for (const [crawl, queues] of byCrawl) {
      for (const [key, indexes] of queues) {
        for (let from = 0; from < indexes.length; ) {
          if (!call || call.queues === QUEUES_PER_CALL || call.items === ITEMS_PER_CALL) {
            call = { crawls: [], queues: 0, items: 0 };
            calls.push(call);
          }
          const part = indexes.slice(from, from + ITEMS_PER_CALL - call.items);
          const last = call.crawls[call.crawls.length - 1];
          if (last?.crawl === crawl) last.groups.push([key, part]);
          else call.crawls.push({ crawl, groups: [[key, part]] });
          call.queues++;
          call.items += part.length;
          from += part.length;
        }
      }
    }
    const out: PutStatus[] = new Array(items.length);
    await Promise.all(
      calls.map(async ({ crawls }) => {
        const keys = urlFrontierScriptGlobals(this.prefix);
        const args: (string | number)[] = [now];
        for (const { crawl, groups } of crawls) {
          keys.push(
            ...urlFrontierCrawlGroup(
              this.prefix,
              crawl,
              groups.map(([key]) => key),
            ),
          );
          args.push(crawl, groups.length);
          for (const [key, indexes] of groups) {
            args.push(key, queueDomain(key), indexes.length);
            for (const i of indexes) {
              const it = items[i] as PutItem;
              args.push(
                it.kind === 'discovered' ? 'd' : 'k',
                urlMember(key, it.url),
                Math.max(0, Math.floor(it.date)),
                metadataValue(it.metadata),
              );
            }
          }
        }
        const res = await runScript<number[]>(this.redis, script('uf-put'), keys, args);
        let j = 0;
        for (const { groups } of crawls)
          for (const [, indexes] of groups) for (const i of indexes) out[i] = res[j++] === 0 ? 'OK' : 'SKIPPED';
      }),
    );
    return out;
  }

  /** Serves queues of one crawl in one script call (see uf-serve.lua): the URLs of each, in `keys` order. */
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
   * {@link servePacked} over queues of several crawls in one script call: the queues in `groups` order. Unless `full`,
   * each queue's keys for metadata and its crawl limit are left out, and a queue that needs them is counted -1 and
   * left claimed, for the caller to serve again with `full` (see uf-serve.lua).
   */
  async serveGroups(
    groups: readonly { crawl: string; keys: string[] }[],
    maxUrls: number,
    holdSeconds: number,
    continuing = false,
    full = true,
  ): Promise<PackedQueue[]> {
    const now = this.#now();
    const args: (string | number)[] = [
      now,
      maxUrls,
      now + holdSeconds * 1000,
      SERVE_CAP,
      continuing ? 1 : 0,
      BLACKLIST_RECHECK_MS,
      full ? 1 : 0,
    ];
    for (const { crawl, keys: queues } of groups) args.push(crawl, queues.length, ...queues);
    const [replies, counts] = await runScriptBuffer<[Buffer[], number[]]>(
      this.redis,
      script('uf-serve'),
      urlFrontierServeKeys(this.prefix, groups, full),
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
   * come, the longest-due first (across crawls too), each at most once, stopping once `maxQueues` queues produced.
   * Queues with nothing due are never looked at (the `due` index of a crawl, `qdue` over every crawl), so the cost
   * is O(log q + queues looked at), not O(queues) or O(crawls). Calls `emit` per served queue
   * (lib/redis/url-frontier/get-urls.ts).
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
    const removed = await inChunks(await this.queues(crawl), (key) => this.deleteQueue(crawl, key));
    return removed.reduce((a, b) => a + b, 0);
  }

  /**
   * URLs not completed (scheduled or held) over every crawl, from the kept total: O(1). In a frontier stored by an
   * older version, each call first walks it for up to a second ({@link UrlFrontierIndex}); until the walk ends the
   * total counts only the queues walked so far.
   */
  async backlogTotal(): Promise<number> {
    const g = urlFrontierGlobalKeys(this.prefix);
    const [indexed, total] = await this.redis.hmget(g.state, 'indexed', 'backlog');
    this.index.saw(indexed);
    if (this.index.indexed) return Number(total ?? 0);
    await this.index.walk();
    return Number((await this.redis.hget(g.state, 'backlog')) ?? 0);
  }

  /** URLs not completed (scheduled or held) per crawl, per queue key; one pipeline, O(queues). */
  async backlog(crawl?: string): Promise<Record<string, Record<string, number>>> {
    const crawls = crawl !== undefined ? [crawl] : await this.crawls();
    const out: Record<string, Record<string, number>> = {};
    for (const c of crawls) {
      const keys = await this.queues(c);
      if (keys.length === 0) continue;
      const pipeline = this.redis.pipeline();
      for (const key of keys) {
        const q = urlFrontierQueueKeys(this.prefix, c, key);
        pipeline.zcard(q.sched).zcard(q.held);
      }
      const replies = (await pipeline.exec()) ?? [];
      const queues: Record<string, number> = {};
      keys.forEach((key, i) => {
        const [e1, sched] = replies[2 * i] ?? [];
        const [e2, held] = replies[2 * i + 1] ?? [];
        if (e1 || e2) throw e1 ?? e2;
        queues[key] = Number(sched) + Number(held);
      });
      out[c] = queues;
    }
    return out;
  }

  /**
   * The Kafka API's domain throttle override or blacklist, for the queues of `domain` (a queue's domain is its
   * key's registrable domain): `domain-update` sets `hits`/`window`/`scale`, `domain-remove` clears it,
   * `blacklist-update`/`-remove` stop and resume serving them.
   */
  async configureDomain(
    action: DomainAction,
    domain: string,
    limits: { hits?: number; window?: number; scale?: number } = {},
  ): Promise<void> {
    const g = urlFrontierGlobalKeys(this.prefix);
    switch (action) {
      case 'domain-update':
        await this.redis.hset(g.domainConfig, domain, `${limits.hits ?? 0},${limits.window ?? 0},${limits.scale ?? 1}`);
        return;
      case 'domain-remove':
        await this.redis.hdel(g.domainConfig, domain);
        return;
      case 'blacklist-update':
        await this.redis.sadd(g.blacklist, domain);
        return;
      case 'blacklist-remove':
        await this.redis.srem(g.blacklist, domain);
        return;
    }
  }

  async #queueStats(crawl: string, key: string, now: number): Promise<QueueStats> {
    const q = urlFrontierQueueKeys(this.prefix, crawl, key);
    const [sched, held, inProcess, completed] = await Promise.all([
      this.redis.zcard(q.sched),
      this.redis.zcard(q.held),
      this.redis.zcount(q.held, `(${now}`, '+inf'),
      this.redis.scard(q.done),
    ]);
    const size = sched + held;
    return { size, inProcess, completed, activeQueues: size > 0 ? 1 : 0, numberOfQueues: 1 };
  }

  /** Stats of one queue (all zero for an unknown one) or of every queue of a crawl. */
  async stats(crawl: string, key?: string): Promise<QueueStats> {
    const now = this.#now();
    const keys = await this.queueKeys(crawl, key);
    const all = await inChunks(keys, (k) => this.#queueStats(crawl, k, now));
    return all.reduce(
      (a, b) => ({
        size: a.size + b.size,
        inProcess: a.inProcess + b.inProcess,
        completed: a.completed + b.completed,
        activeQueues: a.activeQueues + b.activeQueues,
        numberOfQueues: a.numberOfQueues + b.numberOfQueues,
      }),
      { size: 0, inProcess: 0, completed: 0, activeQueues: 0, numberOfQueues: 0 },
    );
  }

  /** Queue keys of a crawl, page `start`/`size` among the matching ones; active only unless `includeInactive`. */
  async listQueues(crawl: string, start: number, size: number, includeInactive: boolean): Promise<string[]> {
    const all = await this.queues(crawl);
    let matching = all;
    if (!includeInactive) {
      const now = this.#now();
      const flags = await inChunks(all, async (key) => {
        const q = urlFrontierQueueKeys(this.prefix, crawl, key);
        const [sched, held, blocked] = await Promise.all([
          this.redis.zcard(q.sched),
          this.redis.zcard(q.held),
          this.redis.hget(q.info, 'blocked'),
        ]);
        return sched + held > 0 && !(blocked !== null && Number(blocked) >= now);
      });
      matching = all.filter((_, i) => flags[i]);
    }
    return matching.slice(start, start + size);
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
      const q = urlFrontierQueueKeys(this.prefix, crawl, k);
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

  /** SetDelay: the default (no key) or one queue's politeness delay in seconds; unknown queue: no-op. */
  async setDelay(crawl: string, key: string, seconds: number): Promise<void> {
    if (key === '') {
      await this.redis.hset(urlFrontierGlobalKeys(this.prefix).state, 'delay', seconds);
      return;
    }
    if (await this.hasQueue(crawl, key)) await this.#setAndWake(crawl, key, 'delay', seconds);
  }

  /**
   * Sets a queue's info field, then makes the queue due now: a shorter delay, an ended block or a higher limit may let
   * it produce before the time uf-serve gave it (or at all, if it had left `due`). uf-serve places it again on the
   * next GetURLs (out of `due` when it has nothing).
   */
  async #setAndWake(crawl: string, key: string, field: string, value: number): Promise<void> {
    const now = this.#now();
    await this.redis
      .multi()
      .hset(urlFrontierQueueKeys(this.prefix, crawl, key).info, field, value)
      .zadd(urlFrontierCrawlKeys(this.prefix, crawl).due, now, key)
      .zadd(urlFrontierGlobalKeys(this.prefix).queueDue, now, queueMember(crawl, key))
      .exec();
  }

  /** BlockQueueUntil: epoch s (0 unblocks); unknown queue: no-op. */
  async blockQueueUntil(crawl: string, key: string, epochSeconds: number): Promise<void> {
    if (await this.hasQueue(crawl, key)) await this.#setAndWake(crawl, key, 'blocked', epochSeconds * 1000);
  }

  /** SetCrawlLimit: false when the queue is unknown. */
  async setCrawlLimit(crawl: string, key: string, limit: number): Promise<boolean> {
    if (!(await this.hasQueue(crawl, key))) return false;
    await this.#setAndWake(crawl, key, 'limit', limit);
    return true;
  }

  async setActive(state: boolean): Promise<void> {
    await this.redis.hset(urlFrontierGlobalKeys(this.prefix).state, 'active', state ? 1 : 0);
  }

  async active(): Promise<boolean> {
    return (await this.redis.hget(urlFrontierGlobalKeys(this.prefix).state, 'active')) !== '0';
  }

  /** Every key name this store may have created (for tests' cleanup; never used in production paths). */
  async knownKeys(): Promise<string[]> {
    const g = urlFrontierGlobalKeys(this.prefix);
    const out: string[] = [g.crawls, g.state, g.queueDue, g.legacyCrawlDue, g.domainConfig, g.blacklist];
    for (const crawl of await this.crawls()) {
      out.push(...Object.values(urlFrontierCrawlKeys(this.prefix, crawl)));
      for (const key of await this.queues(crawl))
        out.push(...Object.values(urlFrontierQueueKeys(this.prefix, crawl, key)));
    }
    return out;
  }
}
