/**
 * The scope-wide state of a frontier move (`frontier reshard`, lib/redis/reshard.ts) that is not crawls or requests:
 * domain config, blacklist and throttle state (the last fetches, Retry-After holds, robots.txt Crawl-delays) go to
 * each domain's new partition; stopped crawls and the sequence counter to every new partition. And, once everything
 * is in the new layout, the deletion of the old one. Every write is a set (or a maximum), every read a bounded page.
 */
import type { PartitionRef } from '../frontier-model.ts';
import type { RedisClient } from './client.ts';
import {
  dupefilterKey,
  partitionIndex,
  partitionKeyList,
  partitionKeys,
  partitionTag,
  stateMarkerKey,
} from './keys.ts';

/** Fields or members per HSCAN / SSCAN / ZRANGE page, and keys per UNLINK. */
const PAGE = 500;

/** What {@link copyScopeState} copied. */
export interface ScopeCopy {
  domainConfigs: number;
  blacklisted: number;
  /** Throttle fields: a domain's last fetches (per egress IP too), its Retry-After hold, its Crawl-delay. */
  throttles: number;
  stopped: number;
}

/** `items` grouped by the new partition of their domain. */
function byNewPartition<T>(items: readonly T[], domainOf: (item: T) => string, count: number): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const item of items) {
    const n = partitionIndex(domainOf(item), count);
    const group = out.get(n) ?? [];
    group.push(item);
    out.set(n, group);
  }
  return out;
}

/** Every field of a HASH with its value, a page at a time. */
async function eachHashPage(redis: RedisClient, key: string, page: (pairs: [string, string][]) => Promise<void>) {
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(key, cursor, 'COUNT', PAGE);
    cursor = next;
    const pairs: [string, string][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i] as string, flat[i + 1] as string]);
    if (pairs.length > 0) await page(pairs);
  } while (cursor !== '0');
}

/**
 * Copies the scope-wide state of the old partitions `olds` into the new partitions `news` (both lists one spider
 * type's; this state is the scope's): domain config, blacklist and throttle fields by domain, and the stops still
 * in force (at `now`) into every new partition, as stop.lua writes them into each.
 */
export async function copyScopeState(
  redis: RedisClient,
  olds: readonly PartitionRef[],
  news: readonly PartitionRef[],
  now: number,
): Promise<ScopeCopy> {
  const copy: ScopeCopy = { domainConfigs: 0, blacklisted: 0, throttles: 0, stopped: 0 };
  const to = news.length;
  const keysOf = (n: number) => partitionKeys(news[n] as PartitionRef);
  for (const p of olds) {
    const k = partitionKeys(p);
    await eachHashPage(redis, k.domainConfig, async (pairs) => {
      for (const [n, group] of byNewPartition(pairs, ([domain]) => domain, to))
        await redis.hset(keysOf(n).domainConfig, Object.fromEntries(group));
      copy.domainConfigs += pairs.length;
    });
    // Throttle fields are the domain, or `<domain>\0<suffix>` (an egress IP, `hold`, `cd`).
    await eachHashPage(redis, k.throttle, async (pairs) => {
      for (const [n, group] of byNewPartition(pairs, ([field]) => field.split('\0')[0] as string, to))
        await redis.hset(keysOf(n).throttle, Object.fromEntries(group));
      copy.throttles += pairs.length;
    });
    let cursor = '0';
    do {
      const [next, domains] = await redis.sscan(k.blacklist, cursor, 'COUNT', PAGE);
      cursor = next;
      for (const [n, group] of byNewPartition(domains, (d) => d, to)) await redis.sadd(keysOf(n).blacklist, ...group);
      copy.blacklisted += domains.length;
    } while (cursor !== '0');
    for (let offset = 0; ; offset += PAGE) {
      const flat = await redis.zrangebyscore(k.stopped, `(${now}`, '+inf', 'WITHSCORES', 'LIMIT', offset, PAGE);
      if (flat.length === 0) break;
      const pairs: (string | number)[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) pairs.push(Number(flat[i + 1]), flat[i] as string);
      for (let n = 0; n < to; n++) await redis.zadd(keysOf(n).stopped, 'GT', ...pairs);
      copy.stopped += flat.length / 2;
      if (flat.length < PAGE * 2) break;
    }
  }
  return copy;
}

/** The highest sequence number the old partitions handed out (each partition counts its own). */
export async function sequenceFloor(redis: RedisClient, olds: readonly PartitionRef[]): Promise<number> {
  let floor = 0;
  for (const p of olds) floor = Math.max(floor, Number((await redis.get(partitionKeys(p).seq)) ?? 0));
  return floor;
}

/**
 * Deletes old partitions: the dupefilters of the crawls registered there, every key of the partitions of
 * `spiders` (the spider types of one scope) and the state markers. UNLINK: the memory is freed in the background.
 */
export async function deleteOldPartitions(
  redis: RedisClient,
  olds: readonly PartitionRef[],
  spiders: readonly string[],
): Promise<void> {
  for (const p of olds) {
    const k = partitionKeys(p);
    let cursor = '0';
    do {
      const [next, flat] = await redis.hscan(k.crawlRefs, cursor, 'COUNT', PAGE);
      cursor = next;
      const dupes: string[] = [];
      // Field `#` is the last ref handed out, not a crawl.
      for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i] !== '#') dupes.push(dupefilterKey(p, flat[i] as string));
      // One slot per partition: a multi-key UNLINK is fine in cluster mode.
      if (dupes.length > 0) await redis.unlink(...dupes);
    } while (cursor !== '0');
    const keys = new Set(spiders.flatMap((spider) => partitionKeyList({ ...p, spider })));
    // The crawl refs last: a run that dies before this point finds the dupefilters to delete again.
    keys.delete(k.crawlRefs);
    await redis.unlink(...keys, stateMarkerKey(partitionTag(p)));
    await redis.unlink(k.crawlRefs);
  }
}
