/**
 * The frontier split into partitions (`FRONTIER_PARTITIONS`; lib/redis/keys.ts, lib/redis/partition-sums.ts) on the
 * 3-master cluster-mode Redis of `services up`: where the partitions land, how domains spread over them, and what a
 * crawl over several partitions answers (fair leases, one completion with exact totals, records kept while the crawl
 * lives elsewhere, domain config where the domain is).
 */
import type { Cluster } from 'ioredis';
import { describe, expect, test, vi } from 'vitest';
import type { AckResult, FrontierItem, Lease } from '../../lib/frontier-model.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { crawlKey, partitionIndex, partitionKeys, partitionTag, spiderPartitions } from '../../lib/redis/keys.ts';
import { childCrawl, frontierTestRedis, queueRequest, seedCrawl, T0, testFrontier } from '../helpers/frontier.ts';
import { recordScriptCalls } from '../helpers/scripts.ts';

const redis = frontierTestRedis();

/** The master (host:port) that owns each slot range, from CLUSTER SLOTS. */
async function slotOwners(): Promise<{ from: number; to: number; master: string }[]> {
  const ranges = (await redis.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]]][];
  return ranges.map(([from, to, [host, port]]) => ({ from, to, master: `${host}:${port}` }));
}

async function masterOf(key: string): Promise<string> {
  const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', key));
  const owner = (await slotOwners()).find((r) => slot >= r.from && slot <= r.to);
  return owner?.master ?? 'none';
}

/** `per` domains of each partition, for tests that need work in every partition. */
function domainsPerPartition(count: number, per = 1): string[][] {
  const out: string[][] = Array.from({ length: count }, () => []);
  for (let i = 0; out.some((d) => d.length < per); i++) {
    const d = `host${i}.test`;
    const bucket = out[partitionIndex(d, count)] as string[];
    if (bucket.length < per) bucket.push(d);
  }
  return out;
}

/** Leases and acks everything due, children from `childrenOf`, until nothing is left; every ack's result. */
async function crawlAll(
  frontier: Frontier,
  childrenOf: (lease: Lease) => FrontierItem[],
  now: number,
): Promise<{ leased: Lease[]; acks: AckResult[] }> {
  const leased: Lease[] = [];
  const acks: AckResult[] = [];
  for (;;) {
    const { leases } = await frontier.leaseMany('link', 7, { now });
    if (leases.length === 0) break;
    leased.push(...leases);
    const results = await frontier.ackMany(
      leases.map((lease) => {
        const kids = childrenOf(lease);
        return { lease, outcome: 'done' as const, children: kids.length > 0 ? new Map([['link', kids]]) : undefined };
      }),
      now,
    );
    acks.push(...results);
  }
  return { leased, acks };
}

describe('partition placement', () => {
  test('the cluster-mode Redis has three masters', async () => {
    await redis.ping();
    expect((redis as Cluster).nodes('master')).toHaveLength(3);
  });

  test.each([3, 6, 12])('%i partitions sit on the three masters evenly', async (n) => {
    const tags = spiderPartitions('placement', 'link', true, n).map(partitionTag);
    expect(new Set(tags).size).toBe(n);
    const perMaster = new Map<string, number>();
    for (const tag of tags) {
      const m = await masterOf(`${tag}:q:link`);
      perMaster.set(m, (perMaster.get(m) ?? 0) + 1);
    }
    expect([...perMaster.values()]).toEqual([n / 3, n / 3, n / 3]);
  });

  test('one partition keeps the names it had before partitions existed', () => {
    const [p] = spiderPartitions('pre', 'link', true, 1);
    expect(partitionTag(p as NonNullable<typeof p>)).toBe('{pre:f:link:0}');
  });

  test('10,000 domains spread over 6 partitions within 10 % of the mean, each always in the same one', () => {
    const counts = new Array(6).fill(0);
    for (let i = 0; i < 10_000; i++) counts[partitionIndex(`site-${i}.example`, 6)]++;
    for (const c of counts) expect(Math.abs(c - 10_000 / 6)).toBeLessThan(10_000 / 6 / 10);
    expect(partitionIndex('example.com', 6)).toBe(partitionIndex('example.com', 6));
    // Jump hashing: going from 6 to 7 partitions moves only the domains the new partition takes.
    let moved = 0;
    for (let i = 0; i < 10_000; i++) {
      const d = `site-${i}.example`;
      const before = partitionIndex(d, 6);
      const after = partitionIndex(d, 7);
      if (before !== after) {
        moved++;
        expect(after).toBe(6);
      }
    }
    expect(moved / 10_000).toBeLessThan(0.2);
  });
});

