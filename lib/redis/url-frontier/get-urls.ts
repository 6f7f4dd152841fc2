/**
 * GetURLs over the URL Frontier store: one queue by key, or the due queues of one crawl or of every crawl. Queues are
 * claimed (scripts/uf-claim.lua) from their crawl's `due` index, and crawls, for a request over every crawl, from the
 * frontier's `cdue` index, so neither a queue nor a crawl with nothing due costs anything; then served in waves of
 * several queues (of any crawls) per script call (scripts/uf-serve.lua).
 */
import type { RedisClient } from '../client.ts';
import { urlFrontierClaimKeys, urlFrontierGlobalKeys } from '../keys.ts';
import { runScript, script } from '../scripts.ts';
import type { UrlFrontierIndex } from './index-walk.ts';
import {
  CLAIM_MAX,
  CLAIM_MS,
  type GetUrlsRequest,
  type PackedQueue,
  SERVE_CAP,
  SERVE_WAVE,
  SERVE_WAVES_AHEAD,
} from './model.ts';

/** What GetURLs needs of the store. */
export interface UfServer {
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly index: UrlFrontierIndex;
  now(): number;
  servePacked(
    crawl: string,
    keys: string[],
    maxUrls: number,
    holdSeconds: number,
    continuing?: boolean,
  ): Promise<PackedQueue[]>;
  serveGroups(
    groups: readonly { crawl: string; keys: string[] }[],
    maxUrls: number,
    holdSeconds: number,
    continuing?: boolean,
  ): Promise<PackedQueue[]>;
}

type Emit = (queue: PackedQueue) => void | Promise<void>;

/** GetURLs (UrlFrontierStore.getUrls) with each served queue's URLs in uf-serve's packed form. */
export async function getUrlsPacked(s: UfServer, req: GetUrlsRequest, emit: Emit): Promise<void> {
  const g = urlFrontierGlobalKeys(s.prefix);
  const [active, indexed] = await s.redis.hmget(g.state, 'active', 'indexed');
  if (active === '0') return;
  if (req.key !== undefined) {
    if (req.crawl === undefined) return;
    const [queue] = await s.servePacked(req.crawl, [req.key], req.maxUrlsPerQueue, req.holdSeconds);
    if (queue && queue.count > 0) await emitServed(s, queue, req, emit);
    return;
  }
  // An older frontier is walked first, a page at a time: until its walk ends, crawls not yet walked wait.
  s.index.saw(indexed);
  if (req.crawl === undefined && !s.index.indexed) await s.index.walk();
  // Claims are of the queues due by this request's start: a queue looked at is placed after the time it was served
  // (uf-serve.lua), so it is not claimed again by this request, and the loop ends.
  const start = s.now();
  let produced = 0;
  const budget = () => (req.maxQueues > 0 ? req.maxQueues - produced : Number.POSITIVE_INFINITY);
  const claim = (count: number) => {
    const next = claimDue(s, req.crawl, start, Math.min(count, CLAIM_MAX));
    // A claim made ahead that is not awaited yet must not count as unhandled if a serve or an emit throws.
    next.catch(() => undefined);
    return next;
  };
  let pending: Promise<[string, string][] | undefined> | undefined = claim(budget());
  while (pending) {
    const queues: [string, string][] | undefined = await pending;
    if (!queues || req.cancelled?.()) return;
    // The next claim goes out while these queues are served, within the budget left beyond them: the claimed
    // queues' crawls have moved on in `cdue`, so it takes others.
    const room: number = budget() - queues.length;
    pending = room > 0 ? claim(room) : undefined;
    if (!(await serveClaimed(s, queues, req, emit, () => produced++))) return;
    if (budget() <= 0) return;
    pending ??= claim(budget());
  }
}

/**
 * Claims up to `count` due queues ([crawl, key], longest-due first) of `crawl`, or of the crawls `cdue` gives as due
 * by `start` when no crawl is named; undefined when none is due.
 */
async function claimDue(
  s: UfServer,
  crawl: string | undefined,
  start: number,
  count: number,
): Promise<[string, string][] | undefined> {
  for (;;) {
    const crawls =
      crawl !== undefined
        ? [crawl]
        : await s.redis.zrange(
            urlFrontierGlobalKeys(s.prefix).crawlDue,
            '-inf',
            String(start),
            'BYSCORE',
            'LIMIT',
            0,
            count,
          );
    if (crawls.length === 0) return undefined;
    const claimed = await runScript<(number | string)[]>(
      s.redis,
      script('uf-claim'),
      urlFrontierClaimKeys(s.prefix, crawls),
      [start, count, CLAIM_MS, crawl !== undefined ? 1 : 0, ...crawls],
    );
    if (claimed.length > 0) {
      const queues: [string, string][] = [];
      for (let i = 0; i < claimed.length; i += 2)
        queues.push([crawls[Number(claimed[i]) - 1] as string, String(claimed[i + 1])]);
      return queues;
    }
    // None claimed: for every crawl named, its place in `cdue` was mended past `start`, so the next read moves on.
    if (crawl !== undefined) return undefined;
  }
}

/**
 * Serves claimed queues ([crawl, key], in claim order) in waves of {@link SERVE_WAVE} (one script call each, over any
 * crawls), {@link SERVE_WAVES_AHEAD} waves in flight, so the stream is written while Redis still serves the later
 * queues (one call for every queue would hold back the first URL until Redis served the last queue).
 * @returns false when the request was cancelled
 */
async function serveClaimed(
  s: UfServer,
  queues: readonly [string, string][],
  req: GetUrlsRequest,
  emit: Emit,
  produced: () => void,
): Promise<boolean> {
  const waves: Promise<PackedQueue[]>[] = [];
  let next = 0;
  const launch = () => {
    while (waves.length < SERVE_WAVES_AHEAD && next < queues.length && !req.cancelled?.()) {
      const groups: { crawl: string; keys: string[] }[] = [];
      for (const [crawl, key] of queues.slice(next, next + SERVE_WAVE)) {
        const last = groups[groups.length - 1];
        if (last?.crawl === crawl) last.keys.push(key);
        else groups.push({ crawl, keys: [key] });
      }
      const wave = s.serveGroups(groups, req.maxUrlsPerQueue, req.holdSeconds);
      next += SERVE_WAVE;
      // Replies that are not awaited yet must not count as unhandled if an earlier emit throws.
      wave.catch(() => undefined);
      waves.push(wave);
    }
  };
  launch();
  for (let wave = waves.shift(); wave; wave = waves.shift()) {
    launch();
    for (const queue of await wave) {
      if (req.cancelled?.()) return false;
      if (queue.count === 0) continue;
      produced();
      await emitServed(s, queue, req, emit);
    }
  }
  return !req.cancelled?.();
}

/**
 * A served queue, then, while it gave {@link SERVE_CAP} URLs (it has more due and the client set no lower max),
 * the same queue served again within this GetURLs: each script call stays short, however much a client asks.
 */
async function emitServed(s: UfServer, queue: PackedQueue, req: GetUrlsRequest, emit: Emit): Promise<void> {
  let q = queue;
  await emit(q);
  while (q.count === SERVE_CAP && !req.cancelled?.()) {
    [q] = (await s.servePacked(q.crawl, [q.key], req.maxUrlsPerQueue, req.holdSeconds, true)) as [PackedQueue];
    if (q.count === 0) return;
    await emit(q);
  }
}
