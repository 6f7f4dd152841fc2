/**
 * The stats store's data, as the ports (lib/ports.ts StatsStore) name it: the windows of the `stats` replies, a
 * counter's counts and increments, a minute of history, and the failed pages kept per crawl. lib/redis/stats.ts and
 * lib/redis/failure-log.ts implement the store over them; the crawler, the monitors and the REST API take them from
 * here, never from the Redis side.
 */

/** The windows of the stats replies, in seconds, in reply order (docs/contract.md). */
export const STATS_WINDOWS = ['900', '3600', '21600', '43200', '86400', '604800'] as const;

/** A window of the stats replies, in seconds. */
export type StatsWindow = (typeof STATS_WINDOWS)[number];

/** One counter's counts: one per window (lib/redis/stats.ts says how exact each is) and the lifetime total. */
export type StatsCounts = Record<StatsWindow | 'lifetime', number>;

/** An increment of one counter. */
export interface StatsIncrement {
  /** The counter name, e.g. `kafka-monitor:total` or `crawler:<machine>:200`. */
  name: string;
  /**
   * How much to add: an integer ≥ 0. With 0 the name is registered and nothing is counted.
   * @default 1
   */
  by?: number;
}

/** One minute of a counter's history: the `900` window's bucket that starts at `startMs`. */
export interface MinuteCount {
  startMs: number;
  count: number;
}

/** Which crawl. */
export interface CrawlKey {
  spiderid: string;
  appid: string;
  crawlid: string;
}

/** One failed page, as the dashboard shows it. */
export interface FailureNote {
  url: string;
  /** The last HTTP status, when the request got a response. */
  status_code: number | null;
  exception: string;
  /** Epoch ms. */
  at: number;
}
