/**
 * Which proxy groups a crawl's `attrs.proxy` may name (docs/proxies.md "Groups"). The groups are the crawlers'
 * configuration (CRAWLER_PROXY_GROUPS, from Secrets Manager on AWS), which the monitors do not get, so the fleet tells
 * them as it tells them its spider types (lib/monitor/fleet-registry.ts): every crawler registers its group names
 * (never their proxies) with its heartbeat (`proxyGroupsKey`), and the kafka-monitor accepts `none` plus every group
 * ever registered, rejecting any other name with `unknown_proxy_group`.
 */
import type { RedisClient } from '../redis/client.ts';
import { proxyGroupsKey } from '../redis/keys.ts';
import { FleetNames, type FleetRegistryStore, redisRegistryStore } from './fleet-registry.ts';

/** The fleet's registry of proxy group names. */
export function redisProxyGroupStore(redis: RedisClient, prefix: string): FleetRegistryStore {
  return redisRegistryStore(redis, proxyGroupsKey(prefix));
}

/** The monitors' view of the proxy groups: the fleet's registry in Redis (`none` is accepted besides them). */
export function fleetProxyGroups(
  redis: RedisClient,
  prefix: string,
  log?: { warn(message: string, fields?: Record<string, unknown>): void },
): FleetNames {
  return new FleetNames(new Set(), redisProxyGroupStore(redis, prefix), {
    onStale: (error) =>
      log?.warn('proxy group registry not read; using the last known groups', { error: (error as Error).message }),
  });
}
