/**
 * The URL Frontier store's admin reads: over whole queues (ListURLs, CountURLs, GetURLStatus; PurgeURLs's scan), in
 * pages of SCAN_PAGE so none holds Redis for a whole queue in one command, and over a crawl's queues (GetStats,
 * ListQueues, the Kafka side's backlog), each queue read in its partition.
 */
import type { RedisClient } from '../client.ts';
import { type UrlFrontierPartition, urlFrontierQueueKeys } from './keys.ts';
import {
  inChunks,
  memberUrl,
  parseMetadata,
  type QueueStats,
  SCAN_PAGE,
  splitCreated,
  type UrlRecord,
  urlMember,
} from './model.ts';

/** The info field of a held URL's member (scripts/includes/uf.lua HOLD_FIELD). */
const holdField = (member: string) => `h:${member}`;

/** The date (epoch s) in a held URL's info field (`<date>,<held until>`), or undefined when it is not held. */
function holdDate(value: string | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  const comma = value.indexOf(',');
  return comma < 0 ? undefined : value.slice(0, comma);
}

/** What the reads need of the store. */
export interface UfReader {
  readonly redis: RedisClient;
  now(): number;
  partitionOf(key: string): UrlFrontierPartition;
  crawls(): Promise<string[]>;
  queues(crawl: string): Promise<string[]>;
  queuesByPartition(crawl: string): Promise<[UrlFrontierPartition, string[]][]>;
  queueKeys(crawl: string, key: string | undefined): Promise<string[]>;
}

/**
 * Every `created` field of a queue (member → value), read with HSCAN in pages of {@link SCAN_PAGE}: the admin
 * calls (ListURLs, CountURLs, PurgeURLs) never hold Redis for a whole queue in one command. HSCAN may repeat a
 * field; the caller gets each once per page it appears in, so it keeps a Map or re-checks.
 */
export async function* createdPages(redis: RedisClient, createdKey: string): AsyncGenerator<[string, string][]> {
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(createdKey, cursor, 'COUNT', SCAN_PAGE);
    cursor = next;
    const page: [string, string][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) page.push([flat[i] as string, flat[i + 1] as string]);
    if (page.length) yield page;
  } while (cursor !== '0');
}

/** The records of a queue's URLs (sorted by URL), optionally only those whose URL passes `filter`. */
async function queueRecords(
  s: UfReader,
  crawl: string,
  key: string,
  filter?: (url: string) => boolean,
): Promise<UrlRecord[]> {
  const q = urlFrontierQueueKeys(s.partitionOf(key), crawl, key);
  const created = new Map<string, string>();
  for await (const page of createdPages(s.redis, q.created))
    for (const [member, value] of page) if (!filter || filter(memberUrl(key, member))) created.set(member, value);
  const rows = [...created.keys()]
    .map((member) => ({ member, url: memberUrl(key, member) }))
    .sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
  const out: UrlRecord[] = [];
  for (let from = 0; from < rows.length; from += SCAN_PAGE) {
    const part = rows.slice(from, from + SCAN_PAGE);
    const members = part.map((r) => r.member);
    const [sched, holds, hdate, done] = await Promise.all([
      s.redis.zmscore(q.sched, ...members),
      s.redis.hmget(q.info, ...members.map(holdField)),
      s.redis.hmget(q.hdate, ...members),
      s.redis.smismember(q.done, ...members),
    ]);
    part.forEach(({ member, url }, i) => {
      const c = splitCreated(created.get(member));
      out.push({
        crawl,
        key,
        url,
        metadata: parseMetadata(c.metadata),
        date: done[i] ? 0 : Number(sched[i] ?? holdDate(holds[i]) ?? hdate[i] ?? 0),
        created: c.created,
      });
    });
  }
  return out;
}

/** ListURLs: the URLs of a queue or crawl (completed included), paged among the filtered ones. */
export async function listUrls(
  s: UfReader,
  crawl: string,
  key: string | undefined,
  start: number,
  size: number,
  filter: ((url: string) => boolean) | undefined,
  emit: (r: UrlRecord) => void | Promise<void>,
): Promise<void> {
  const keys = await s.queueKeys(crawl, key);
  let skip = start;
  let left = size;
  for (const k of keys) {
    if (left <= 0) return;
    const records = await queueRecords(s, crawl, k, filter);
    for (const r of records) {
      if (skip > 0) {
        skip--;
        continue;
      }
      if (left-- <= 0) return;
      await emit(r);
    }
  }
}

/** CountURLs: URLs (active and completed) of a queue or crawl, optionally filtered. */
export async function countUrls(
  s: UfReader,
  crawl: string,
  key: string | undefined,
  filter?: (url: string) => boolean,
): Promise<number> {
  const keys = await s.queueKeys(crawl, key);
  let n = 0;
  for (const k of keys) {
    const q = urlFrontierQueueKeys(s.partitionOf(k), crawl, k);
    if (!filter) {
      n += await s.redis.hlen(q.created);
      continue;
    }
    const matching = new Set<string>();
    for await (const page of createdPages(s.redis, q.created))
      for (const [member] of page) if (filter(memberUrl(k, member))) matching.add(member);
    n += matching.size;
  }
  return n;
}

