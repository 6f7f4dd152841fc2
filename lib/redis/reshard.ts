/**
 * Changing the number of frontier partitions (`FRONTIER_PARTITIONS`; lib/redis/keys.ts) of a frontier that holds
 * work: `crawl-cluster frontier reshard`. The layouts of two partition counts share no key, so the move copies every
 * spider type's frontier from the old layout into the new one, then deletes the old one:
 * - every queued request and delayed retry, with its crawl, priority, sequence number (its FIFO place), depth,
 *   retries and URL, into its domain's new partition (reshard-put.lua), then out of the old (reshard-take.lua);
 *   requests of stopped crawls are dropped, as a lease would drop them;
 * - every crawl (lib/redis/reshard-crawls.ts): registered in each new partition, its done and failed totals in the
 *   first, its page-cap counters by domain, its dupefilter copied into each;
 * - domain config, blacklist and throttle state by domain, and stops in force into every partition
 *   (lib/redis/reshard-layout.ts);
 * - the URL Frontier store of the prefix, every crawl's queues with all their state into the partition of each
 *   queue's key, and its settings into every partition (lib/redis/url-frontier/reshard.ts), its servers fenced out
 *   meanwhile.
 *
 * ## Crash safety
 * A move can die at any point and be run again; the second run finishes it, with nothing lost and nothing twice. A
 * request is put in the new layout before it is taken from the old, and its new member is a function of the old one,
 * so a request put twice is stored once (counters count what is added). Crawls, counters, dupefilters and domain
 * state are written as sets and maxima of what the old layout holds, which the move leaves as it is (but for the
 * requests it takes) until everything is copied. The move's record (keys.ts `reshardKey`: from, to, phase, and
 * whether the URL Frontier store moves too) says a move is unfinished: another run with other partition counts is refused until it is finished, and a run in the
 * `delete` phase only deletes what is left of the old layout.
 *
 * Nothing else may write to the frontier meanwhile: the move refuses to start while requests are leased (crawlers
 * at work), and the monitors, which queue new work, must be stopped too. A writer it meets anyway (a request of a
 * crawl registered since the move read the crawls, anything queued or leased in an old partition once its requests
 * were moved) stops the move before the old layout is deleted ({@link ReshardInterruptedError}): nothing is lost, and
 * the next run moves what was added. Fingerprints added to an old dupefilter after it was copied are not moved. The
 * URL Frontier servers need not be stopped: the move fences them out (their writes answer UNAVAILABLE) until it is
 * done, and fences those left with the old count out for good.
 */
import type { PartitionRef } from '../frontier-model.ts';
import type { RedisClient } from './client.ts';
import { FrontierCalls } from './frontier-calls.ts';
import type { FrontierOptions } from './frontier-options.ts';
import { MAX_PARTITIONS, partitionCountKey, partitionIndex, partitionKeys, reshardKey } from './keys.ts';
import { memberPlace } from './member.ts';
import { recordedPartitionCount } from './partition-count.ts';
import { copyCaps, copyDupefilters, type OldCrawls, readOldCrawls, registerCrawls } from './reshard-crawls.ts';
import { ReshardInterruptedError, ReshardRefusedError } from './reshard-errors.ts';
import { copyScopeState, deleteOldPartitions, type ScopeCopy, sequenceFloor } from './reshard-layout.ts';
import {
  emptyUrlFrontierSummary,
  UrlFrontierMove,
  type UrlFrontierMoveSummary,
  type UrlFrontierPlan,
  type UrlFrontierStep,
} from './url-frontier/reshard.ts';

/** Requests per page of a move: the take of a page (and the put of a page into one partition) is a few ms of Redis. */
export const RESHARD_BATCH = 200;

/**
 * The steps a move reports, in order within a scope: `put` and `take` alternate, a page of requests at a time;
 * `dupefilters` comes after each page of fingerprints. Then the URL Frontier store's (`uf-settings`, then `uf-put`
 * and `uf-take` alternating, a group of queues at a time), then `delete` per scope and for the URL Frontier store.
 */
export type ReshardStep = 'domains' | 'crawls' | 'put' | 'take' | 'dupefilters' | UrlFrontierStep | 'delete';

