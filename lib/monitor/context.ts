/**
 * What every monitor operation needs, handed in by its entry point (STYLE.md §4): the frontier, the stats
 * store, a message sink, names, and a clock. Nothing here opens a connection.
 */
import type { MessageSink } from '../kafka/sink.ts';
import type { Frontier } from '../redis/frontier.ts';
import type { ReplyStore, StatsStore } from './stores.ts';

/** Structured log lines; the adapters back it with Powertools Logger, tests with an array. */
export interface MonitorLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The frontier operations the monitors use (a fake implements this in unit tests). */
export type FrontierApi = Pick<
  Frontier,
  | 'enqueue'
  | 'stop'
  | 'crawlInfo'
  | 'appInfo'
  | 'configureDomain'
  | 'spiders'
  | 'backlog'
  | 'dueCrawls'
  | 'reclaim'
  | 'sweepFinished'
>;

export interface MonitorContext {
  frontier: FrontierApi;
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
  log: MonitorLog;
  /** Epoch ms. @default Date.now */
  now: () => number;
}

/** A log that drops everything (tests that do not look at logs). */
export const silentLog: MonitorLog = { info() {}, warn() {}, error() {} };

/** Epoch seconds, as every reply's `server_time`. */
export function serverTime(ctx: Pick<MonitorContext, 'now'>): number {
  return Math.floor(ctx.now() / 1000);
}
