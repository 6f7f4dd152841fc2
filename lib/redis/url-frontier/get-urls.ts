/**
 * GetURLs over the URL Frontier store: one queue by key, or the due queues of one crawl or of every crawl. Queues are
 * claimed (scripts/uf-claim.lua) from their crawl's `due` index, or, for a request over every crawl, from the
 * frontier's `qdue` index (every crawl's due queues), so a queue with nothing due costs nothing; then served in waves
 * of several queues (of any crawls) per script call (scripts/uf-serve.lua). Over several partitions, each has its
 * own indexes: claims go to one partition after the other, from a first that rotates between calls, until the
 * request has its queues or every partition has none due; a wave serves queues of one partition.
 */
import type { RedisClient } from '../client.ts';
import { runScript, script } from '../scripts.ts';
import type { UrlFrontierIndex } from './index-walk.ts';
import {
  type UrlFrontierPartition,
  type UrlFrontierPartitions,
  urlFrontierClaimKeys,
  urlFrontierGlobalKeys,
} from './keys.ts';
import {
  CLAIM_MAX,
  CLAIM_MS,
  fenceError,
  type GetUrlsRequest,
  type PackedQueue,
  SERVE_CAP,
  SERVE_WAVE,
  serveWavesAhead,
} from './model.ts';

/** What GetURLs needs of the store. */
export interface UfServer {
  readonly redis: RedisClient;
  readonly partitions: UrlFrontierPartitions;
  readonly index: UrlFrontierIndex;
  now(): number;
  /** The partitions in the order this request claims from them (UrlFrontierStore.claimOrder). */
  claimOrder(): UrlFrontierPartition[];
  /** Releases the holds that ended in each of `partitions` (holds.ts). */
  releaseHolds(partitions: readonly UrlFrontierPartition[]): Promise<void>;
  /** The partition of queue key `key`. */
  partitionOf(key: string): UrlFrontierPartition;
  servePacked(
    crawl: string,
    keys: string[],
    maxUrls: number,
    holdSeconds: number,
    continuing?: boolean,
  ): Promise<PackedQueue[]>;
  serveIn(
    p: UrlFrontierPartition,
    groups: readonly { crawl: string; keys: string[] }[],
    maxUrls: number,
    holdSeconds: number,
    continuing: boolean,
    full: boolean,
    qdueOnly?: boolean,
  ): Promise<PackedQueue[]>;
}

type Emit = (queue: PackedQueue) => void | Promise<void>;

/** A claimed queue: its partition, crawl and key. */
interface Claimed {
  p: UrlFrontierPartition;
  crawl: string;
  key: string;
}

/** GetURLs (UrlFrontierStore.getUrls) with each served queue's URLs in uf-serve's packed form. */
export async function getUrlsPacked(s: UfServer, req: GetUrlsRequest, emit: Emit): Promise<void> {
  // The active flag is the same in every partition (settings.ts); an older frontier (to walk) is one partition. A
  // fence (a move to another partition count) is in every partition: refused even when nothing is due.
  const g = urlFrontierGlobalKeys(s.partitions[0]);
  const [active, indexed, fence] = await s.redis.hmget(g.state, 'active', 'indexed', 'fence');
  if (fence) throw fenceError(fence);
  if (active === '0') return;
  // Holds that ended go back to their queues' schedules first: their URLs are served again, the queues' counts of
  // URLs in flight are right for the client's max.
  if (req.key !== undefined) {
    if (req.crawl === undefined) return;
    await s.releaseHolds([s.partitionOf(req.key)]);
    const [queue] = await s.servePacked(req.crawl, [req.key], req.maxUrlsPerQueue, req.holdSeconds);
    if (queue && queue.count > 0) await emitServed(s, queue, req, emit);
    return;
  }
  await s.releaseHolds(s.partitions);
  // An older frontier is walked first, a page at a time: until its walk ends, crawls not yet walked wait.
  s.index.saw(indexed);
  if (req.crawl === undefined && !s.index.indexed) await s.index.walk();
  await serveDue(s, req, emit);
}

/**
 * Claims the queues due by the request's start and serves them: a claim of up to {@link CLAIM_MAX} queues is in
 * flight while the claimed ones are served in waves of {@link SERVE_WAVE} (one script call each, over any crawls of one
 * partition), {@link serveWavesAhead} waves in flight (more when the request's max URLs per queue is small), so Redis
 * always has the next call queued while the stream is written (one call for every queue would hold back the first
 * URL until Redis served the last queue). A queue looked at is placed after the time it was served (uf-serve.lua), and
 * a claimed one after the claim, so no claim of this request takes a queue twice; claims go to the next partition
 * (in {@link UfServer.claimOrder}) once one finds none due, and the loop ends after the last. With `maxQueues`, queues
 * are claimed only within the budget left beyond those claimed and not served yet.
 */
