/**
 * The URL Frontier store's part of `crawl-cluster frontier reshard` (lib/redis/reshard.ts runs it with the crawl
 * frontier's): a prefix's URL frontier moved from `from` partitions (`FRONTIER_PARTITIONS`) to `to`, whose keys share
 * no name with the old ones (lib/redis/url-frontier/keys.ts). In order:
 * 1. **Fence.** The state of every partition of both counts gets a `fence` message: every script a server writes with
 *    refuses while it is there (scripts/includes/uf.lua), so a server still running, at either count, answers
 *    UNAVAILABLE instead of changing what is being moved or writing where nothing will read.
 * 2. **Index.** A frontier of one partition stored by an older version is indexed first (index-walk.ts), so every
 *    queue is in `qdue` and counted.
 * 3. **Settings.** The active flag and default delay, the domain overrides and the blacklist of the first old
 *    partition (every partition holds the same: settings.ts) go to every new partition, which is marked indexed.
 * 4. **Queues.** Every crawl's queues, a page of its `queues` at a time, each to the partition of its key
 *    (reshard-queues.ts): copied, registered there (the crawl, its queue list and due index, `qdue`, the backlog
 *    total), then taken from the old partition.
 * 5. **Delete** (once nothing is left in the old partitions): the old partitions' frontier-wide keys go, but for a
 *    state holding only a fence that tells a server still started with the old count where the frontier went; the new
 *    partitions' fences are lifted.
 *
 * Held URLs (GetURLs's holds, the URL Frontier's leases) do not hold the move back: a hold is frontier state, moved
 * with its URL and its end, and it names no partition. The client that holds the URL completes it later through any
 * server, by crawl ID, key and URL, and finds it in the new partition; a hold whose client died ends there as it would
 * have in the old one. (A crawl frontier lease is different: a live crawler writes its ack into the lease's partition
 * itself, so the move waits for leases.) Every step can die and be run again (the move's record says which steps are
 * left): the fence and the settings are sets, the queues are copied from what the old partitions hold.
 */
import type { RedisClient } from '../client.ts';
import { ReshardRefusedError } from '../reshard-errors.ts';
import { holdKeys } from './holds.ts';
import { UrlFrontierIndex } from './index-walk.ts';
import {
  type UrlFrontierPartition,
  type UrlFrontierPartitions,
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierPartitions,
} from './keys.ts';
import { QueueMover } from './reshard-queues.ts';

/** Crawls per SSCAN page of a partition's `crawls`; queue keys per ZRANGE page of a crawl's `queues`. */
const CRAWL_PAGE = 500;
const QUEUE_PAGE = 500;
/** Fields or members per HSCAN / SSCAN page of the domain overrides and the blacklist. */
const SETTINGS_PAGE = 500;

/**
 * What a move does with the URL Frontier store, decided by its first run and kept in its record: `move` it, or `skip`
 * it (the old count holds none of it, or holds no crawl while the new count holds some).
 */
export type UrlFrontierPlan = 'move' | 'skip';

/** The steps the URL Frontier's part of a move reports (`put` and `take` alternate, a group of queues at a time). */
export type UrlFrontierStep = 'uf-settings' | 'uf-put' | 'uf-take';

export interface UrlFrontierMoveSummary {
  plan: UrlFrontierPlan;
  /** Crawls whose queues this run moved. */
  crawls: number;
  /** Queues moved by this run, of every crawl. */
  queues: number;
  /** URLs of those queues (active and completed), those held by GetURLs, those completed. */
  urls: number;
  held: number;
  completed: number;
  /** Queues the new partitions held already: copied by a run that died before taking them from the old. */
  present: number;
  /** Domain overrides and blacklisted domains copied (into every new partition). */
  domainConfigs: number;
  blacklisted: number;
  /** The time this part took, ms. */
  ms: number;
}

export function emptyUrlFrontierSummary(plan: UrlFrontierPlan = 'skip'): UrlFrontierMoveSummary {
  return {
    plan,
    crawls: 0,
    queues: 0,
    urls: 0,
    held: 0,
    completed: 0,
    present: 0,
    domainConfigs: 0,
    blacklisted: 0,
    ms: 0,
  };
}