describe('a crawl over six partitions', () => {
  test('leases rotate over the partitions: none starves behind a busy one', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const domains = domainsPerPartition(6, 3);
    // Partition 0 has far more work than the others.
    const busy = Array.from({ length: 60 }, (_, i) => queueRequest(`http://${domains[0]?.[i % 3]}/busy/${i}`, 5));
    const rest = domains.slice(1).flatMap((ds) => ds.map((d) => queueRequest(`http://${d}/one`, 1)));
    const crawl = seedCrawl('app', 'fair');
    await frontier.enqueue(
      'link',
      [...busy, ...rest].map((request) => ({ crawl, request })),
      T0,
    );
    // Twelve single leases: every partition has been served twice, whatever its priorities.
    const served = new Map<number, number>();
    for (let i = 0; i < 12; i++) {
      const { leases } = await frontier.leaseMany('link', 1, { now: T0 });
      const p = leases[0]?.partition.partition as number;
      served.set(p, (served.get(p) ?? 0) + 1);
    }
    expect([...served.entries()].sort()).toEqual([0, 1, 2, 3, 4, 5].map((p) => [p, 2]));
  });

  test('a lease call that one partition cannot fill takes the rest from the others, and says when more is due', async () => {
    // One fetch per domain a minute: after one lease each, every domain waits on its throttle.
    const frontier = testFrontier(redis, { partitions: 6, hits: 1, windowSec: 60, moderated: false });
    const domains = domainsPerPartition(6);
    const crawl = seedCrawl('app', 'fill');
    await frontier.enqueue(
      'link',
      domains.flatMap(([d]) => [1, 2].map((i) => ({ crawl, request: queueRequest(`http://${d}/${i}`) }))),
      T0,
    );
    const r = await frontier.leaseMany('link', 10, { now: T0 });
    expect(r.leases).toHaveLength(6);
    expect(new Set(r.leases.map((l) => l.partition.partition)).size).toBe(6);
    const empty = await frontier.leaseMany('link', 10, { now: T0 });
    expect(empty).toMatchObject({ leases: [], left: 'none' });
    // Every domain throttled now: the earliest throttle end of any partition.
    expect(empty.nextDueMs).toBeGreaterThan(T0);
    expect(empty.nextDueMs).toBeLessThanOrEqual(T0 + 60_000);
  });

  test('children across partitions: the crawl completes exactly once, with exact totals, in info too', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const seed = seedCrawl('app', 'tree', { maxdepth: 3 });
    // Page n links to 3n+1..3n+3 on host (n % 20): 121 pages over 20 domains, spread over the partitions.
    const url = (n: number) => `http://h${n % 20}.test/p/${n}`;
    await frontier.enqueue('link', [{ crawl: seed, request: queueRequest(url(0)) }], T0);
    const { leased, acks } = await crawlAll(
      frontier,
      (lease) => {
        const n = Number(lease.url.split('/').pop());
        if (lease.depth >= 4) return [];
        return [1, 2, 3]
          .map((k) => 3 * n + k)
          .filter((c) => c <= 120)
          .map((c) => ({ crawl: childCrawl(seed), request: queueRequest(url(c), 1, lease.depth + 1) }));
      },
      T0,
    );
    expect(new Set(leased.map((l) => l.url)).size).toBe(121);
    expect(leased).toHaveLength(121);
    const hosts = Array.from({ length: 20 }, (_, i) => `h${i}.test`);
    expect(new Set(leased.map((l) => l.partition.partition))).toEqual(new Set(hosts.map((h) => partitionIndex(h, 6))));
    const complete = acks.filter((a) => a.complete);
    expect(complete).toHaveLength(1);
    expect(complete[0]).toMatchObject({ queued: 0, leased: 0, done: 121, failed: 0 });
    expect(await frontier.crawlInfo('link', 'app', 'tree', T0)).toMatchObject({
      queued: 0,
      leased: 0,
      done: 121,
      failed: 0,
    });
  });

  test('every script call of a crawl over partitions has keys of one slot', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const seed = seedCrawl('app', 'slots');
    const url = (n: number) => `http://s${n % 9}.test/${n}`;
    const calls = await recordScriptCalls(redis, async () => {
      await frontier.enqueue('link', [{ crawl: seed, request: queueRequest(url(0)) }], T0);
      await crawlAll(
        frontier,
        (lease) => {
          const n = Number(lease.url.split('/').pop());
          return n >= 9
            ? []
            : [2 * n + 1, 2 * n + 2].map((c) => ({ crawl: childCrawl(seed), request: queueRequest(url(c), 1, 1) }));
        },
        T0,
      );
      await frontier.sweepFinished('link', T0 + 3_600_000);
    });
    expect(new Set(calls.map((c) => c.script))).toContain('crawl-counts');
    for (const { script, keys } of calls) {
      const slots = new Set<number>();
      for (const key of keys) slots.add(Number(await redis.call('CLUSTER', 'KEYSLOT', key)));
      expect(slots.size, `${script}: ${keys.join(' ')}`).toBe(1);
    }
  });

  test('two partitions that empty at once give one completion between them', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const [a, b] = domainsPerPartition(6).map(([d]) => d as string);
    const seed = seedCrawl('app', 'race');
    await frontier.enqueue(
      'link',
      [a, b].map((d) => ({ crawl: seed, request: queueRequest(`http://${d}/x`) })),
      T0,
    );
    const { leases } = await frontier.leaseMany('link', 2, { now: T0 });
    expect(leases).toHaveLength(2);
    // Both acks at once: each partition empties; whichever looks last sees the other empty too.
    const results = await Promise.all(leases.map((lease) => frontier.ack(lease, 'done', T0)));
    expect(results.filter((r) => r.complete)).toHaveLength(1);
    expect(results.find((r) => r.complete)).toMatchObject({ done: 2, failed: 0 });
  });

  test('a child queued in a partition already read, its parent acked before the next read: no early completion', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const [a, b, c] = domainsPerPartition(6).map(([d]) => d as string);
    const seed = seedCrawl('app', 'snapshot');
    await frontier.enqueue(
      'link',
      [b, c].map((d) => ({ crawl: seed, request: queueRequest(`http://${d}/x`) })),
      T0,
    );
    const { leases } = await frontier.leaseMany('link', 2, { now: T0 });
    const parent = leases.find((l) => l.partition.partition === 1) as Lease;
    const mine = leases.find((l) => l.partition.partition === 2) as Lease;
    expect([parent, mine].every(Boolean)).toBe(true);
    // Another worker's page (partition 1) queues a child in partition 0 and is acked, right after this ack's check
    // has read partition 0 and before it reads partition 1: at no single moment was the crawl without work.
    const client = redis as unknown as {
      sendCommand: (command: { name: string; args: unknown[] }) => Promise<unknown>;
    };
    const send = client.sendCommand.bind(client);
    const firstRefs = partitionKeys({ ...parent.partition, partition: 0 }).crawlRefs;
    let interleaved = false;
    const spy = vi.spyOn(client, 'sendCommand').mockImplementation((command) => {
      const reply = send(command);
      if (interleaved || !command.name.startsWith('eval') || String(command.args[2]) !== firstRefs) return reply;
      interleaved = true;
      const child = { crawl: childCrawl(seed), request: queueRequest(`http://${a}/child`, 1, 1) };
      return reply.then(async (value) => {
        await frontier.ackMany([{ lease: parent, outcome: 'done', children: new Map([['link', [child]]]) }], T0);
        return value;
      });
    });
    let result: AckResult;
    try {
      result = await frontier.ack(mine, 'done', T0);
    } finally {
      spy.mockRestore();
    }
    expect(interleaved).toBe(true);
    expect(result.complete).toBe(false);
    // The child is crawled; its ack is the completion, with every page counted.
    const { acks } = await crawlAll(frontier, () => [], T0);
    expect(acks).toHaveLength(1);
    expect(acks[0]).toMatchObject({ complete: true, queued: 0, leased: 0, done: 3, failed: 0 });
  });

  test('a partition where the crawl completed keeps its records while the crawl lives elsewhere', async () => {
    const frontier = testFrontier(redis, { partitions: 6, dupefilterTtlSec: 60 });
    const [a, b] = domainsPerPartition(6).map(([d]) => d as string);
    const seed = seedCrawl('app', 'long');
    await frontier.enqueue(
      'link',
      [`http://${a}/1`, `http://${b}/1`].map((u) => ({ crawl: seed, request: queueRequest(u) })),
      T0,
    );
    const leases = (await frontier.leaseMany('link', 2, { now: T0 })).leases;
    const inA = leases.find((l) => l.domain === a) as Lease;
    const inB = leases.find((l) => l.domain === b) as Lease;
    expect((await frontier.ack(inA, 'done', T0)).complete).toBe(false);
    // Two TTLs later the crawl still works in b's partition: a's records stay (its page stays a duplicate).
    const later = T0 + 120_000;
    expect(await frontier.sweepFinished('link', later)).toBe(0);
    expect(
      await frontier.enqueue('link', [{ crawl: childCrawl(seed), request: queueRequest(`http://${a}/1`) }], later),
    ).toEqual(['duplicate']);
    const done = await frontier.ack(inB, 'done', later);
    expect(done).toMatchObject({ complete: true, done: 2 });
    // Once the crawl is done everywhere, both partitions' records go a TTL later.
    expect(await frontier.sweepFinished('link', later + 61_000)).toBe(2);
    expect(await frontier.crawlInfo('link', 'app', 'long', later + 61_000)).toBeUndefined();
  });

  test('stop reaches every partition: later children are refused wherever their domain is', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const domains = domainsPerPartition(6).map(([d]) => d as string);
    const seed = seedCrawl('app', 'halt');
    await frontier.enqueue(
      'link',
      domains.map((d) => ({ crawl: seed, request: queueRequest(`http://${d}/1`) })),
      T0,
    );
    expect((await frontier.stop('link', 'app', 'halt', T0)).purged).toBe(6);
    const late = await frontier.enqueue(
      'link',
      domains.map((d) => ({ crawl: { ...seed }, request: queueRequest(`http://${d}/2`) })),
      T0 + 1,
    );
    expect(late).toEqual(new Array(6).fill('stopped'));
  });

  test('domain config and blacklist land in the partition that holds the domain, and hold there', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const [a, b] = domainsPerPartition(6).map(([d]) => d as string);
    const seed = seedCrawl('app', 'cfg');
    await frontier.enqueue(
      'link',
      [a, b].map((d) => ({ crawl: seed, request: queueRequest(`http://${d}/1`) })),
      T0,
    );
    await frontier.configureDomain('blacklist-update', a as string, {}, T0);
    const ps = frontier.partitionsOf('link');
    const holders = [];
    for (const p of ps) if (await redis.sismember(partitionKeys(p).blacklist, a as string)) holders.push(p.partition);
    expect(holders).toEqual([partitionIndex(a as string, 6)]);
    const { leases } = await frontier.leaseMany('link', 10, { now: T0 });
    expect(leases.map((l) => l.domain)).toEqual([b]);
    expect(await frontier.crawlInfo('link', 'app', 'cfg', T0)).toMatchObject({ queued: 1, leased: 1 });
  });

  test('a crawl key is the same in every partition: info of an app lists each crawl once', async () => {
    const frontier = testFrontier(redis, { partitions: 6 });
    const domains = domainsPerPartition(6).map(([d]) => d as string);
    for (const id of ['x', 'y'])
      await frontier.enqueue(
        'link',
        domains.map((d) => ({ crawl: seedCrawl('app', id), request: queueRequest(`http://${d}/${id}`) })),
        T0,
      );
    const infos = await frontier.appInfo('link', 'app', T0);
    expect(Object.keys(infos).sort()).toEqual(['x', 'y']);
    expect(infos.x).toMatchObject({ queued: 6 });
    expect(Object.keys(infos.x?.domains ?? {}).sort()).toEqual([...domains].sort());
    expect(crawlKey('app', 'x', 'link')).toHaveLength(16);
  });
});
