/**
 * `Frontier.leaseMany` (lib/redis/frontier.ts): lease.lua on one partition, its reply decoded into leases; and with
 * several partitions (`FRONTIER_PARTITIONS`), one call per partition in turn from a rotating first
 * (lib/redis/frontier-calls.ts `leaseOrder`) until the wanted number is leased, the answers combined as one. A
 * partition that fails is passed over while others lease (see {@link leaseMany}).
 */
import type { CrawlSettings, Lease, LeaseLeft, LeaseMany, PartitionRef } from '../frontier-model.ts';
import type { FrontierCalls } from './frontier-calls.ts';
import { memberHandle, parseMember } from './member.ts';

/** What a lease call takes besides the count (see `CrawlerFrontier.leaseMany`, lib/ports.ts). */
export interface LeaseOptions {
  ip?: string;
  now?: number;
  exclude?: readonly string[];
  perDomain?: number;
}

export async function leaseMany(
  calls: FrontierCalls,
  spider: string,
  max: number,
  options: LeaseOptions,
): Promise<LeaseMany> {
  const now = options.now ?? Date.now();
  const want = Math.max(1, Math.floor(max));
  const order = calls.leaseOrder(spider);
  if (order.length === 1) return leaseFrom(calls, order[0] as PartitionRef, want, options, now);
  const leases: Lease[] = [];
  let nextDueMs: number | null = null;
  let skipped = 0;
  const lefts = new Set<LeaseLeft>();
  let asked = 0;
  let failed: unknown;
  for (const p of order) {
    if (leases.length >= want) break;
    asked++;
    let r: LeaseMany;
    try {
      r = await leaseFrom(calls, p, want - leases.length, options, now);
    } catch (error) {
      // A partition whose shard fails (failing over, unreachable) must not lose what the others leased: thrown
      // away, those leases would be held by no one until reclaimed (a LEASE_TIMEOUT later, a try charged). The
      // others go on; the call fails only when nothing was leased.
      failed ??= error;
      continue;
    }
    leases.push(...r.leases);
    skipped += r.skipped;
    lefts.add(r.left);
    if (r.nextDueMs !== null) nextDueMs = nextDueMs === null ? r.nextDueMs : Math.min(nextDueMs, r.nextDueMs);
  }
  if (failed !== undefined && leases.length === 0) throw failed;
  // Filled before every partition was asked: the others may have work now.
  if (asked < order.length) lefts.add('more');
  const left = (['more', 'leased', 'excluded'] as const).find((l) => lefts.has(l)) ?? 'none';
  return { leases, nextDueMs: left === 'more' ? now : nextDueMs, skipped, left };
}

/** lease.lua on one partition. */
async function leaseFrom(
  calls: FrontierCalls,
  p: PartitionRef,
  want: number,
  options: LeaseOptions,
  now: number,
): Promise<LeaseMany> {
  const r = await calls.runBuffer<(number | Buffer)[]>(
    'lease',
    p,
    [
      calls.options.leaseMs,
      options.ip ?? '',
      calls.options.bound,
      want,
      options.perDomain ?? 0,
      ...(options.exclude ?? []),
    ],
    now,
  );
  if (r[0] === 1) {
    const hitMs = Number(r[2]);
    const due = Number(r[3]);
    const leases: Lease[] = [];
    for (let i = 5; i + 1 < r.length; i += 2) {
      const member = r[i] as Buffer;
      leases.push({
        handle: memberHandle(member),
        partition: p,
        ...parseMember(member),
        crawl: JSON.parse((r[i + 1] as Buffer).toString('utf8')) as CrawlSettings,
        hitMs,
      });
    }
    return { leases, nextDueMs: due < 0 ? null : due, skipped: Number(r[1] ?? 0), ...leftOf(r[4]) };
  }
  const due = Number(r[1]);
  return { leases: [], nextDueMs: due < 0 ? null : due, skipped: Number(r[2] ?? 0), ...leftOf(r[3]) };
}

/** lease.lua's `left` (its header). */
const LEFT: readonly LeaseLeft[] = ['none', 'more', 'excluded', 'leased'];

function leftOf(left: number | Buffer | undefined): Pick<LeaseMany, 'left'> {
  return { left: LEFT[Number(left ?? 0)] ?? 'none' };
}