export interface ReshardProgress {
  /** The step just done. */
  step: ReshardStep;
  /**
   * The spider type whose frontier the step was about (the first of its scope for scope-wide steps), or
   * `url-frontier` (the URL Frontier store's spider ID in the Kafka API).
   */
  spider: string;
  /** Requests moved or dropped so far in this run, of `total` (those the old layout held when the run began). */
  moved: number;
  total: number;
  /** Dupefilter fingerprints copied so far in this run. */
  fingerprints: number;
  /** URL Frontier queues moved so far in this run, of `queuesTotal` (those the old partitions held when it began). */
  queues: number;
  queuesTotal: number;
}

export interface ReshardOptions {
  /** Partitions per scope now (`FRONTIER_PARTITIONS` of the processes that wrote the frontier). */
  from: number;
  /** Partitions per scope after the move. */
  to: number;
  /** Requests per script call (a page of an old partition's queue, taken in one call). @default {@link RESHARD_BATCH} */
  batch?: number;
  /** The clock (epoch ms) when the frontier options leave `redisClock` off (tests); else Redis's TIME. @default Date.now() */
  now?: number;
  /**
   * Called after every step, and awaited (the CLI prints progress from it). An exception it throws stops the move
   * there, as a crash would (the tests stop moves half-way with it, and write to the frontier as a process that was
   * not stopped would); running the move again finishes it.
   */
  onProgress?: (progress: ReshardProgress) => void | Promise<void>;
}

export interface ReshardSummary extends ScopeCopy {
  from: number;
  to: number;
  spiders: string[];
  /** Queued requests moved (put in the new layout and taken from the old). */
  queued: number;
  /** Delayed retries moved. */
  delayed: number;
  /** Requests of stopped crawls dropped instead of moved. */
  dropped: number;
  /** Requests the new layout held already: put by a run that died before taking them from the old. */
  present: number;
  /** Crawls registered in the new layout (each in every partition). */
  crawls: number;
  /** Fingerprints read from the old dupefilters (each copied into every new partition). */
  fingerprints: number;
  /** Expired leases returned to their queues first (their crawlers are gone). */
  reclaimed: number;
  /** This run finished a move an earlier run had begun. */
  resumed: boolean;
  /** The URL Frontier store's part (`plan` `skip`: it was left as it is). */
  urlFrontier: UrlFrontierMoveSummary;
  ms: number;
}

/** The move's record ({@link reshardKey}). */
interface MoveRecord {
  from: number;
  to: number;
  phase: 'copy' | 'delete';
  /** What the move does with the URL Frontier store (a record without it, of an older version: nothing). */
  uf: UrlFrontierPlan;
}

/** One request read from an old partition: its member, and its time when it is a delayed retry ('' when queued). */
interface OldRequest {
  member: Buffer;
  until: string;
}

/**
 * Moves the frontier of every spider type (the registry: keys.ts `spidersKey`) from `options.from` partitions per
 * scope to `options.to` (see the module doc). `frontier`: the options of the processes that use it (prefix, throttle
 * defaults, `SCHEDULER_TYPE_ENABLED`, clock); its `partitions` is ignored.
 * @throws ReshardRefusedError when requests are leased, or another move is unfinished
 */
