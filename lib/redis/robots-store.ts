/**
 * The fleet-wide robots.txt cache in Redis (lib/ports.ts RobotsStore): one STRING per origin ({@link robotsKey}),
 * expiring with the TTL it was stored with. lib/crawl/fetch/robots.ts decides what is stored and for how long.
 */
import type { RobotsStore } from '../ports.ts';
import type { RedisClient } from './client.ts';
import { robotsKey } from './keys.ts';

export function redisRobotsStore(redis: RedisClient, prefix: string): RobotsStore {
  return {
    async get(origin) {
      return (await redis.get(robotsKey(prefix, origin))) ?? undefined;
    },
    async set(origin, value, ttlMs) {
      await redis.set(robotsKey(prefix, origin), value, 'PX', ttlMs);
    },
  };
}