async function serveDue(s: UfServer, req: GetUrlsRequest, emit: Emit): Promise<void> {
  const start = s.now();
  const order = s.claimOrder();
  const ahead = serveWavesAhead(req.maxUrlsPerQueue);
  let produced = 0;
  // Claimed queues not yet served, and those being served.
  const claimed: Claimed[] = [];
  let serving = 0;
  const waves: { p: UrlFrontierPartition; queues: number; reply: Promise<PackedQueue[]> }[] = [];
  let claiming: Promise<void> | undefined;
  // The partition claimed from (its place in `order`); past the last, every partition has none due.
  let turn = 0;
  let failure: { error: unknown } | undefined;
  // Waves name each queue's two keys that most queues need, until one needs all six (see uf-serve.lua): from then on
  // this request names six.
  let full = false;
  // Queues claimed from `qdue` are placed there alone (uf-serve.lua).
  const anyCrawl = req.crawl === undefined;
  const room = () => (req.maxQueues > 0 ? req.maxQueues - produced - claimed.length - serving : CLAIM_MAX);
  const topUp = () => {
    const count = Math.min(room(), CLAIM_MAX);
    const p = order[turn];
    if (claiming || p === undefined || claimed.length >= CLAIM_MAX || count <= 0) return;
    claiming = claimDue(s, p, req.crawl, start, count).then(
      ({ queues, more }) => {
        claiming = undefined;
        if (queues.length === 0 && !more) turn++;
        claimed.push(...queues);
      },
      // A claim not awaited yet must not count as unhandled if a serve or an emit throws first.
      (error: unknown) => {
        failure = { error };
      },
    );
  };
  const launch = () => {
    while (waves.length < ahead && claimed.length > 0 && !req.cancelled?.()) {
      const p = (claimed[0] as Claimed).p;
      let n = 1;
      while (n < SERVE_WAVE && claimed[n]?.p === p) n++;
      const queues = claimed.splice(0, n);
      const reply = s.serveIn(p, groupsOf(queues), req.maxUrlsPerQueue, req.holdSeconds, false, full, anyCrawl);
      // Replies that are not awaited yet must not count as unhandled if an earlier emit throws.
      reply.catch(() => undefined);
      serving += queues.length;
      waves.push({ p, queues: queues.length, reply });
    }
  };
  for (;;) {
    if (failure) throw failure.error;
    if (req.cancelled?.()) return;
    topUp();
    launch();
    const wave = waves.shift();
    if (!wave) {
      if (!claiming) return;
      await claiming;
      continue;
    }
    let served = await wave.reply;
    serving -= wave.queues;
    if (served.some((q) => q.count < 0)) {
      full = true;
      served = await serveAgain(s, wave.p, served, req);
    }
    for (const queue of served) {
      if (req.cancelled?.()) return;
      if (queue.count === 0) continue;
      produced++;
      await emitServed(s, queue, req, emit);
    }
    if (req.maxQueues > 0 && produced >= req.maxQueues) return;
  }
}

/** Queues as uf-serve takes them: consecutive queues of one crawl in one group. */
function groupsOf(queues: readonly { crawl: string; key: string }[]): { crawl: string; keys: string[] }[] {
  const groups: { crawl: string; keys: string[] }[] = [];
  for (const { crawl, key } of queues) {
    const last = groups[groups.length - 1];
    if (last?.crawl === crawl) last.keys.push(key);
    else groups.push({ crawl, keys: [key] });
  }
  return groups;
}

/**
 * The queues of a wave (of partition `p`), those that needed their six keys served again with them (in one call), in
 * wave order.
 */
async function serveAgain(
  s: UfServer,
  p: UrlFrontierPartition,
  wave: PackedQueue[],
  req: GetUrlsRequest,
): Promise<PackedQueue[]> {
  const groups = groupsOf(wave.filter((q) => q.count < 0));
  const again = await s.serveIn(p, groups, req.maxUrlsPerQueue, req.holdSeconds, false, true, req.crawl === undefined);
  let i = 0;
  return wave.map((q) => (q.count >= 0 ? q : (again[i++] as PackedQueue)));
}

/**
 * Claims up to `count` due queues (longest-due first) of partition `p`, of `crawl`, or over every crawl when none is
 * named (scripts/uf-claim.lua); none when none is due by `start`. `more`: over one crawl, the claim stopped after
 * correcting its `due` from `qdue` and more may be due there.
 */
async function claimDue(
  s: UfServer,
  p: UrlFrontierPartition,
  crawl: string | undefined,
  start: number,
  count: number,
): Promise<{ queues: Claimed[]; more: boolean }> {
  // `qdue` corrects a crawl's `due` only once every due queue is in it (index-walk.ts).
  const keys = urlFrontierClaimKeys(p, crawl, s.index.indexed);
  const args = crawl === undefined ? [start, count, CLAIM_MS] : [start, count, CLAIM_MS, crawl];
  const claimed = await runScript<(string | number)[]>(s.redis, script('uf-claim'), keys, args);
  const queues: Claimed[] = [];
  if (crawl === undefined) {
    for (let i = 0; i < claimed.length; i += 2)
      queues.push({ p, crawl: claimed[i] as string, key: claimed[i + 1] as string });
    return { queues, more: false };
  }
  for (let i = 1; i < claimed.length; i++) queues.push({ p, crawl, key: claimed[i] as string });
  return { queues, more: claimed[0] === 1 };
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
