/**
 * The queues of a URL frontier moved to another partition count (`frontier reshard`, run by
 * lib/redis/url-frontier/reshard.ts): each queue of a crawl in an old partition goes, with all its state (its URLs with
 * their metadata and dates, the scheduled, held and completed ones, its info, its times in its crawl's `due` and in
 * `qdue`), to the new partition of its key, is registered there, then is taken from the old partition.
 *
 * - A queue of at most {@link DUMP_MAX_URLS} URLs is copied whole: its six keys read with DUMP by one script call for
 *   many queues of many crawls (scripts/reshard-uf-read.lua, at most {@link QUEUES_PER_CALL} queues and
 *   {@link URLS_PER_CALL} URLs), restored and registered by one call per new partition (scripts/reshard-uf-put.lua),
 *   taken by one call (so a frontier of many crawls of one queue each costs a few calls per hundreds of crawls).
 * - A larger one is copied a page at a time, so that no command reads or writes more than {@link PAGE} entries: its
 *   keys in the new partition cleared first, each key copied in pages, then the queue registered.
 *
 * Registering a queue in the new partition is where its copy is complete; scripts/reshard-uf-take.lua then deletes it
 * from the old partition if its signature (the sizes of its URL structures and its info) is the copy's. Crash safety:
 * a queue is copied from what the old partition holds, and copied again replaces the copy (a larger queue's copy is
 * cleared before its pages), so a move that died anywhere and is run again copies each queue left in the old partition
 * once more and registers it once (the put uncounts a copy registered already). Nothing writes to a queue while it is
 * copied: the fence stops the servers (scripts/includes/uf.lua); one the fence does not stop (an older version) changes
 * the signature, and the take leaves that queue in the old partition and stops the move.
 */
import type { RedisClient } from '../client.ts';
import { ReshardInterruptedError } from '../reshard-errors.ts';
import { runScript, runScriptBuffer, script } from '../scripts.ts';
import {
  type UrlFrontierPartition,
  type UrlFrontierPartitions,
  urlFrontierCrawlKeys,
  urlFrontierGlobalKeys,
  urlFrontierGroupsKeys,
  urlFrontierPartitionIndex,
  urlFrontierQueueKeys,
} from './keys.ts';
import { queueMember } from './model.ts';

/** A queue of at most this many URLs is copied whole (DUMP and RESTORE); a larger one a page at a time. */
export const DUMP_MAX_URLS = 1000;

/** Queues named by one reshard-uf-read or reshard-uf-take call at most. */
const QUEUES_PER_CALL = 500;

/**
 * URLs read whole by one reshard-uf-read call at most, so restored by one reshard-uf-put call per new partition at
 * most (the queues past it are read by the next call).
 */
const URLS_PER_CALL = 10_000;

/** Entries per command of a paged copy. */
const PAGE = 1000;

/** Queues of one crawl. */
export interface CrawlQueues {
  crawl: string;
  keys: string[];
}

/** What the move of queues counted. */
export interface QueueMoveCounts {
  queues: number;
  /** URLs of the moved queues (active and completed). */
  urls: number;
  held: number;
  completed: number;
  /** Queues the new partitions held already: copied by a run that died before taking them from the old. */
  present: number;
}

/** A queue read whole by reshard-uf-read.lua: its crawl and key, its times in `due` and `qdue`, its DUMP payloads. */
interface ReadQueue {
  crawl: string;
  key: string;
  due: Buffer;
  qdue: Buffer;
  dumps: Buffer[];
}

/** The six keys of a queue, in the order of reshard-uf-put.lua's payloads. */
function sixKeys(p: UrlFrontierPartition, crawl: string, key: string): string[] {
  const q = urlFrontierQueueKeys(p, crawl, key);
  return [q.created, q.sched, q.held, q.hdate, q.done, q.info];
}

/** `queues` (in order) as groups of consecutive queues of one crawl. */
function grouped<T extends { crawl: string; key: string }>(queues: readonly T[]): { crawl: string; queues: T[] }[] {
  const out: { crawl: string; queues: T[] }[] = [];
  for (const q of queues) {
    const last = out[out.length - 1];
    if (last?.crawl === q.crawl) last.queues.push(q);
    else out.push({ crawl: q.crawl, queues: [q] });
  }
  return out;
}

