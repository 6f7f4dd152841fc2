/**
 * Acks with their children folded in: the children a page follows that belong in its lease's own partition ride
 * in the ack's script call (ack-enqueue.lua: stored before the ack, atomically, one round trip), bounded to
 * {@link MAX_FOLDED_CHILDREN} per call. This holds the one call per partition group of `Frontier.ack` and
 * `Frontier.ackMany` (lib/redis/frontier.ts), which decide what folds; the crawl dupefilter cache
 * (dupe-cache.ts) leaves known duplicates out of the call.
 */
import type { AckResult, FrontierItem, Lease, PartitionRef } from '../frontier-model.ts';
import type { DupeCache } from './dupe-cache.ts';
import { crawlKeys, enqueueArgs, outcomeOf } from './enqueue-args.ts';
import { type FrontierCalls, type ScriptArg, samePartition } from './frontier-calls.ts';
import { memberBytes } from './member.ts';

/**
 * Most children one ack-enqueue call of `Frontier.ackMany` queues (more pages' go in further calls): a Kafka
 * batch of link-heavy pages would otherwise hold Redis for one long script.
 */
export const MAX_FOLDED_CHILDREN = 2000;

/** ack.lua's reply for one lease (ack-enqueue.lua's too, one per lease, then the children's codes). */
type AckReply = [number?, number?, number?, number?, number?];

/** One lease of an ack group, with the children to queue before it (by spider type). */
export interface AckGroupItem {
  lease: Pick<Lease, 'handle'>;
  outcome: 'done' | 'fail';
  children?: ReadonlyMap<string, readonly FrontierItem[]>;
}

/** How many children of an ack go to its lease's own spider type. */
export function ownChildren(it: {
  lease: Pick<Lease, 'partition'>;
  children?: ReadonlyMap<string, readonly FrontierItem[]>;
}): number {
  return it.children?.get(it.lease.partition.spider)?.length ?? 0;
}

/** `idx` cut into runs (in order) whose children add up to at most {@link MAX_FOLDED_CHILDREN}, one item at least. */
export function byChildren(idx: readonly number[], childrenOf: (i: number) => number): number[][] {
  const runs: number[][] = [];
  let run: number[] = [];
  let n = 0;
  for (const i of idx) {
    const c = childrenOf(i);
    if (run.length > 0 && n + c > MAX_FOLDED_CHILDREN) {
      runs.push(run);
      run = [];
      n = 0;
    }
    run.push(i);
    n += c;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** Whether every child goes to the lease's own spider type and partition (so it can be folded into the ack). */
export function allOwn(
  calls: FrontierCalls,
  own: PartitionRef,
  children: ReadonlyMap<string, readonly FrontierItem[]> | undefined,
): boolean {
  for (const [spider, kids] of children ?? []) {
    if (kids.length === 0) continue;
    if (spider !== own.spider) return false;
    for (const k of kids) if (!samePartition(calls.partitionFor(own.spider, k.request.domain), own)) return false;
  }
  return true;
}

function ackResult(r: AckReply): AckResult {
  const [code = -1, queued = 0, leased = 0, done = 0, failed = 0] = r;
  return { acked: code >= 1, complete: code === 2, queued, leased, done, failed };
}

/**
 * One partition's share of `Frontier.ackMany` (and `Frontier.ack`'s own call): one script call (ack.lua, or
 * ack-enqueue.lua when the group has children of `p`), results in order.
 */
export async function ackGroup(
  calls: FrontierCalls,
  dupes: DupeCache,
  p: PartitionRef,
  group: readonly AckGroupItem[],
  now: number,
): Promise<AckResult[]> {
  const ttl = calls.options.dupefilterTtlSec;
  const kids = group.flatMap((g) => g.children?.get(p.spider) ?? []);
  const pairs: ScriptArg[] = [];
  for (const g of group) pairs.push(memberBytes(g.lease.handle), g.outcome);
  let replies: AckReply[];
  const codes: number[] = new Array(kids.length);
  if (kids.length === 0) {
    replies = await calls.run<AckReply[]>('ack', p, [], [ttl, ...pairs], now);
  } else {
    await calls.register(p.spider);
    const all = kids.map((_, i) => i);
    const keyOf = crawlKeys(p.spider);
    let batch = enqueueArgs(p, p.spider, kids, all, keyOf, dupes);
    const send = () =>
      calls.run<unknown[]>('ack-enqueue', p, batch.dupeKeys, [group.length, ...pairs, ttl, ...batch.args], now);
    let reply = await send();
    for (let attempt = 0; reply[0] === 'stale'; attempt++) {
      // A claim no longer holds (the dupefilter was stopped, expired or replaced) and nothing was written:
      // forget those crawls and send again, in full once a second claim has gone stale meanwhile.
      for (const ci of reply.slice(1) as number[]) dupes.forget(batch.dupeKeys[ci - 1] as string);
      if (attempt > 0) dupes.clear();
      batch = enqueueArgs(p, p.spider, kids, all, keyOf, attempt > 0 ? undefined : dupes);
      reply = await send();
    }
    replies = reply.slice(0, group.length) as AckReply[];
    const sentCodes = (reply[group.length] ?? []) as number[];
    const tokens = (reply[group.length + 1] ?? []) as (string | number)[];
    // Children left out were in their crawl's dupefilter: duplicates, unless the crawl was refused meanwhile.
    for (let k = 0; k < kids.length; k++) {
      const t = tokens[(batch.crawlOf[k] as number) - 1];
      codes[k] = typeof t === 'number' ? t : 0;
    }
    const known = new Map<number, Buffer[]>();
    batch.sent.forEach((k, j) => {
      const code = sentCodes[j] as number;
      codes[k] = code;
      if (code !== 0 && code !== 1) return;
      const ci = batch.crawlOf[k] as number;
      let fps = known.get(ci);
      if (fps === undefined) {
        fps = [];
        known.set(ci, fps);
      }
      fps.push((kids[k] as FrontierItem).request.fingerprint);
    });
    for (const [ci, fps] of known) {
      const t = tokens[ci - 1];
      if (typeof t === 'string') dupes.add(batch.dupeKeys[ci - 1] as string, t, fps);
    }
  }
  let c = 0;
  return group.map((g, j) => {
    const result = ackResult(replies[j] ?? []);
    if (g.children) {
      // As ack() reports them: by spider type, those that had children.
      const own = g.children.get(p.spider) ?? [];
      result.children = new Map(own.length > 0 ? [[p.spider, own.map((_, n) => outcomeOf(codes[c + n]))]] : []);
      c += own.length;
    }
    return result;
  });
}
