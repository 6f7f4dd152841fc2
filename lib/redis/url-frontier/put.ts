/**
 * PutURLs over the URL Frontier store: a batch split by partition (a queue's partition is its key's:
 * lib/redis/url-frontier/keys.ts), then within each partition into script calls of many queues of any crawls
 * (scripts/uf-put.lua), every call of every partition sent at once.
 */
import type { RedisClient } from '../client.ts';
import { runScript, script } from '../scripts.ts';
import { type UrlFrontierPartition, urlFrontierCrawlGroup, urlFrontierScriptGlobals } from './keys.ts';
import {
  ITEMS_PER_CALL,
  metadataValue,
  type PutItem,
  type PutStatus,
  QUEUES_PER_CALL,
  queueDomain,
  urlMember,
} from './model.ts';

/** One uf-put call: its crawls' queues, each with the indexes of its items in the batch. */
interface PutCall {
  crawls: { crawl: string; groups: [string, number[]][] }[];
  queues: number;
  items: number;
}

/**
 * Stores items, grouped per partition, crawl and queue: one script call for up to {@link QUEUES_PER_CALL} queues (of
 * any crawls of one partition) and {@link ITEMS_PER_CALL} items; statuses in input order. `nowS`: epoch s.
 */
export async function putItems(
  redis: RedisClient,
  partitionOf: (key: string) => UrlFrontierPartition,
  nowS: number,
  items: readonly PutItem[],
): Promise<PutStatus[]> {
  const byPartition = new Map<UrlFrontierPartition, number[]>();
  items.forEach((item, i) => {
    const p = partitionOf(item.key);
    const indexes = byPartition.get(p);
    if (indexes) indexes.push(i);
    else byPartition.set(p, [i]);
  });
  const out: PutStatus[] = new Array(items.length);
  const sent: Promise<void>[] = [];
  for (const [p, indexes] of byPartition)
    for (const call of planCalls(items, indexes)) sent.push(runCall(redis, p, nowS, items, call, out));
  await Promise.all(sent);
  return out;
}

/**
 * The calls of one partition's items: of at most QUEUES_PER_CALL queues and ITEMS_PER_CALL items, of any crawls (one
 * URL into each of many crawls is one call, not one per crawl); a queue with more items spans calls, which Redis runs
 * in the order they are sent (one connection: all keys of a partition share one slot).
 */
function planCalls(items: readonly PutItem[], indexes: readonly number[]): PutCall[] {
  const byCrawl = new Map<string, Map<string, number[]>>();
  for (const i of indexes) {
    const item = items[i] as PutItem;
    let queues = byCrawl.get(item.crawl);
    if (!queues) {
      queues = new Map();
      byCrawl.set(item.crawl, queues);
    }
    const group = queues.get(item.key);
    if (group) group.push(i);
    else queues.set(item.key, [i]);
  }
  const calls: PutCall[] = [];
  let call: PutCall | undefined;
  for (const [crawl, queues] of byCrawl) {
    for (const [key, queued] of queues) {
      for (let from = 0; from < queued.length; ) {
        if (!call || call.queues === QUEUES_PER_CALL || call.items === ITEMS_PER_CALL) {
          call = { crawls: [], queues: 0, items: 0 };
          calls.push(call);
        }
        const part = queued.slice(from, from + ITEMS_PER_CALL - call.items);
        const last = call.crawls[call.crawls.length - 1];
        if (last?.crawl === crawl) last.groups.push([key, part]);
        else call.crawls.push({ crawl, groups: [[key, part]] });
        call.queues++;
        call.items += part.length;
        from += part.length;
      }
    }
  }
  return calls;
}

/** One uf-put call in partition `p`; its items' statuses into `out`. */
async function runCall(
  redis: RedisClient,
  p: UrlFrontierPartition,
  nowS: number,
  items: readonly PutItem[],
  { crawls }: PutCall,
  out: PutStatus[],
): Promise<void> {
  const keys = urlFrontierScriptGlobals(p);
  const args: (string | number)[] = [nowS];
  for (const { crawl, groups } of crawls) {
    keys.push(
      ...urlFrontierCrawlGroup(
        p,
        crawl,
        groups.map(([key]) => key),
      ),
    );
    args.push(crawl, groups.length);
    for (const [key, indexes] of groups) {
      args.push(key, queueDomain(key), indexes.length);
      for (const i of indexes) {
        const it = items[i] as PutItem;
        args.push(
          it.kind === 'discovered' ? 'd' : 'k',
          urlMember(key, it.url),
          Math.max(0, Math.floor(it.date)),
          metadataValue(it.metadata),
        );
      }
    }
  }
  const res = await runScript<number[]>(redis, script('uf-put'), keys, args);
  let j = 0;
  for (const { groups } of crawls)
    for (const [, indexes] of groups) for (const i of indexes) out[i] = res[j++] === 0 ? 'OK' : 'SKIPPED';
}
