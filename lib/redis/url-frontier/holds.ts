/**
 * Releasing the URL Frontier store's holds that ended (scripts/uf-release.lua): GetURLs does it first, so that a queue
 * whose holds ended has its URLs scheduled again and its count of URLs in flight right, and GetStats, so that it
 * counts in process only holds that have not ended. A partition's holds are one index (keys.ts `holds`), read in
 * pages of the earliest ended, each page released in one script call over the queues it names.
 */
import type { RedisClient } from '../client.ts';
import { runScript, script } from '../scripts.ts';
import { type UrlFrontierPartition, urlFrontierGlobalKeys, urlFrontierGroupsKeys } from './keys.ts';

/** Hold members read and released per call. */
const RELEASE_PAGE = 500;

/**
 * How long one GetURLs or GetStats releases before it goes on (the rest at the next one): holds that end by the
 * hundred thousand at once do not hold up a call for seconds.
 */
const RELEASE_BUDGET_MS = 250;

/**
 * A member of `holds` (scripts/includes/uf.lua hold_prefix: the crawl ID's and the queue key's byte lengths before
 * each, then the URL's member) split apart; undefined for a malformed one.
 */
function splitHoldMember(member: Buffer): { crawl: string; key: string; url: string } | undefined {
  const take = (at: number): [string, number] | undefined => {
    const colon = member.indexOf(0x3a, at);
    if (colon < 0) return undefined;
    const len = Number(member.toString('latin1', at, colon));
    const end = colon + 1 + len;
    if (!Number.isInteger(len) || end > member.length) return undefined;
    return [member.toString('utf8', colon + 1, end), end];
  };
  const crawl = take(0);
  if (!crawl) return undefined;
  const key = take(crawl[1]);
  if (!key) return undefined;
  return { crawl: crawl[0], key: key[0], url: member.toString('utf8', key[1]) };
}

/**
 * Releases the holds of partition `p` that ended by `now`, a page per call, until none is left or
 * {@link RELEASE_BUDGET_MS} passed. @returns how many holds were released or entries dropped
 */
export async function releaseEnded(redis: RedisClient, p: UrlFrontierPartition, now: number): Promise<number> {
  const holds = urlFrontierGlobalKeys(p).holds;
  const started = Date.now();
  let done = 0;
  for (;;) {
    const members = await redis.zrangeBuffer(holds, '-inf', String(now), 'BYSCORE', 'LIMIT', 0, RELEASE_PAGE);
    if (members.length === 0) return done;
    // crawl → queue key → URL members, in the order read
    const byCrawl = new Map<string, Map<string, string[]>>();
    for (const member of members) {
      const hold = splitHoldMember(member);
      if (!hold) continue;
      let queues = byCrawl.get(hold.crawl);
      if (!queues) {
        queues = new Map();
        byCrawl.set(hold.crawl, queues);
      }
      const urls = queues.get(hold.key);
      if (urls) urls.push(hold.url);
      else queues.set(hold.key, [hold.url]);
    }
    const groups = [...byCrawl].map(([crawl, queues]) => ({ crawl, keys: [...queues.keys()] }));
    const args: (string | number)[] = [now];
    for (const [crawl, queues] of byCrawl) {
      args.push(crawl, queues.size);
      for (const [key, urls] of queues) args.push(key, urls.length, ...urls);
    }
    const n =
      groups.length === 0
        ? 0
        : await runScript<number>(redis, script('uf-release'), urlFrontierGroupsKeys(p, groups), args);
    done += n;
    // A malformed member is dropped here, so a page of them cannot stop every later release.
    if (n < members.length) {
      const bad = members.filter((m) => !splitHoldMember(m));
      if (bad.length > 0) await redis.zrem(holds, ...bad);
    }
    if (n === 0 || members.length < RELEASE_PAGE || Date.now() - started >= RELEASE_BUDGET_MS) return done;
  }
}