/** Moves the queues of crawls from old partitions to new ones (see the module doc). */
export class QueueMover {
  readonly #redis: RedisClient;
  readonly #news: UrlFrontierPartitions;
  /** Called after the puts of each group of queues, before their take. */
  readonly #put: () => Promise<void>;
  /** Called after each take with the queues it took. */
  readonly #taken: (n: number) => Promise<void>;
  readonly counts: QueueMoveCounts = { queues: 0, urls: 0, held: 0, completed: 0, present: 0 };

  constructor(
    redis: RedisClient,
    news: UrlFrontierPartitions,
    put: () => Promise<void>,
    taken: (n: number) => Promise<void>,
  ) {
    this.#redis = redis;
    this.#news = news;
    this.#put = put;
    this.#taken = taken;
  }

  #newPartitionOf(key: string): UrlFrontierPartition {
    return this.#news[urlFrontierPartitionIndex(key, this.#news.length)] as UrlFrontierPartition;
  }

  /** Moves queues of crawls out of old partition `p`, {@link QUEUES_PER_CALL} at a time. */
  async move(p: UrlFrontierPartition, groups: readonly CrawlQueues[]): Promise<void> {
    const all = groups.flatMap(({ crawl, keys }) => keys.map((key) => ({ crawl, key })));
    for (let at = 0; at < all.length; at += QUEUES_PER_CALL)
      await this.#moveSome(p, all.slice(at, at + QUEUES_PER_CALL));
  }

  /**
   * Moves queues out of `p`: those read whole by one reshard-uf-read call (at most {@link URLS_PER_CALL} URLs) are put
   * and taken together, the larger ones one at a time, then the rest again.
   */
  async #moveSome(p: UrlFrontierPartition, queues: readonly { crawl: string; key: string }[]): Promise<void> {
    for (let pending = queues; pending.length > 0; ) {
      const groups = grouped(pending).map(({ crawl, queues: qs }) => ({ crawl, keys: qs.map((q) => q.key) }));
      const args: (string | number)[] = [DUMP_MAX_URLS, URLS_PER_CALL];
      for (const { crawl, keys } of groups) args.push(crawl, keys.length, ...keys);
      const read = await runScriptBuffer<(number | Buffer)[][]>(
        this.#redis,
        script('reshard-uf-read'),
        urlFrontierGroupsKeys(p, groups),
        args,
      );
      const whole: ReadQueue[] = [];
      const large: { crawl: string; key: string }[] = [];
      const later: { crawl: string; key: string }[] = [];
      pending.forEach((q, i) => {
        const [size, due, qdue, ...dumps] = read[i] as [number, Buffer, Buffer, ...Buffer[]];
        if (dumps.length === 6) whole.push({ ...q, due, qdue, dumps });
        else if (size > DUMP_MAX_URLS) large.push(q);
        else later.push(q);
      });
      if (whole.length > 0) await this.#moveWhole(p, whole);
      for (const { crawl, key } of large) await this.#moveLarge(p, crawl, key);
      pending = later;
    }
  }

  /** Restores queues read whole into their new partitions, then takes them from `p`. */
  async #moveWhole(p: UrlFrontierPartition, queues: readonly ReadQueue[]): Promise<void> {
    const byPartition = new Map<UrlFrontierPartition, ReadQueue[]>();
    for (const q of queues) {
      const n = this.#newPartitionOf(q.key);
      byPartition.set(n, [...(byPartition.get(n) ?? []), q]);
    }
    // The new partitions in parallel (they may be on different shards); a failure leaves every queue in `p`.
    const signatures = new Map<string, string>();
    await Promise.all(
      [...byPartition].map(async ([n, part]) => {
        const groups = grouped(part);
        const args: (string | number | Buffer)[] = [];
        for (const { crawl, queues: qs } of groups) {
          args.push(crawl, qs.length);
          for (const q of qs) args.push(q.key, 'r', q.due, q.qdue, ...q.dumps);
        }
        const keys = urlFrontierGroupsKeys(
          n,
          groups.map(({ crawl, queues: qs }) => ({ crawl, keys: qs.map((q) => q.key) })),
        );
        const put = await runScript<[string, number][]>(this.#redis, script('reshard-uf-put'), keys, args);
        part.forEach((q, i) => {
          const [signature, present] = put[i] as [string, number];
          signatures.set(queueMember(q.crawl, q.key), signature);
          this.#count(signature, present);
        });
      }),
    );
    await this.#put();
    await this.#take(p, queues, signatures);
  }

  /**
   * Copies a queue of more than {@link DUMP_MAX_URLS} URLs a page at a time into its new partition: its copy there
   * cleared, each key copied, the queue registered; then takes it from `p`. Nothing writes to the old queue meanwhile
   * (the fence), so pages by rank are stable.
   */
  async #moveLarge(p: UrlFrontierPartition, crawl: string, key: string): Promise<void> {
    const q = this.#newPartitionOf(key);
    const put = (mode: 'c' | 'g', due: string, qdue: string) =>
      runScript<[string, number][]>(
        this.#redis,
        script('reshard-uf-put'),
        urlFrontierGroupsKeys(q, [{ crawl, keys: [key] }]),
        [crawl, 1, key, mode, due, qdue, ...Array(6).fill('')],
      );
    const [[, present] = ['', 0]] = await put('c', '', '');
    const [created, sched, held, hdate, done, info] = sixKeys(p, crawl, key) as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const to = sixKeys(q, crawl, key);
    const r = this.#redis;
    for (const [from, into] of [
      [created, to[0]],
      [hdate, to[3]],
    ] as [string, string][]) {
      let cursor = '0';
      do {
        const [next, flat] = await r.hscanBuffer(from, cursor, 'COUNT', PAGE);
        cursor = next.toString();
        if (flat.length > 0) await r.hset(into, ...flat);
      } while (cursor !== '0');
    }
    for (const [from, into] of [
      [sched, to[1]],
      [held, to[2]],
    ] as [string, string][])
      for (let start = 0; ; start += PAGE) {
        const flat = await r.zrangeBuffer(from, String(start), String(start + PAGE - 1), 'WITHSCORES');
        const pairs: Buffer[] = [];
        for (let i = 0; i + 1 < flat.length; i += 2) pairs.push(flat[i + 1] as Buffer, flat[i] as Buffer);
        if (pairs.length > 0) await r.zadd(into, ...pairs);
        if (flat.length < 2 * PAGE) break;
      }
    let cursor = '0';
    do {
      const [next, members] = await r.sscanBuffer(done, cursor, 'COUNT', PAGE);
      cursor = next.toString();
      if (members.length > 0) await r.sadd(to[4] as string, ...members);
    } while (cursor !== '0');
    const fields = await r.hgetallBuffer(info);
    if (Object.keys(fields).length > 0) await r.hset(to[5] as string, fields);
    const due = await r.zscore(urlFrontierCrawlKeys(p, crawl).due, key);
    const qdue = await r.zscore(urlFrontierGlobalKeys(p).queueDue, queueMember(crawl, key));
    const [[signature] = ['', 0]] = await put('g', due ?? '', qdue ?? '');
    this.#count(signature, present);
    await this.#put();
    await this.#take(p, [{ crawl, key }], new Map([[queueMember(crawl, key), signature]]));
  }

  /** Takes queues from `p` (reshard-uf-take.lua) when they are as copied (`signatures` by queue member). */
  async #take(
    p: UrlFrontierPartition,
    queues: readonly { crawl: string; key: string }[],
    signatures: Map<string, string>,
  ): Promise<void> {
    const groups = grouped(queues);
    const args: string[] = [];
    for (const { crawl, queues: qs } of groups) {
      args.push(crawl, String(qs.length));
      for (const q of qs) args.push(q.key, signatures.get(queueMember(q.crawl, q.key)) ?? '');
    }
    const keys = urlFrontierGroupsKeys(
      p,
      groups.map(({ crawl, queues: qs }) => ({ crawl, keys: qs.map((q) => q.key) })),
    );
    const [taken, changed, crawl, key] = await runScript<[number, number, string, string]>(
      this.#redis,
      script('reshard-uf-take'),
      keys,
      args,
    );
    if (changed > 0)
      throw new ReshardInterruptedError(
        `${changed} URL Frontier queue${changed === 1 ? '' : 's'} changed in the old partitions after ` +
          `${changed === 1 ? 'it was' : 'they were'} copied (crawl ${JSON.stringify(crawl)}, queue ` +
          `${JSON.stringify(key)}${changed === 1 ? '' : ' first'})`,
      );
    await this.#taken(taken);
  }

  /** Counts a queue put, from its signature (`<created>\n<sched>\n<held>\n<hdate>\n<done>\n...`). */
  #count(signature: string, present: number): void {
    const [created, , held, , done] = signature.split('\n', 5).map(Number);
    this.counts.queues++;
    this.counts.urls += created ?? 0;
    this.counts.held += held ?? 0;
    this.counts.completed += done ?? 0;
    this.counts.present += Number(present);
  }
}
