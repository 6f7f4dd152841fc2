/**
 * The crawler's page counters (`crawler:<spider>:<status>`, `machine:<host>:<status>`; docs/contract.md's stats), and
 * with CRAWLER_PROXIES the requests per proxy (`proxy:<name>:<outcome>`, docs/proxies.md):
 * summed in process and written to the stats store once per `flushMs`, and at stop (so a SIGTERM loses none): one
 * Redis call a second instead of one per page. A failed write keeps them for the next one.
 */
import type { Log, StatsStore } from '../../ports.ts';
import type { CrawlKey, FailureNote, StatsIncrement } from '../../stats-model.ts';

/** Distinct counter names kept in process while the stats store cannot be written. */
const MAX_PENDING_COUNTERS = 10_000;

export class PageCounters {
  readonly #stats: StatsStore;
  readonly #host: string;
  readonly #flushMs: number;
  readonly #now: () => number;
  readonly #log: Log;
  /** Page counters not yet written, by name. */
  #counts = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;

  /** `flushMs` 0 writes each page's counters at once. */
  constructor(o: { stats: StatsStore; host: string; flushMs: number; now: () => number; log: Log }) {
    this.#stats = o.stats;
    this.#host = o.host;
    this.#flushMs = o.flushMs;
    this.#now = o.now;
    this.#log = o.log;
  }

  /** Counts one page of `spiderid` with `status` (an HTTP status, `retry`, `robots` or `error`). */
  async count(spiderid: string, status: string): Promise<void> {
    this.#add(`crawler:${spiderid}:${status}`);
    this.#add(`machine:${this.#host}:${status}`);
    await this.#schedule();
  }

  /** Counts one request through the proxy named `proxy` (its name, never its URL) that came to `outcome`. */
  countProxy(proxy: string, outcome: string): void {
    this.#add(`proxy:${proxy}:${outcome}`);
    void this.#schedule();
  }

  #add(name: string): void {
    this.#counts.set(name, (this.#counts.get(name) ?? 0) + 1);
  }

  /** Writes at once when `flushMs` is 0, else once the flush timer fires. */
  async #schedule(): Promise<void> {
    if (this.#flushMs <= 0) return this.flush();
    if (!this.#timer) {
      this.#timer = setTimeout(() => void this.flush(), this.#flushMs);
      this.#timer.unref();
    }
  }

  /** Records a failed page of a crawl in the stats store's failure log (lib/redis/failure-log.ts). */
  noteFailure(crawl: CrawlKey, note: FailureNote): Promise<void> {
    return this.#stats.noteFailure(crawl, note);
  }

  /**
   * Writes the summed counters to the stats store. A failed write keeps them for the next one, so a Redis blip loses
   * no count (at most {@link MAX_PENDING_COUNTERS} distinct names are kept).
   */
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#counts.size === 0) return;
    const counts = this.#counts;
    this.#counts = new Map();
    const incs: StatsIncrement[] = [...counts].map(([name, by]) => ({ name, by }));
    try {
      await this.#stats.increment(incs, this.#now());
    } catch (error) {
      for (const [name, by] of counts)
        if (this.#counts.has(name) || this.#counts.size < MAX_PENDING_COUNTERS)
          this.#counts.set(name, (this.#counts.get(name) ?? 0) + by);
      this.#log.warn('page counters not written; kept for the next try', { error: (error as Error).message });
    }
  }
}
