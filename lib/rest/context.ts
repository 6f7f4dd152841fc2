/**
 * What the REST API needs, handed in by its entry point (docs/style.md §4): the message sink, the reply and stats
 * stores, health probes, names, a clock and the timing options. Nothing here opens a connection: the Lambda
 * builds it at module scope (functions/rest/deps.ts), `crawl-cluster local` and the tests build their own.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { MonitorContext } from '../monitor/context.ts';
import type { StateStore, UrlFrontierView } from '../ports.ts';
import type { Frontier } from '../redis/frontier.ts';
import { MAX_REQUEST_BYTES } from '../schemas/index.ts';

/**
 * Round trips to the two services the API depends on. Each resolves when the service answered and rejects
 * (or never settles) when it did not; the API bounds every probe with {@link RestOptions.probeTimeoutMs}.
 */
export interface HealthProbes {
  /** A Redis round trip (PING) on the connection the stores use, or one to the same Redis. */
  redis(): Promise<void>;
  /** A Kafka round trip (cluster metadata) to the brokers the sink produces to. */
  kafka(): Promise<void>;
}

/** Timing and size options of the REST API; every one has a default. */
export interface RestOptions {
  /**
   * How long `POST /feed` waits for the reply to a request with a uuid before answering `{"poll_id"}`
   * (Scrapy Cluster's `WAIT_FOR_RESPONSE_TIME`, in ms here). 0 answers `poll_id` at once. Keep it under the
   * Lambda timeout and API Gateway's 30 s integration limit.
   * @default 5000
   */
  waitForResponseMs?: number;
  /**
   * Interval between two reads of the stored reply while `POST /feed` waits.
   * @default 100
   */
  pollIntervalMs?: number;
  /**
   * Largest request body accepted; larger bodies are answered 413. The kafka-monitor refuses messages over
   * the same limit, so a body that passes here also passes there.
   * @default MAX_REQUEST_BYTES (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Bound of one health probe; a probe that has not answered by then counts as disconnected.
   * @default 2000
   */
  probeTimeoutMs?: number;
  /**
   * Bound of producing one request to Kafka. A send still unacknowledged then is answered 500: the request
   * may or may not have been queued (kafkajs keeps retrying in the background).
   * @default 10000
   */
  sendTimeoutMs?: number;
  /**
   * Bound of one best-effort stats write (counters and heartbeat, lib/rest/stats-tally.ts). Requests never
   * wait on it; a write that has not answered by then is given up and its counts dropped.
   * @default 1000
   */
  statsTimeoutMs?: number;
  /**
   * Least time between two stats writes: requests add to counts in memory, and the first request after this
   * interval (or the adapter's timer) writes them all in one round trip.
   * @default 1000
   */
  statsFlushMs?: number;
  /**
   * Least time between two heartbeats of this node (kind `rest`); requests in between do not beat.
   * @default 30000
   */
  heartbeatEveryMs?: number;
}

/** The frontier reads of the web dashboard (`/ui/api/...`): counters and registries only, never a scan. */
export type DashboardFrontier = Pick<Frontier, 'spiders' | 'appInfo' | 'queueSummary'>;

/** The REST API's context: the monitor context's parts it uses, plus health probes and options. */
export interface RestContext
  extends Pick<
    MonitorContext,
    | 'sink'
    | 'replies'
    | 'stats'
    | 'spiders'
    | 'spiderTypes'
    | 'proxyGroups'
    | 'fleetWake'
    | 'topicPrefix'
    | 'nodeId'
    | 'log'
    | 'now'
  > {
  health: HealthProbes;
  /**
   * The frontier the web dashboard reads crawls and queues from (lib/rest/dashboard.ts). Without it the
   * dashboard's JSON endpoints answer 503; the rest of the API does not use it.
   */
  frontier?: DashboardFrontier;
  /** The URL Frontier API's crawls, whose queues the dashboard lists as spider type `url-frontier`. */
  urlFrontier?: Pick<UrlFrontierView, 'backlog'>;
  /**
   * The record of lost frontier state (lib/redis/state-marker.ts): `GET /` is RED with the reason while a loss is not
   * acknowledged, `POST /ack-lost` acknowledges. Without it neither is shown.
   */
  lostState?: Pick<StateStore, 'record' | 'ack'>;
  /**
   * When this node started (epoch ms), for `uptime_sec`.
   * @default the time the router was created
   */
  startedAt?: number;
  options?: RestOptions;
  /**
   * Waits between two reads of a stored reply; tests pass one that advances a fake clock.
   * @default node:timers/promises setTimeout
   */
  sleep?: (ms: number) => Promise<void>;
}

/** {@link RestOptions} with every default filled in. */
export type ResolvedRestOptions = Required<RestOptions>;

/** Fills in the defaults of {@link RestOptions}. */
export function resolveRestOptions(options: RestOptions = {}): ResolvedRestOptions {
  return {
    waitForResponseMs: options.waitForResponseMs ?? 5000,
    pollIntervalMs: options.pollIntervalMs ?? 100,
    maxBodyBytes: options.maxBodyBytes ?? MAX_REQUEST_BYTES,
    probeTimeoutMs: options.probeTimeoutMs ?? 2000,
    sendTimeoutMs: options.sendTimeoutMs ?? 10_000,
    statsTimeoutMs: options.statsTimeoutMs ?? 1000,
    statsFlushMs: options.statsFlushMs ?? 1000,
    heartbeatEveryMs: options.heartbeatEveryMs ?? 30_000,
  };
}

/** The real wait between two reads of a stored reply. */
export const realSleep = (ms: number): Promise<void> => delay(ms);
