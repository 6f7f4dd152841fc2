/**
 * Which spider types the cluster accepts in `spiderid` (docs/contract.md "Crawl request"). Plugins live in the
 * crawler image, which the monitors cannot load, so the fleet tells them (lib/monitor/fleet-registry.ts): every
 * crawler registers the types it serves in Redis with its heartbeat (`spiderTypesKey`), and the monitors accept the
 * built-in types plus every type ever registered. A type no live crawler serves right now is still accepted (its
 * requests wait in the queue for a crawler that serves it); a type never registered is rejected, naming the known ones.
 */
import { BUILT_IN_SPIDERS } from '../crawl/spiders/index.ts';
import type { RedisClient } from '../redis/client.ts';
import { spiderTypesKey } from '../redis/keys.ts';
import { FleetNames, type FleetRegistryStore, redisRegistryStore } from './fleet-registry.ts';

/** The fleet's registry of spider types. */
export function redisSpiderTypeStore(redis: RedisClient, prefix: string): FleetRegistryStore {
  return redisRegistryStore(redis, spiderTypesKey(prefix));
}

/** The monitors' view of the accepted spider types: the built-ins plus the fleet's registry in Redis. */
export function fleetSpiderTypes(
  redis: RedisClient,
  prefix: string,
  log?: { warn(message: string, fields?: Record<string, unknown>): void },
): FleetNames {
  return new FleetNames(BUILT_IN_SPIDERS, redisSpiderTypeStore(redis, prefix), {
    onStale: (error) =>
      log?.warn('spider type registry not read; using the last known types', { error: (error as Error).message }),
  });
}
