/**
 * A call for one crawler task from a request the monitors had to reject. Spider types and proxy groups are known
 * once a crawler that has them registers them (fleet-registry.ts); a fleet scaled to zero registers nothing, so a
 * crawl naming a new plugin type or a new group would be rejected for ever, and a rejected crawl queues no work that
 * would start a task. So such a rejection is recorded here, and while the record stands and no task runs, the fleet
 * is sized to one task (fleet-sizing.ts): it starts, registers its names, and the request is accepted when it is
 * sent again (the rejection says so). A misspelt name costs that one task until the record ends and the fleet
 * scales in again.
 */
import type { RedisClient } from '../redis/client.ts';
import { fleetWakeKey } from '../redis/keys.ts';

/** How long a rejection keeps calling for a task: time for Fargate to start one and for the client to resend. */
export const FLEET_WAKE_MS = 15 * 60_000;

export interface FleetWake {
  /** Records that a request at `nowMs` named a spider type or proxy group only a running crawler could register. */
  want(nowMs: number): Promise<void>;
  /** Whether one was recorded within {@link FLEET_WAKE_MS} of `nowMs`. */
  wanted(nowMs: number): Promise<boolean>;
}

/** The record in Redis (`fleetWakeKey`): one SET with an expiry per rejected batch, one GET per stats run. */
export function redisFleetWake(redis: RedisClient, prefix: string, windowMs = FLEET_WAKE_MS): FleetWake {
  const key = fleetWakeKey(prefix);
  return {
    async want(nowMs) {
      await redis.set(key, String(nowMs), 'PX', windowMs);
    },
    async wanted(nowMs) {
      const at = await redis.get(key);
      return at !== null && nowMs - Number(at) < windowMs;
    },
  };
}
