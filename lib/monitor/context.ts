/**
 * What every monitor operation needs, handed in by its entry point (docs/style.md §4): the frontier, the stats
 * store, a message sink, names, and a clock. Nothing here opens a connection.
 */
import type { FrontierApi, Log, MessageSink, ReplyStore, StatsStore, UrlFrontierView } from '../ports.ts';

export interface MonitorContext {
  frontier: FrontierApi;
  /**
   * The URL Frontier API's crawls (spider ID `url-frontier` in info, stop and stats; domain overrides apply to
   * them). Without it they are not shown.
   */
  urlFrontier?: UrlFrontierView;
  stats: StatsStore;
  replies: ReplyStore;
  sink: MessageSink;
  /** Kafka topic prefix (`KAFKA_TOPIC_PREFIX`). */
  topicPrefix: string;
  /** Also publish to per-app topics (`KAFKA_APPID_TOPICS`). @default false */
  appidTopics: boolean;
  /** Registered spider types; requests naming others are rejected. */
  spiders: ReadonlySet<string>;
  /** Seconds a reply stays stored under its uuid for REST polling. @default 300 */
  replyTtlSec: number;
  /** This process's id in heartbeats (host:pid). */
  nodeId: string;
  log: Log;
  /** Epoch ms. @default Date.now */
  now: () => number;
}

/** Epoch seconds, as every reply's `server_time`. */
export function serverTime(ctx: Pick<MonitorContext, 'now'>): number {
  return Math.floor(ctx.now() / 1000);
}
