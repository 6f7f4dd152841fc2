/**
 * The URL Frontier store's admin reads over whole queues (ListURLs, CountURLs, GetURLStatus; PurgeURLs's scan), in
 * pages of SCAN_PAGE so none holds Redis for a whole queue in one command.
 */
import type { RedisClient } from '../client.ts';
import { urlFrontierQueueKeys } from '../keys.ts';
import { memberUrl, parseMetadata, SCAN_PAGE, splitCreated, type UrlRecord, urlMember } from './model.ts';

/** What the reads need of the store. */
export interface UfReader {
  readonly redis: RedisClient;
  readonly prefix: string;
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
  const q = urlFrontierQueueKeys(s.prefix, crawl, key);
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
    const [sched, hdate, done] = await Promise.all([
      s.redis.zmscore(q.sched, ...members),
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
        date: done[i] ? 0 : Number(sched[i] ?? hdate[i] ?? 0),
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
    const q = urlFrontierQueueKeys(s.prefix, crawl, k);
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
  const q = urlFrontierQueueKeys(s.prefix, crawl, key);
  const member = urlMember(key, url);
  const value = await s.redis.hget(q.created, member);
  if (value === null) return undefined;
  const { created, metadata } = splitCreated(value);
  const [sched, hdate, done] = await Promise.all([
    s.redis.zscore(q.sched, member),
    s.redis.hget(q.hdate, member),
    s.redis.sismember(q.done, member),
  ]);
  return {
    crawl,
    key,
    url,
    metadata: done ? {} : parseMetadata(metadata),
    date: done ? 0 : Number(sched ?? hdate ?? 0),
    created,
  };
}