/** One URL's record, or undefined when the queue does not know it. */
export async function urlStatus(s: UfReader, crawl: string, key: string, url: string): Promise<UrlRecord | undefined> {
  const q = urlFrontierQueueKeys(s.partitionOf(key), crawl, key);
  const member = urlMember(key, url);
  const value = await s.redis.hget(q.created, member);
  if (value === null) return undefined;
  const { created, metadata } = splitCreated(value);
  const [sched, hold, hdate, done] = await Promise.all([
    s.redis.zscore(q.sched, member),
    s.redis.hget(q.info, holdField(member)),
    s.redis.hget(q.hdate, member),
    s.redis.sismember(q.done, member),
  ]);
  return {
    crawl,
    key,
    url,
    metadata: done ? {} : parseMetadata(metadata),
    date: done ? 0 : Number(sched ?? holdDate(hold) ?? hdate ?? 0),
    created,
  };
}

/** URLs not completed (scheduled or held) per crawl, per queue key; one pipeline per partition, O(queues). */
export async function backlog(s: UfReader, crawl?: string): Promise<Record<string, Record<string, number>>> {
  const crawls = crawl !== undefined ? [crawl] : await s.crawls();
  const out: Record<string, Record<string, number>> = {};
  for (const c of crawls) {
    const queues: Record<string, number> = {};
    const lists = (await s.queuesByPartition(c)).filter(([, keys]) => keys.length > 0);
    if (lists.length === 0) continue;
    // Pipelines of one partition's keys each: a pipeline in cluster mode goes to one shard.
    const counts = await Promise.all(lists.map(([p, keys]) => backlogOf(s.redis, p, c, keys)));
    lists.forEach(([, keys], i) => {
      keys.forEach((key, j) => {
        queues[key] = counts[i]?.[j] ?? 0;
      });
    });
    out[c] = queues;
  }
  return out;
}

/** URLs scheduled or held in each of `keys`, queues of crawl `c` in partition `p`: one pipeline. */
async function backlogOf(redis: RedisClient, p: UrlFrontierPartition, c: string, keys: string[]): Promise<number[]> {
  const pipeline = redis.pipeline();
  for (const key of keys) {
    const q = urlFrontierQueueKeys(p, c, key);
    pipeline.zcard(q.sched).zcard(q.held).hget(q.info, 'held');
  }
  const replies = (await pipeline.exec()) ?? [];
  return keys.map((_, i) => {
    let n = 0;
    for (const [error, count] of replies.slice(3 * i, 3 * i + 3)) {
      if (error) throw error;
      n += Number(count ?? 0);
    }
    return n;
  });
}

async function oneQueueStats(s: UfReader, crawl: string, key: string, now: number): Promise<QueueStats> {
  const q = urlFrontierQueueKeys(s.partitionOf(key), crawl, key);
  const [sched, legacy, legacyInProcess, held, completed] = await Promise.all([
    s.redis.zcard(q.sched),
    s.redis.zcard(q.held),
    s.redis.zcount(q.held, `(${now}`, '+inf'),
    s.redis.hget(q.info, 'held'),
    s.redis.scard(q.done),
  ]);
  // The holds in the info are all in process: the caller released those that ended (UrlFrontierStore.stats).
  const size = sched + legacy + Number(held ?? 0);
  const inProcess = legacyInProcess + Number(held ?? 0);
  return { size, inProcess, completed, activeQueues: size > 0 ? 1 : 0, numberOfQueues: 1 };
}

/** GetStats: of one queue (all zero for an unknown one) or of every queue of a crawl. */
export async function queueStats(s: UfReader, crawl: string, key?: string): Promise<QueueStats> {
  const now = s.now();
  const keys = await s.queueKeys(crawl, key);
  const all = await inChunks(keys, (k) => oneQueueStats(s, crawl, k, now));
  return all.reduce(
    (a, b) => ({
      size: a.size + b.size,
      inProcess: a.inProcess + b.inProcess,
      completed: a.completed + b.completed,
      activeQueues: a.activeQueues + b.activeQueues,
      numberOfQueues: a.numberOfQueues + b.numberOfQueues,
    }),
    { size: 0, inProcess: 0, completed: 0, activeQueues: 0, numberOfQueues: 0 },
  );
}

/**
 * ListQueues: queue keys of a crawl, page `start`/`size` among the matching ones, in lexicographic order over every
 * partition (their lists merged); active only unless `includeInactive`.
 */
export async function listQueues(
  s: UfReader,
  crawl: string,
  start: number,
  size: number,
  includeInactive: boolean,
): Promise<string[]> {
  const all = await s.queues(crawl);
  let matching = all;
  if (!includeInactive) {
    const now = s.now();
    const flags = await inChunks(all, async (key) => {
      const q = urlFrontierQueueKeys(s.partitionOf(key), crawl, key);
      const [sched, legacy, [held, blocked]] = await Promise.all([
        s.redis.zcard(q.sched),
        s.redis.zcard(q.held),
        s.redis.hmget(q.info, 'held', 'blocked'),
      ]);
      return sched + legacy + Number(held ?? 0) > 0 && !(blocked !== null && Number(blocked) >= now);
    });
    matching = all.filter((_, i) => flags[i]);
  }
  return matching.slice(start, start + size);
}
