/**
 * Releasing the URL Frontier store's holds that ended (scripts/uf-release.lua): GetURLs does it first, so that a queue
 * whose holds ended has its URLs scheduled again and its count of URLs in flight right, and GetStats, so that it
 * counts in process only holds that have not ended. A partition's `holds` (keys.ts) lists when each bucket of holds
 * (those GetURLs made ending at one time) and each single hold ends; the ended ones are read a page at a time, each
 * page released in one script call over the queues it names.
 */
import type { RedisClient } from '../client.ts';
import { runScript, script } from '../scripts.ts';
import {
  type UrlFrontierPartition,
  urlFrontierGlobalKeys,
  urlFrontierHoldBucket,
  urlFrontierReleaseKeys,
} from './keys.ts';

/** Hold members read and released per call. */
const RELEASE_PAGE = 500;

/**
 * How long one GetURLs or GetStats releases before it goes on (the rest at the next one): holds that end by the
 * hundred thousand at once do not hold up a call for ends.
 */
const RELEASE_BUDGET_MS = 250;

/** A bucket's member in `holds`: `b:<its end, epoch ms>`; any other member is a single hold. */
const BUCKET = 'b:';

/**
 * The crawl ID and queue key of a hold member (scripts/includes/uf.lua hold_prefix: each after its byte length, then
 * the URL's member); undefined for a malformed one.
 */
function holdQueue(member: Buffer): { crawl: string; key: string } | undefined {
  const take = (at: number): [string, number] | undefined => {
    const colon = member.indexOf(0x3a, at);
    if (colon < 0) return undefined;
    const len = Number(member.toString('latin1', at, colon));
    const end = colon + 1 + len;
    if (colon === at || !Number.isInteger(len) || end > member.length) return undefined;
    return [member.toString('utf8', colon + 1, end), end];
  };
  const crawl = take(0);
  const key = crawl && take(crawl[1]);
  return crawl && key ? { crawl: crawl[0], key: key[0] } : undefined;
}

/** Every key of partition `p`'s holds: `holds` and its buckets (for a cleanup; O(entries)). */
export async function holdKeys(redis: RedisClient, p: UrlFrontierPartition): Promise<string[]> {
  const holds = urlFrontierGlobalKeys(p).holds;
  const out = [holds];
  for (let start = 0; ; start += 1000) {
    const page = await redis.zrange(holds, String(start), String(start + 999));
    for (const m of page) if (m.startsWith(BUCKET)) out.push(urlFrontierHoldBucket(p, Number(m.slice(BUCKET.length))));
    if (page.length < 1000) return out;
  }
}

/**
 * Releases the holds of partition `p` that ended by `now`, a page per call, until none is left or
 * {@link RELEASE_BUDGET_MS} passed. @returns how many members and buckets were done with
 */
export async function releaseEnded(redis: RedisClient, p: UrlFrontierPartition, now: number): Promise<number> {
  const holds = urlFrontierGlobalKeys(p).holds;
  const started = Date.now();
  let done = 0;
  for (;;) {
    const entries = await redis.zrangeBuffer(holds, '-inf', String(now), 'BYSCORE', 'LIMIT', 0, RELEASE_PAGE);
    if (entries.length === 0) return done;
    // The page: the first members of ended buckets, and single holds, RELEASE_PAGE in all (a bucket counts one at
    // least, so an empty one is dropped too).
    const buckets: { end: number; members: Buffer[] }[] = [];
    const singles: Buffer[] = [];
    let room = RELEASE_PAGE;
    for (const entry of entries) {
      if (room <= 0) break;
      const name = entry.toString('latin1');
      if (name.startsWith(BUCKET)) {
        const end = Number(name.slice(BUCKET.length));
        const members = await redis.lrangeBuffer(urlFrontierHoldBucket(p, end), 0, room - 1);
        buckets.push({ end, members });
        room -= Math.max(1, members.length);
      } else {
        singles.push(entry);
        room--;
      }
    }
    // crawl → its queue keys named by the members
    const byCrawl = new Map<string, Set<string>>();
    for (const member of [...buckets.flatMap((b) => b.members), ...singles]) {
      const q = holdQueue(member);
      if (!q) continue;
      const keys = byCrawl.get(q.crawl);
      if (keys) keys.add(q.key);
      else byCrawl.set(q.crawl, new Set([q.key]));
    }
    const groups = [...byCrawl].map(([crawl, keys]) => ({ crawl, keys: [...keys] }));
    const args: (string | number | Buffer)[] = [now, buckets.length];
    for (const { end, members } of buckets) args.push(end, members.length, ...members);
    args.push(singles.length, ...singles);
    for (const { crawl, keys } of groups) args.push(crawl, keys.length, ...keys);
    const keys = urlFrontierReleaseKeys(
      p,
      buckets.map((b) => b.end),
      groups,
    );
    const n = await runScript<number>(redis, script('uf-release'), keys, args);
    done += n;
    if (n === 0 || Date.now() - started >= RELEASE_BUDGET_MS) return done;
  }
}
