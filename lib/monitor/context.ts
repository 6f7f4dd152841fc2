/**
 * What every monitor operation needs, handed in by its entry point (docs/style.md §4): the frontier, the stats
 * store, a message sink, names, and a clock. Nothing here opens a connection.
 */

import { SchemaValidationError } from '../errors.ts';
import type { FrontierApi, Log, MessageSink, ReplyStore, StatsStore, UrlFrontierView } from '../ports.ts';
import { type ClassifiedRequest, parseRequest } from '../schemas/index.ts';
import type { FleetNameSource } from './fleet-registry.ts';
import type { FleetWake } from './fleet-wake.ts';
import type { StateWatch } from './state-watch.ts';

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
  /**
   * Spider types requests may name when there is no {@link spiderTypes} (the built-ins); requests naming others
   * are rejected.
   */
  spiders: ReadonlySet<string>;
  /**
   * The accepted spider types from the fleet's registry (built-ins plus every type a crawler registered), cached:
   * read once per batch, never per record (lib/monitor/spider-types.ts). @default {@link spiders}, fixed
   */
  spiderTypes?: FleetNameSource;
  /**
   * The proxy groups a crawl's `attrs.proxy` may name, from the fleet's registry, cached like {@link spiderTypes}
   * (lib/monitor/proxy-groups.ts). @default any name: the crawler then fails pages of a group it does not have
   */
  proxyGroups?: FleetNameSource;
  /**
   * Records a request rejected for a spider type or proxy group no crawler has registered, so that a fleet scaled to
   * zero starts a task that registers its names (lib/monitor/fleet-wake.ts); the stats run reads it. Without it such
   * a request only gets its rejection.
   */
  fleetWake?: FleetWake;
  /**
   * Watches the frontier's state markers (lib/monitor/state-watch.ts): the stats run and `info` check them, and
   * `info` answers "frontier state lost" for a crawl of a partition that lost its state. Without it neither happens.
   */
  state?: StateWatch;
  /** The largest reply value (`KAFKA_MAX_MESSAGE_BYTES`): a bigger reply is cut to fit. @default 1000000 */
  maxMessageBytes?: number;
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

/**
 * Parses records against the accepted spider types and proxy groups: the cached sets first; a record naming a type
 * or group its set does not know forces one fresh read of that registry (once per parser, i.e. per batch) before it is
 * rejected. Such a rejection is also recorded in {@link MonitorContext.fleetWake} (once per parser), which sizes a
 * fleet at zero to one task that registers its names.
 */
export async function fleetAwareParser(
  ctx: Pick<MonitorContext, 'spiders' | 'spiderTypes' | 'proxyGroups' | 'fleetWake' | 'log' | 'now'>,
): Promise<(raw: Uint8Array | string, options?: { maxBytes?: number }) => Promise<ClassifiedRequest>> {
  let spiders = ctx.spiderTypes ? await ctx.spiderTypes.known() : ctx.spiders;
  let proxyGroups = await ctx.proxyGroups?.known();
  let forcedSpiders = false;
  let forcedGroups = false;
  let woken = false;
  // The rejection goes out whether or not the record could be written: a Redis blip costs the wake, not the answer.
  const wake = async () => {
    if (woken || !ctx.fleetWake) return;
    woken = true;
    await ctx.fleetWake.want(ctx.now()).catch((error: unknown) => {
      ctx.log.warn('a request named an unregistered spider type or proxy group; the fleet was not woken', {
        error: (error as Error).message,
      });
    });
  };
  return async (raw, options = {}) => {
    for (;;) {
      try {
        return parseRequest(raw, { ...options, spiders, proxyGroups });
      } catch (error) {
        if (!(error instanceof SchemaValidationError)) throw error;
        if (error.kind === 'unknown_spider' && ctx.spiderTypes && !forcedSpiders) {
          forcedSpiders = true;
          spiders = await ctx.spiderTypes.known({ force: true });
        } else if (error.kind === 'unknown_proxy_group' && ctx.proxyGroups && !forcedGroups) {
          forcedGroups = true;
          proxyGroups = await ctx.proxyGroups.known({ force: true });
        } else {
          if (error.kind === 'unknown_spider' || error.kind === 'unknown_proxy_group') await wake();
          throw error;
        }
      }
    }
  };
}
