/**
 * The URL Frontier store's frontier-wide indexes: `qdue` (every crawl's due queues, which GetURLs over every crawl
 * claims from) and the `backlog` total (URLs scheduled or held, which the stats run reads). The scripts keep both
 * from the moment a frontier is created; a frontier stored by an older version lacks one or both, and is walked
 * once, crawl by crawl, in pages (scripts/uf-index.lua), until its state says `indexed` 2 (the older index over
 * crawls, `cdue`, goes then). Such a frontier is one partition (`{<prefix>:uf}`): partitions (`FRONTIER_PARTITIONS`
 * > 1) came after both indexes, so a partitioned frontier has them from its creation and is never walked.
 */
import type { RedisClient } from '../client.ts';
import { runScript, script } from '../scripts.ts';
import {
  type UrlFrontierPartition,
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierIndexKeys,
} from './keys.ts';
import { QUEUES_PER_CALL } from './model.ts';

/** The state's `indexed` once the frontier is (scripts/includes/uf.lua INDEXED); an older mark is walked again. */
const INDEXED = '2';

/** Crawls indexed per step of the walk (one SSCAN page; its queue lists and uf-index calls go out together). */
const INDEX_PAGE = 500;

/**
 * How long one GetURLs over every crawl, or one stats run, walks an older frontier before it answers (from what is
 * indexed so far): the walk goes on at the next one.
 */
const INDEX_BUDGET_MS = 1000;

/** The walk of an older frontier: shared by a store's callers, so two calls in one process never walk twice. */
export class UrlFrontierIndex {
  readonly #redis: RedisClient;
  readonly #partition: UrlFrontierPartition;
  #indexed: boolean;
  #walking: Promise<boolean> | undefined;

  /**
   * @param partition the frontier's one partition (`{<prefix>:uf}`)
   * @param indexed true for a frontier known to be indexed from its creation (a partitioned one): nothing is walked
   */
  constructor(redis: RedisClient, partition: UrlFrontierPartition, indexed = false) {
    this.#redis = redis;
    this.#partition = partition;
    this.#indexed = indexed;
  }

  /** Whether the frontier is indexed, as last seen (an indexed frontier never goes back). */
  get indexed(): boolean {
    return this.#indexed;
  }

  /** Records what the frontier's state said of `indexed` (read by the caller along with other state fields). */
  saw(indexed: string | null | undefined): void {
    if (indexed === INDEXED) this.#indexed = true;
  }

  /**
   * Walks an older frontier for up to `budgetMs` (at least one page), unless it is indexed; calls in one process
   * share one walk. @returns whether the frontier is indexed now
   */
  async walk(budgetMs = INDEX_BUDGET_MS): Promise<boolean> {
    if (this.#indexed) return true;
    this.#walking ??= this.#walkFor(budgetMs).finally(() => {
      this.#walking = undefined;
    });
    return this.#walking;
  }

  async #walkFor(budgetMs: number): Promise<boolean> {
    const until = performance.now() + budgetMs;
    do {
      if (await this.step()) return true;
    } while (performance.now() < until);
    return false;
  }

  /**
   * One page of the walk: the crawls from the cursor in the frontier's state (SSCAN), each indexed, then the cursor
   * moved on (or, at the end, the frontier marked indexed). A cursor written by another server's step is as good:
   * every page before it was indexed first, so the walk that reaches the end has covered every crawl there was when
   * it began (later crawls are indexed by the scripts that create them).
   * @returns whether the frontier is indexed now
   */
  async step(): Promise<boolean> {
    const g = urlFrontierGlobalKeys(this.#partition);
    const [indexed, cursor] = await this.#redis.hmget(g.state, 'indexed', 'icursor');
    this.saw(indexed);
    if (this.#indexed) return true;
    const [next, crawls] = await this.#redis.sscan(g.crawls, cursor ?? '0', 'COUNT', INDEX_PAGE);
    await Promise.all(crawls.map((crawl) => this.#indexCrawl(crawl)));
    if (next === '0') {
      await this.#redis
        .multi()
        .hset(g.state, 'indexed', INDEXED)
        .hdel(g.state, 'icursor')
        .unlink(g.legacyCrawlDue)
        .exec();
      this.#indexed = true;
      return true;
    }
    await this.#redis.hset(g.state, 'icursor', next);
    return false;
  }

  /** Indexes one crawl: its due queues in `qdue`, its queues in the backlog total; {@link QUEUES_PER_CALL} a call. */
  async #indexCrawl(crawl: string): Promise<void> {
    const queues = await this.#redis.zrange(urlFrontierCrawlKeys(this.#partition, crawl).queues, '0', '-1');
    const calls: Promise<number>[] = [];
    for (let i = 0; i === 0 || i < queues.length; i += QUEUES_PER_CALL) {
      const part = queues.slice(i, i + QUEUES_PER_CALL);
      calls.push(
        runScript<number>(this.#redis, script('uf-index'), urlFrontierIndexKeys(this.#partition, crawl, part), [
          crawl,
          ...part,
        ]),
      );
    }
    await Promise.all(calls);
  }
}