export async function reshardFrontier(
  redis: RedisClient,
  frontier: FrontierOptions,
  options: ReshardOptions,
): Promise<ReshardSummary> {
  const started = Date.now();
  const { from, to } = options;
  for (const n of [from, to])
    if (!Number.isInteger(n) || n < 1 || n > MAX_PARTITIONS)
      throw new RangeError(`partitions must be an integer from 1 to ${MAX_PARTITIONS} (got ${n})`);
  const old = new FrontierCalls(redis, { ...frontier, partitions: from });
  const neu = new FrontierCalls(redis, { ...frontier, partitions: to });
  const spiders = await old.spiders();
  const summary: ReshardSummary = {
    from,
    to,
    spiders,
    queued: 0,
    delayed: 0,
    dropped: 0,
    present: 0,
    crawls: 0,
    fingerprints: 0,
    domainConfigs: 0,
    blacklisted: 0,
    throttles: 0,
    stopped: 0,
    reclaimed: 0,
    resumed: false,
    urlFrontier: emptyUrlFrontierSummary(),
    ms: 0,
  };
  if (from === to) return summary;

  const recordKey = reshardKey(frontier.prefix);
  const record = await readRecord(redis, recordKey);
  if (record !== undefined && (record.from !== from || record.to !== to))
    throw new ReshardRefusedError(
      `a move from ${record.from} to ${record.to} partitions is unfinished: finish it first with ` +
        `\`crawl-cluster frontier reshard --from ${record.from} --to ${record.to}\` (nothing was changed)`,
    );
  const recorded = await recordedPartitionCount(redis, frontier.prefix);
  if (record === undefined && recorded !== undefined && recorded !== from)
    throw new ReshardRefusedError(
      `the frontier has ${recorded} partitions per scope, not ${from}: move it with \`--from ${recorded}\` ` +
        '(nothing was changed)',
    );
  summary.resumed = record !== undefined;
  const now = frontier.redisClock ? timeOf(await redis.time()) : (options.now ?? Date.now());
  const uf = new UrlFrontierMove(redis, frontier.prefix, from, to);
  let ufPlan = record?.uf ?? 'skip';
  summary.urlFrontier.plan = ufPlan;
  let queues = 0;
  let queuesTotal = 0;
  const ufReport = async (step: ReshardStep) =>
    options.onProgress?.({
      step,
      spider: 'url-frontier',
      moved: 0,
      total: 0,
      fingerprints: summary.fingerprints,
      queues,
      queuesTotal,
    });

  if (record?.phase !== 'delete') {
    summary.reclaimed = await reclaimExpired([old, neu], spiders, now);
    const leased = await liveLeases([old, neu], spiders, now);
    if (leased > 0)
      throw new ReshardRefusedError(
        `${leased} request${leased === 1 ? ' is' : 's are'} leased: crawlers are at work (or stopped less than ` +
          `LEASE_TIMEOUT = ${Math.round(frontier.leaseMs / 1000)} s ago). Stop the crawlers and the monitors first, ` +
          'or wait LEASE_TIMEOUT for their leases to expire, then run this again (nothing was moved)',
      );
    if (record === undefined) {
      ufPlan = await uf.plan();
      summary.urlFrontier.plan = ufPlan;
      await redis.hset(recordKey, { from, to, phase: 'copy', uf: ufPlan, started: String(started) });
    }
    if (ufPlan === 'move') await uf.fence();
    await copyFrontier(old, neu, spiders, options, now, summary);
    if (ufPlan === 'move')
      await uf.copy(summary.urlFrontier, async (step, moved, total) => {
        queues = moved;
        queuesTotal = total;
        await ufReport(step);
      });
    // Nothing may be left behind when the old partitions go: what a writer added after its partition was emptied.
    const left = await leftBehind(old, spiders);
    if (left > 0)
      throw new ReshardInterruptedError(`${left} requests were queued or leased in the old partitions during the move`);
    const ufLeft = ufPlan === 'move' ? await uf.leftBehind() : 0;
    if (ufLeft > 0)
      throw new ReshardInterruptedError(
        `${ufLeft} URL Frontier crawl${ufLeft === 1 ? ' was' : 's were'} given queues in the old partitions during the move`,
      );
    await redis.hset(recordKey, 'phase', 'delete');
  }
  const moved = summary.queued + summary.delayed + summary.dropped;
  for (const [, types] of scopes(old, spiders)) {
    const first = types[0] as string;
    await deleteOldPartitions(redis, old.partitionsOf(first), types);
    await options.onProgress?.({
      step: 'delete',
      spider: first,
      moved,
      total: moved,
      fingerprints: summary.fingerprints,
      queues,
      queuesTotal,
    });
  }
  if (ufPlan === 'move') {
    await uf.finish();
    await ufReport('delete');
  }
  // The new count is recorded before the move's record goes: a run that dies between the two finishes the move again.
  await redis.set(partitionCountKey(frontier.prefix), String(to));
  await redis.del(recordKey);
  summary.ms = Date.now() - started;
  return summary;
}

