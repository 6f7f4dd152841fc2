/**
 * The URL Frontier store's tests over one partition and over six (`FRONTIER_PARTITIONS`, lib/redis/url-frontier/keys.ts):
 * the counts they run with, queue keys of chosen partitions, and the cleanup of a store's keys, which span slots when
 * it has several partitions.
 */
import calculateSlot from 'cluster-key-slot';
import type { RedisClient } from '../../lib/redis/client.ts';
import { urlFrontierPartitionIndex } from '../../lib/redis/url-frontier/keys.ts';
import type { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';

/** The partition counts the URL Frontier tests run with: one (the default) and six over the 3-master cluster. */
export const UF_PARTITIONS = [1, 6] as const;

/** `per` queue keys (`name(i)` for i = 0, 1, ...) of each of `count` partitions: element n holds partition n's. */
export function keysPerPartition(count: number, per = 1, name = (i: number) => `q${i}.test`): string[][] {
  const out: string[][] = Array.from({ length: count }, () => []);
  for (let i = 0; out.some((k) => k.length < per); i++) {
    const key = name(i);
    const bucket = out[urlFrontierPartitionIndex(key, count)] as string[];
    if (bucket.length < per) bucket.push(key);
  }
  return out;
}

/** `n` queue keys `<stem><i>.test` that share one partition of `count` (the first partition's). */
export function keysOfOnePartition(count: number, n: number, stem = 'q'): string[] {
  return keysPerPartition(count, n, (i) => `${stem}${i}.test`)[0] as string[];
}

/** Unlinks `keys`, one command per slot and per 1,000 keys (a store of several partitions spans slots). */
export async function unlinkKeys(redis: RedisClient, keys: readonly string[]): Promise<void> {
  const bySlot = new Map<number, string[]>();
  for (const key of keys) {
    const slot = calculateSlot(key);
    const group = bySlot.get(slot);
    if (group) group.push(key);
    else bySlot.set(slot, [key]);
  }
  for (const group of bySlot.values())
    for (let i = 0; i < group.length; i += 1000) await redis.unlink(...group.slice(i, i + 1000));
}

/** Unlinks every key the stores may have created (UrlFrontierStore.knownKeys). */
export async function dropStores(redis: RedisClient, stores: readonly UrlFrontierStore[]): Promise<void> {
  const keys = new Set<string>();
  for (const store of stores) for (const k of await store.knownKeys()) keys.add(k);
  await unlinkKeys(redis, [...keys]);
}
