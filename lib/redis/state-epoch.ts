/**
 * Creating state markers (lib/redis/state-marker.ts has the whole story): an epoch id, and `SET NX` of a tag's marker.
 * Apart so the writers (the frontier, the heartbeat) need nothing else of it.
 */
import { randomBytes } from 'node:crypto';
import type { RedisClient } from './client.ts';
import { stateMarkerKey } from './keys.ts';

/** A new epoch id: the creation time and 48 random bits, so two creations never share one. */
export function newEpoch(nowMs = Date.now()): string {
  return `${nowMs.toString(36)}-${randomBytes(6).toString('hex')}`;
}

/**
 * Creates the marker of `tag` unless it exists (`SET NX`). @returns true when this call created it: the slot's state
 * starts (again) here.
 */
export async function markState(redis: RedisClient, tag: string, nowMs = Date.now()): Promise<boolean> {
  return (await redis.set(stateMarkerKey(tag), newEpoch(nowMs), 'NX')) === 'OK';
}