async function readRecord(redis: RedisClient, key: string): Promise<MoveRecord | undefined> {
  const h = await redis.hgetall(key);
  if (h.from === undefined || h.to === undefined) return undefined;
  return {
    from: Number(h.from),
    to: Number(h.to),
    phase: h.phase === 'delete' ? 'delete' : 'copy',
    uf: h.uf === 'move' ? 'move' : 'skip',
  };
}

/** Redis TIME as epoch ms. */
function timeOf([s, us]: readonly (number | string)[]): number {
  return Number(s) * 1000 + Math.floor(Number(us ?? 0) / 1000);
}

/** The spider types of each throttle scope (they share its crawl records, domain state and sequence counter). */
function scopes(calls: FrontierCalls, spiders: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const spider of spiders) {
    const scope = (calls.partitionsOf(spider)[0] as PartitionRef).scope;
    out.set(scope, [...(out.get(scope) ?? []), spider]);
  }
  return out;
}

/** Returns the expired leases of both layouts to their queues, as the monitors' reclaim would. @returns how many */
async function reclaimExpired(layouts: FrontierCalls[], spiders: readonly string[], now: number): Promise<number> {
  let n = 0;
  for (const calls of layouts)
    for (const spider of spiders)
      for (const p of calls.partitionsOf(spider))
        for (;;) {
          const [reclaimed, more] = await calls.run<[number, number]>('reclaim', p, [], [1000], now);
          n += Number(reclaimed);
          if (more !== 1) break;
        }
  return n;
}

/** Leases not yet expired in either layout. */
async function liveLeases(layouts: FrontierCalls[], spiders: readonly string[], now: number): Promise<number> {
  let n = 0;
  for (const calls of layouts)
    for (const spider of spiders)
      for (const p of calls.partitionsOf(spider))
        n += await calls.redis.zcount(partitionKeys(p).leases, `(${now}`, '+inf');
  return n;
}

/** Requests still queued, delayed or leased in the old partitions (once all were moved: 0 unless someone wrote). */
async function leftBehind(old: FrontierCalls, spiders: readonly string[]): Promise<number> {
  let n = 0;
  for (const spider of spiders)
    for (const p of old.partitionsOf(spider)) {
      const k = partitionKeys(p);
      n += (await old.redis.zcard(k.queue)) + (await old.redis.zcard(k.delayed)) + (await old.redis.zcard(k.leases));
    }
  return n;
}

/** The copy phase: every scope's state, crawls, requests and dupefilters into the new layout. */
async function copyFrontier(
  old: FrontierCalls,
  neu: FrontierCalls,
  spiders: readonly string[],
  options: ReshardOptions,
  now: number,
  summary: ReshardSummary,
): Promise<void> {
  const redis = old.redis;
  const batch = Math.max(1, options.batch ?? RESHARD_BATCH);
  let total = 0;
  for (const spider of spiders)
    for (const p of old.partitionsOf(spider)) {
      const k = partitionKeys(p);
      total += (await redis.zcard(k.queue)) + (await redis.zcard(k.delayed));
    }
  let moved = 0;
  const report = async (step: ReshardStep, spider: string) =>
    options.onProgress?.({ step, spider, moved, total, fingerprints: summary.fingerprints, queues: 0, queuesTotal: 0 });

  for (const [, types] of scopes(old, spiders)) {
    const first = types[0] as string;
    const olds = old.partitionsOf(first);
    const news = neu.partitionsOf(first);
    // The state markers first (docs/design.md §12): a partition never holds requests without one.
    for (const spider of types) for (const q of neu.partitionsOf(spider)) await neu.mark(q);
    Object.entries(await copyScopeState(redis, olds, news, now)).forEach(([k, n]) => {
      summary[k as keyof ScopeCopy] += n;
    });
    await report('domains', first);

    const oldCrawls = await readOldCrawls(old, olds);
    const crawls = [...oldCrawls.crawls.values()];
    const idle = now + old.options.dupefilterTtlSec * 1000;
    await registerCrawls(neu, news, crawls, await sequenceFloor(redis, olds), idle, now);
    await copyCaps(neu, olds, news, crawls, now);
    summary.crawls += crawls.length;
    await report('crawls', first);

    for (const spider of types) {
      const mover = new RequestMover(old, neu, spider, oldCrawls, now);
      for (const p of old.partitionsOf(spider)) {
        const k = partitionKeys(p);
        // Every page is taken from the old partition once moved, so the next page is again the first.
        for (;;) {
          const page = await redis.zrangebylexBuffer(k.queue, '-', '+', 'LIMIT', 0, batch);
          if (page.length === 0) break;
          moved += await mover.move(
            p,
            page.map((member) => ({ member, until: '' })),
            summary,
            () => report('put', spider),
          );
          await report('take', spider);
        }
        for (;;) {
          const flat = await redis.zrangeBuffer(k.delayed, '0', String(batch - 1), 'WITHSCORES');
          if (flat.length === 0) break;
          const page: OldRequest[] = [];
          for (let i = 0; i + 1 < flat.length; i += 2)
            page.push({ member: flat[i] as Buffer, until: (flat[i + 1] as Buffer).toString() });
          moved += await mover.move(p, page, summary, () => report('put', spider));
          await report('take', spider);
        }
      }
    }

    await copyDupefilters(neu, olds, news, crawls, async (n) => {
      summary.fingerprints += n;
      await report('dupefilters', first);
    });
  }
}

