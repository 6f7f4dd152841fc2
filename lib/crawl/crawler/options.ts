/**
 * What a crawler process is given (lib/crawl/crawler/crawler.ts): its ports (frontier, fetcher, robots, sink, stats, body
 * store, spider sandbox), its identity and its tuning, each with its default.
 */
import type { CrawlerFrontier, Log, MessageSink, StatsStore } from '../../ports.ts';
import type { BodyStore } from '../fetch/body-store.ts';
import type { RobotsCache } from '../fetch/robots.ts';
import type { Fetcher, Spider } from '../types.ts';
import type { ConcurrencyController, LoadSignals } from './concurrency.ts';
import type { SpiderSandboxPort } from './fetch-slot.ts';

export interface CrawlerOptions {
  frontier: CrawlerFrontier;
  fetcher: Fetcher;
  /** Undefined when robots.txt is not obeyed. `checkNow`, where given, is asked first (no promise per page). */
  robots?: Pick<RobotsCache, 'check'> & Partial<Pick<RobotsCache, 'checkNow'>>;
  sink: MessageSink;
  stats: StatsStore;
  spiders: ReadonlyMap<string, Spider>;
  /** Spider types to lease for, in turn. */
  spiderTypes: string[];
  topicPrefix: string;
  /** @default false */
  appidTopics?: boolean;
  /** Page bodies base64 (`KAFKA_BASE_64_ENCODE`). @default false */
  base64?: boolean;
  /** Largest page message; bigger bodies go to `bodyStore`. @default 1000000 */
  maxMessageBytes?: number;
  bodyStore?: BodyStore;
  /** Requests fetched and processed at once. @default 16 */
  concurrency?: number;
  /**
   * Most requests of one domain fetched at once by this process (lib/crawl/crawler/domain-inflight.ts): a slow or dead site cannot
   * hold every slot. @default 16 (the fetcher's connections per origin)
   */
  domainConcurrency?: number;
  /**
   * Adaptive concurrency (lib/crawl/crawler/concurrency.ts): the fetch slots follow `controller.limit`, which `signals` feed
   * once per `tickMs` (default 500; half that while it ramps up) with the most slots in use during the tick; `concurrency` is then ignored.
   * @default none: `concurrency` fixed slots
   */
  adaptive?: { controller: ConcurrencyController; signals: () => LoadSignals; tickMs?: number };
  /**
   * Pages being published and acked in the background at once, beyond `concurrency`: a worker takes its next
   * request as soon as its page is processed, not when Kafka and Redis have stored it (a produce waits its linger
   * and the broker), unless this many deliveries are pending. Bounds the pages held in memory (each delivering
   * page holds its message, at most `maxMessageBytes`, and its children). @default concurrency ×
   * delivery.ts DELIVERIES_PER_FETCH
   */
  maxDelivering?: number;
  /**
   * Where plugin spiders' code runs (lib/crawl/spiders/sandbox.ts): the spider types it serves and how to run a page
   * there. Spider types not in `spiders` run on this event loop. @default none: every spider runs here
   */
  sandbox?: SpiderSandboxPort;
  /**
   * Time budget of a spider's async parse on this event loop (ms): past it the page is a failed try and its slot
   * is free (the sandbox enforces the same budget for plugins, synchronous code included). @default 30000
   */
  parseTimeoutMs?: number;
  /**
   * Distinct links read from one HTML page (`CRAWLER_MAX_LINKS`): a page with more carries the first ones, with
   * `links_stopped`, and is logged. @default 10000
   */
  maxLinks?: number;
  /** @default 3 */
  retryTimes?: number;
  /** @default 2000 */
  retryBaseDelayMs?: number;
  /** Default User-Agent. */
  userAgent: string;
  /** Egress IP for IP-scoped throttles. */
  ip?: string;
  /** host:pid, for heartbeats and machine stats. */
  nodeId: string;
  host: string;
  log: Log;
  /** @default Date.now */
  now?: () => number;
  /**
   * Backoff after a lease call fails (ms); idle workers other than the poller look again after 5 times this even if
   * nobody wakes them (lib/crawl/crawler/idle.ts). @default 1000
   */
  idlePollMs?: number;
  /**
   * How often the one idle worker of a process that polls (lib/crawl/crawler/idle.ts) looks for new work (ms); when it leases
   * something it wakes others. A spider type with no work at all is asked after this, then after twice as long while
   * it stays empty, up to lib/crawl/crawler/leasing.ts QUIET_MAX_MS (500): new work of an idle type is picked up within that.
   * @default 50
   */
  scoutPollMs?: number;
  /**
   * How long a page message waits for others to be produced with it (ms; 0: one produce per page). The workers'
   * pages go out in one produce request per linger (lib/kafka/batching-sink.ts), each acked only once its batch
   * is stored. @default 5 (lib/crawl/crawler/delivery.ts DEFAULT_PRODUCE_LINGER_MS)
   */
  produceLingerMs?: number;
  /**
   * Page counters (`crawler:<spider>:<status>`, `machine:<host>:<status>`) are summed in process and written to
   * the stats store once per this many ms, and at stop (so a SIGTERM loses none): one Redis call a second instead
   * of one per page. 0 writes each page's at once. @default 1000
   */
  statsFlushMs?: number;
  /** Time between two heartbeats, each carrying the process's load report (lib/crawl/crawler/load-report.ts). @default 10000 */
  heartbeatMs?: number;
  /**
   * The frontier's lease duration (ms; `LEASE_TIMEOUT` × 1000): leases held this long without an end are extended
   * before it runs out (lib/crawl/crawler/lease-keeper.ts). @default 120000
   */
  leaseMs?: number;
}
