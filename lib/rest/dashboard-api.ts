/**
 * The JSON the dashboard's endpoints answer (the `data` of their SUCCESS envelope), in a module of its own so that
 * both sides check against it: the server that builds it (./dashboard.ts) and the page that reads it
 * (the scripts of ./dashboard/, type-checked by ./dashboard/tsconfig.json). It must stay a file of types that imports
 * nothing: the page's program has the DOM and no Node, so anything this pulled in would be checked there too.
 */

/** One crawl of the watched app. */
export interface DashboardCrawl {
  spiderid: string;
  appid: string;
  crawlid: string;
  /** Queued plus leased (being fetched) requests. */
  pending: number;
  queued: number;
  leased: number;
  done: number;
  failed: number;
  /** Domains with queued requests. */
  domains: number;
  maxdepth: number;
  /** Epoch seconds; 0 = never. */
  expires: number;
  /**
   * `running` while anything is pending; once nothing is: `failed` when every page of it failed, else `complete`
   * (some pages may have failed: `failed` > 0).
   */
  state: 'running' | 'complete' | 'failed';
  /** The latest failed pages (newest first, at most `MAX_FAILURES_SHOWN` of ./dashboard.ts): why they failed. */
  failures: DashboardFailure[];
}

/** One failed page: its URL, last HTTP status (null without a response) and the crawler's reason. */
interface DashboardFailure {
  url: string;
  status_code: number | null;
  exception: string;
  /** Epoch ms. */
  at: number;
}

/** `GET /ui/api/crawls`: the watched app's crawls. */
export interface DashboardCrawls {
  appid: string | null;
  crawls: DashboardCrawl[];
  /** Crawls of the app in the frontier (may exceed `crawls.length`, which is capped at `MAX_CRAWLS` of ./dashboard.ts). */
  crawls_total: number;
}

/** `GET /ui/api/queues`: the backlog, and the domains holding most of it. */
export interface DashboardQueues {
  total_backlog: number;
  /** Domains with queued requests, per spider type, summed (a domain queued under two spider types counts twice). */
  num_domains: number;
  /** The domains with the most queued requests, most first. */
  top: { spiderid: string; domain: string; backlog: number }[];
}

/** `GET /ui/api/fleet`: who is alive. */
export interface DashboardFleet {
  /**
   * Crawler processes, one per spider type each serves: those that beat in the last `CRAWLER_LISTED_MS` of
   * ./dashboard.ts (a crawler that stops cleanly removes its heartbeat at once).
   */
  crawlers: { spiderid: string; node: string; beating: boolean }[];
  /** Live node ids per monitor kind. */
  nodes: Record<'kafka-monitor' | 'redis-monitor' | 'rest', string[]>;
}

/** `GET /ui/api/throughput`: pages fetched, from the crawler counters. */
export interface DashboardThroughput {
  /** Pages fetched (every `crawler:*` counter: any HTTP status or error kind), ever / last 15 min / last hour. */
  pages_total: number;
  pages_15m: number;
  pages_1h: number;
  /** Of those, pages answered 2xx or 3xx. */
  ok_total: number;
  ok_15m: number;
  /** Counts per status (HTTP code or error kind), most frequent first, at most 12. */
  by_status: { status: string; total: number; last_15m: number }[];
  /**
   * Pages fetched per minute over the last 15 minutes, oldest first, from the counters' own buckets (60 s, aligned
   * on the epoch; the last one is the minute under way): the chart's history when the page loads.
   */
  minutes: { start_ms: number; pages: number }[];
  /**
   * With CRAWLER_PROXIES: requests per proxy (the `proxy:<name>:<outcome>` counters, by the proxy's name), `ok` the
   * site answered, `failed` the proxy failed them; most requests first, at most 20. Empty without proxies.
   */
  proxies: { name: string; ok_total: number; ok_15m: number; failed_total: number; failed_15m: number }[];
}

/** `GET /ui/api/overview`: everything above in one answer (what the page polls). */
export interface DashboardOverview extends DashboardCrawls {
  /** The server's clock (epoch ms), for rates computed by the page. */
  server_time_ms: number;
  queues: DashboardQueues;
  fleet: DashboardFleet;
  throughput: DashboardThroughput;
}