/** Moves pages of one spider type's requests from its old partitions to its new ones. */
class RequestMover {
  readonly #old: FrontierCalls;
  readonly #neu: FrontierCalls;
  readonly #spider: string;
  readonly #crawls: OldCrawls;
  readonly #now: number;

  constructor(old: FrontierCalls, neu: FrontierCalls, spider: string, crawls: OldCrawls, now: number) {
    this.#old = old;
    this.#neu = neu;
    this.#spider = spider;
    this.#crawls = crawls;
    this.#now = now;
  }

  /**
   * Puts a page of old partition `p`'s requests into the new partitions (`put` is called then), then takes the whole
   * page out of `p`. @returns how many requests left `p`
   */
  async move(
    p: PartitionRef,
    page: readonly OldRequest[],
    summary: ReshardSummary,
    put: () => Promise<void>,
  ): Promise<number> {
    const live = this.#crawls.live.get(p.partition);
    const news = this.#neu.partitionsOf(this.#spider);
    const groups = new Map<number, { keys: Map<string, number>; args: (string | number | Buffer)[] }>();
    const places = page.map((r) => memberPlace(r.member));
    const unknown = [...new Set(places.filter((place) => !live?.has(place.ref)).map((place) => place.ref))];
    // A ref the move did not read a record of has none (a stopped crawl's), unless a crawl was registered since.
    if (unknown.length > 0 && (await this.#old.redis.hmget(partitionKeys(p).crawlSettings, ...unknown)).some(Boolean))
      throw new ReshardInterruptedError('a crawl was registered in the old partitions during the move');
    for (const [i, r] of page.entries()) {
      const place = places[i] as (typeof places)[number];
      const crawl = live?.get(place.ref);
      // Its crawl is stopped (no record), or the ref is a later crawl's (includes/frontier.lua alive_in): dropped.
      if (crawl === undefined || place.seq < crawl.first) {
        summary.dropped++;
        continue;
      }
      const n = partitionIndex(place.domain, news.length);
      const g = groups.get(n) ?? { keys: new Map<string, number>(), args: [] };
      groups.set(n, g);
      let ci = g.keys.get(crawl.key);
      if (ci === undefined) {
        ci = g.keys.size + 1;
        g.keys.set(crawl.key, ci);
      }
      g.args.push(ci, r.member, r.until);
      if (r.until === '') summary.queued++;
      else summary.delayed++;
    }
    // The new partitions first, in parallel (they may be on different shards); a failure leaves the page where it was.
    const answers = await Promise.all(
      [...groups].map(([n, g]) =>
        this.#neu.run<[number, number]>(
          'reshard-put',
          news[n] as PartitionRef,
          [],
          [g.keys.size, ...g.keys.keys(), g.args.length / 3, ...g.args, 0],
          this.#now,
        ),
      ),
    );
    for (const [, present] of answers) summary.present += Number(present);
    await put();
    const taken = await this.#old.run<number>(
      'reshard-take',
      p,
      [],
      page.map((r) => r.member),
      this.#now,
    );
    if (taken === 0) throw new ReshardInterruptedError(`${p.spider} partition ${p.partition} kept a page of requests`);
    return taken;
  }
}