/** Reports a step: the queues moved so far in this run, of those the old partitions held when it began. */
export type UrlFrontierReport = (step: UrlFrontierStep, queues: number, total: number) => Promise<void>;

/** The move of one prefix's URL frontier from `from` partitions to `to` (see the module doc). */
export class UrlFrontierMove {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly olds: UrlFrontierPartitions;
  readonly news: UrlFrontierPartitions;

  constructor(redis: RedisClient, prefix: string, from: number, to: number) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.olds = urlFrontierPartitions(prefix, from);
    this.news = urlFrontierPartitions(prefix, to);
  }

  async #crawlCount(ps: UrlFrontierPartitions): Promise<number> {
    const counts = await Promise.all(ps.map((p) => this.#redis.scard(urlFrontierGlobalKeys(p).crawls)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * Decides, at a move's first run, what it does with the store: `move` when the old count holds crawls or settings.
   * @throws ReshardRefusedError when both counts hold crawls (servers started with the new count before the move):
   * merging would have to choose between two versions of a queue
   */
  async plan(): Promise<UrlFrontierPlan> {
    const [olds, news] = await Promise.all([this.#crawlCount(this.olds), this.#crawlCount(this.news)]);
    if (olds > 0 && news > 0)
      throw new ReshardRefusedError(
        `the URL Frontier store holds crawls at both partition counts: ${olds} at ${this.olds.length} and ${news} at ` +
          `${this.news.length} (servers started with FRONTIER_PARTITIONS=${this.news.length} before the move?). ` +
          'Delete the crawls of one of them (DeleteCrawl), then run this again (nothing was moved)',
      );
    if (olds > 0) return 'move';
    if (news > 0) return 'skip';
    for (const p of this.olds) {
      const g = urlFrontierGlobalKeys(p);
      const [active, delay] = await this.#redis.hmget(g.state, 'active', 'delay');
      if (active !== null || delay !== null || (await this.#redis.exists(g.domainConfig, g.blacklist)) > 0)
        return 'move';
    }
    return 'skip';
  }

  /** Fences every partition of both counts (step 1), so no server of this version writes until the move is done. */
  async fence(): Promise<void> {
    const message =
      `the URL frontier of prefix ${this.#prefix} is being moved from ${this.olds.length} to ${this.news.length} ` +
      'partitions (crawl-cluster frontier reshard): try again once the move is done';
    await Promise.all(
      [...this.olds, ...this.news].map((p) => this.#redis.hset(urlFrontierGlobalKeys(p).state, 'fence', message)),
    );
  }

  /** The queues the old partitions hold: per crawl page, one pipelined ZCARD per crawl. */
  async queueCount(): Promise<number> {
    let n = 0;
    for (const p of this.olds)
      await this.#eachCrawlPage(p, async (crawls) => {
        const pipeline = this.#redis.pipeline();
        for (const crawl of crawls) pipeline.zcard(urlFrontierCrawlKeys(p, crawl).queues);
        for (const [error, count] of (await pipeline.exec()) ?? []) {
          if (error) throw error;
          n += Number(count);
        }
      });
    return n;
  }

  /** Every crawl of `p`'s `crawls`, a page at a time (SSCAN: a crawl that leaves during the walk may be missed). */
  async #eachCrawlPage(p: UrlFrontierPartition, page: (crawls: string[]) => Promise<void>): Promise<void> {
    let cursor = '0';
    do {
      const [next, crawls] = await this.#redis.sscan(urlFrontierGlobalKeys(p).crawls, cursor, 'COUNT', CRAWL_PAGE);
      cursor = next;
      if (crawls.length > 0) await page(crawls);
    } while (cursor !== '0');
  }

  /** The copy phase (steps 2 to 4), into `summary`; `report` after every step. */
  async copy(summary: UrlFrontierMoveSummary, report: UrlFrontierReport): Promise<void> {
    const started = Date.now();
    if (this.olds.length === 1) {
      const index = new UrlFrontierIndex(this.#redis, this.olds[0]);
      while (!(await index.step()));
    }
    await this.#copySettings(summary);
    const total = await this.queueCount();
    let moved = 0;
    await report('uf-settings', moved, total);
    const crawls = new Set<string>();
    const mover = new QueueMover(
      this.#redis,
      this.news,
      () => report('uf-put', moved, total),
      async (n) => {
        moved += n;
        await report('uf-take', moved, total);
      },
    );
    for (const p of this.olds)
      await this.#eachCrawlPage(p, async (page) => {
        // The first page of each crawl's queues, read together; each page is taken from the old partition once moved,
        // so a crawl whose page was full is read again from its (new) first page.
        for (let pending = page; pending.length > 0; ) {
          const reading = this.#redis.pipeline();
          for (const crawl of pending)
            reading.zrange(urlFrontierCrawlKeys(p, crawl).queues, '0', String(QUEUE_PAGE - 1));
          const lists = ((await reading.exec()) ?? []).map(([error, keys]) => {
            if (error) throw error;
            return keys as string[];
          });
          const groups = pending.map((crawl, i) => ({ crawl, keys: lists[i] ?? [] })).filter((g) => g.keys.length > 0);
          for (const { crawl } of groups) crawls.add(crawl);
          await mover.move(p, groups);
          pending = groups.filter((g) => g.keys.length === QUEUE_PAGE).map((g) => g.crawl);
        }
      });
    const { queues, urls, held, completed, present } = mover.counts;
    Object.assign(summary, { crawls: crawls.size, queues, urls, held, completed, present });
    summary.ms += Date.now() - started;
  }

  /**
   * Step 3: the first old partition's settings into every new partition, each marked indexed. The new partitions'
   * domain overrides and blacklist are replaced, not merged (the move runs only when the new count holds no crawl).
   */
  async #copySettings(summary: UrlFrontierMoveSummary): Promise<void> {
    const r = this.#redis;
    const from = urlFrontierGlobalKeys(this.olds[0]);
    const news = this.news.map(urlFrontierGlobalKeys);
    const [active, delay] = await r.hmget(from.state, 'active', 'delay');
    for (const g of news) {
      const set: Record<string, string> = { indexed: '2' };
      if (typeof active === 'string') set.active = active;
      if (typeof delay === 'string') set.delay = delay;
      await r.hset(g.state, set);
      const unset = [typeof active === 'string' ? '' : 'active', typeof delay === 'string' ? '' : 'delay'].filter(
        Boolean,
      );
      if (unset.length > 0) await r.hdel(g.state, ...unset);
      await r.unlink(g.domainConfig, g.blacklist);
    }
    let cursor = '0';
    do {
      const [next, flat] = await r.hscan(from.domainConfig, cursor, 'COUNT', SETTINGS_PAGE);
      cursor = next;
      if (flat.length > 0) await Promise.all(news.map((g) => r.hset(g.domainConfig, ...flat)));
      summary.domainConfigs += flat.length / 2;
    } while (cursor !== '0');
    do {
      const [next, domains] = await r.sscan(from.blacklist, cursor, 'COUNT', SETTINGS_PAGE);
      cursor = next;
      if (domains.length > 0) await Promise.all(news.map((g) => r.sadd(g.blacklist, ...domains)));
      summary.blacklisted += domains.length;
    } while (cursor !== '0');
  }

  /** Crawls the old partitions hold once every queue was moved: 0, unless something wrote there meanwhile. */
  leftBehind(): Promise<number> {
    return this.#crawlCount(this.olds);
  }

  /** Step 5: the old partitions emptied but for a fence that says where the frontier went; the new ones unfenced. */
  async finish(): Promise<void> {
    const to = this.news.length;
    const moved =
      `the URL frontier of prefix ${this.#prefix} moved to ${to} partitions (crawl-cluster frontier reshard): ` +
      `restart this server with FRONTIER_PARTITIONS=${to}`;
    for (const p of this.olds) {
      const g = urlFrontierGlobalKeys(p);
      await this.#redis.unlink(g.crawls, g.queueDue, g.legacyCrawlDue, g.domainConfig, g.blacklist);
      // What is left of the holds: entries of the queues moved away (their holds went with them).
      const holds = await holdKeys(this.#redis, p);
      for (let i = 0; i < holds.length; i += 1000) await this.#redis.unlink(...holds.slice(i, i + 1000));
      await this.#redis.multi().del(g.state).hset(g.state, 'fence', moved).exec();
    }
    await Promise.all(this.news.map((p) => this.#redis.hdel(urlFrontierGlobalKeys(p).state, 'fence')));
  }
}
