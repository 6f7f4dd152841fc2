import type { Command } from 'ioredis';
import { describe, expect, test, vi } from 'vitest';
import type { CrawlRef, Lease, PartitionRef } from '../../lib/frontier-model.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { partitionIndex, partitionKeys } from '../../lib/redis/keys.ts';
import {
  childCrawl,
  frontierTestRedis,
  leaseAll,
  leaseOne,
  queueRequest,
  seedCrawl,
  T0,
  testFrontier,
} from '../helpers/frontier.ts';
import { recordScriptCalls } from '../helpers/scripts.ts';
import { uniqueName } from '../helpers/services.ts';

const redis = frontierTestRedis();

const LEASE_MS = 30_000;

/** Queues `urls` (priority 5) for crawl app/c1, the first as its seed. */
async function queue(frontier: Frontier, urls: string[], now = T0, crawl: CrawlRef = seedCrawl('app', 'c1')) {
  const outcomes = await frontier.enqueue(
    'link',
    urls.map((url, i) => ({ crawl: i === 0 ? crawl : childCrawl(crawl), request: queueRequest(url, 5) })),
    now,
  );
  expect(outcomes.every((o) => o === 'queued')).toBe(true);
}

const urls = (n: number, host = 'a.com') => Array.from({ length: n }, (_, i) => `http://${host}/${i}`);

async function counts(frontier: Frontier, crawlid = 'c1') {
  const info = await frontier.crawlInfo('link', 'app', crawlid);
  return info && { queued: info.queued, leased: info.leased, done: info.done, failed: info.failed };
}

describe('frontier leases', () => {
  test('10 leases never acked are reclaimed after their deadline and are leasable again in their old order', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    await queue(frontier, [...urls(5, 'a.com'), ...urls(5, 'b.com')]);
    const first = await leaseAll(frontier, 'link', T0);
    expect(first).toHaveLength(10);
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 10, done: 0, failed: 0 });

    expect(await frontier.reclaim('link', T0 + LEASE_MS - 1)).toBe(0);
    expect(await leaseAll(frontier, 'link', T0 + LEASE_MS - 1)).toEqual([]);
    expect(await frontier.reclaim('link', T0 + LEASE_MS + 1)).toBe(10);
    expect(await frontier.reclaim('link', T0 + LEASE_MS + 2)).toBe(0);
    expect(await counts(frontier)).toEqual({ queued: 10, leased: 0, done: 0, failed: 0 });

    const again = await leaseAll(frontier, 'link', T0 + LEASE_MS + 2);
    expect(again.map((l) => l.url)).toEqual(first.map((l) => l.url));
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 10, done: 0, failed: 0 });
  });

  test('reclaim works through more expired leases than its per-call limit', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    await queue(frontier, urls(25));
    expect(await leaseAll(frontier, 'link', T0)).toHaveLength(25);
    expect(await frontier.reclaim('link', T0 + LEASE_MS + 1, 10)).toBe(25);
    expect(await leaseAll(frontier, 'link', T0 + LEASE_MS + 1)).toHaveLength(25);
  });

  test('a released request goes back to its FIFO place, ahead of requests queued after it', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, urls(5));
    const [a, b, c] = await leaseAll(frontier, 'link', T0, { max: 3 });
    expect(await frontier.release([b as Lease], T0 + 1)).toBe(1);
    expect(await frontier.release([b as Lease], T0 + 1)).toBe(0);
    expect(await counts(frontier)).toEqual({ queued: 3, leased: 2, done: 0, failed: 0 });
    const rest = await leaseAll(frontier, 'link', T0 + 2);
    expect(rest.map((l) => l.url)).toEqual(['http://a.com/1', 'http://a.com/3', 'http://a.com/4']);
    expect([a?.url, c?.url]).toEqual(['http://a.com/0', 'http://a.com/2']);
  });

  test('a retried request is queued at priority - 10 with retries + 1 and is not leasable before its delay', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, ['http://a.com/flaky']);
    const [lease] = await leaseAll(frontier, 'link', T0);
    const r = await frontier.retry(lease as Lease, 5000, T0 + 100);
    expect(r.retried).toBe(true);
    expect(r.handle).not.toBe(lease?.handle);
    const info = await frontier.crawlInfo('link', 'app', 'c1', T0 + 100);
    expect(info?.domains).toEqual({ 'a.com': { priorities: { [-5]: 1 }, total: 1 } });
    expect(info?.queued).toBe(1);
    expect(info?.leased).toBe(0);

    expect(await leaseOne(frontier, 'link', { now: T0 + 5099 })).toEqual({
      leased: false,
      nextDueMs: T0 + 5100,
      skipped: 0,
    });
    const again = await leaseOne(frontier, 'link', { now: T0 + 5100 });
    expect(again.leased && again.lease).toMatchObject({
      url: 'http://a.com/flaky',
      domain: 'a.com',
      priority: -5,
      retries: 1,
      depth: 0,
      handle: r.handle,
    });
    // The old handle is gone.
    expect((await frontier.retry(lease as Lease, 0, T0 + 5200)).retried).toBe(false);
  });

  test('a retried request waits behind requests of higher priority once its delay has passed', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, ['http://a.com/0']);
    const [lease] = await leaseAll(frontier, 'link', T0);
    await frontier.retry(lease as Lease, 1000, T0);
    await queue(frontier, ['http://b.com/low'], T0 + 1, seedCrawl('app', 'c2'));
    await frontier.enqueue(
      'link',
      [{ crawl: seedCrawl('app', 'c3'), request: queueRequest('http://c.com/x', -6) }],
      T0,
    );
    const order = await leaseAll(frontier, 'link', T0 + 2000);
    expect(order.map((l) => [l.url, l.priority])).toEqual([
      ['http://b.com/low', 5],
      ['http://a.com/0', -5],
      ['http://c.com/x', -6],
    ]);
  });

  test('an ack of an unknown or already acked lease answers acked: false', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, urls(2));
    const [lease] = await leaseAll(frontier, 'link', T0, { max: 1 });
    expect((await frontier.ack(lease as Lease, 'done', T0 + 1)).acked).toBe(true);
    expect(await frontier.ack(lease as Lease, 'done', T0 + 2)).toMatchObject({ acked: false, complete: false });
    const made = {
      handle: `a.com\u0000${'0'.repeat(17)}\u0000999\u00000\u00000\u0000http://a.com/x`,
      partition: lease?.partition,
    };
    expect(await frontier.ack(made as Lease, 'done', T0 + 3)).toMatchObject({ acked: false, complete: false });
    expect(await counts(frontier)).toEqual({ queued: 1, leased: 0, done: 1, failed: 0 });
  });

  test('each reclaim counts one retry (same place in the queue), and a late ack still finds the request after two', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    await queue(frontier, urls(2));
    const [killer, other] = await leaseAll(frontier, 'link', T0);
    let now = T0;
    let current = killer as Lease;
    for (const expected of [1, 2]) {
      now += LEASE_MS + 1;
      expect(await frontier.reclaim('link', now)).toBe(2);
      const again = await leaseAll(frontier, 'link', now);
      const same = again.find((l) => l.url === killer?.url) as Lease;
      expect(same).toMatchObject({ retries: expected, priority: killer?.priority });
      current = same;
      if (expected === 1) expect(again.map((l) => l.url)).toEqual([killer?.url, other?.url]);
    }
    // The first holder acks with its old handle: it counts, and the current holder's ack is the duplicate.
    expect((await frontier.ack(killer as Lease, 'done', now + 1)).acked).toBe(true);
    expect((await frontier.ack(current, 'done', now + 2)).acked).toBe(false);
  });

  test('a late ack after its lease was reclaimed removes the queued copy, so nobody fetches it again', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    await queue(frontier, urls(2));
    const [slow, other] = await leaseAll(frontier, 'link', T0);
    expect(await frontier.reclaim('link', T0 + LEASE_MS + 1)).toBe(2);
    const late = await frontier.ack(slow as Lease, 'done', T0 + LEASE_MS + 2);
    expect(late).toMatchObject({ acked: true, complete: false, queued: 1, leased: 0, done: 1 });
    const again = await leaseAll(frontier, 'link', T0 + LEASE_MS + 3);
    expect(again.map((l) => l.url)).toEqual([other?.url]);
    expect((await frontier.ack(again[0] as Lease, 'done', T0 + LEASE_MS + 4)).complete).toBe(true);
  });

  test('a request reclaimed and leased again counts once when both holders ack it', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    await queue(frontier, urls(1));
    const [slow] = await leaseAll(frontier, 'link', T0);
    await frontier.reclaim('link', T0 + LEASE_MS + 1);
    const [second] = await leaseAll(frontier, 'link', T0 + LEASE_MS + 1);
    const acks = [
      await frontier.ack(second as Lease, 'done', T0 + LEASE_MS + 2),
      await frontier.ack(slow as Lease, 'done', T0 + LEASE_MS + 3),
    ];
    expect(acks.map((a) => [a.acked, a.complete])).toEqual([
      [true, true],
      [false, false],
    ]);
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 0, done: 1, failed: 0 });
  });

  test('complete is reported exactly once, by the ack that leaves the crawl with nothing queued or leased', async () => {
    const frontier = testFrontier(redis);
    const crawl = seedCrawl('app', 'c1');
    await queue(frontier, ['http://a.com/seed'], T0, crawl);
    const [seed] = await leaseAll(frontier, 'link', T0);
    // The seed's children are queued before the seed is acked.
    await frontier.enqueue(
      'link',
      ['http://a.com/1', 'http://b.com/2'].map((u) => ({ crawl: childCrawl(crawl), request: queueRequest(u, -5, 1) })),
      T0 + 1,
    );
    expect(await frontier.ack(seed as Lease, 'done', T0 + 2)).toEqual({
      acked: true,
      complete: false,
      queued: 2,
      leased: 0,
      done: 1,
      failed: 0,
    });
    const [c1, c2] = await leaseAll(frontier, 'link', T0 + 3);
    expect((await frontier.ack(c1 as Lease, 'fail', T0 + 4)).complete).toBe(false);
    // A retry keeps the crawl open while its delay runs.
    const retried = await frontier.retry(c2 as Lease, 1000, T0 + 5);
    const [r] = await leaseAll(frontier, 'link', T0 + 1005);
    expect(r?.handle).toBe(retried.handle);
    expect(await frontier.ack(r as Lease, 'done', T0 + 1006)).toEqual({
      acked: true,
      complete: true,
      queued: 0,
      leased: 0,
      done: 2,
      failed: 1,
    });
    expect((await frontier.ack(r as Lease, 'done', T0 + 1007)).complete).toBe(false);
    expect((await frontier.ack(c1 as Lease, 'done', T0 + 1008)).complete).toBe(false);
  });

  test('with two leases out, only the second ack completes the crawl, whichever order they come in', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, urls(2));
    const [a, b] = await leaseAll(frontier, 'link', T0);
    expect((await frontier.ack(b as Lease, 'done', T0 + 1)).complete).toBe(false);
    expect((await frontier.ack(a as Lease, 'done', T0 + 2)).complete).toBe(true);
  });

  test('10 acks sent at once: exactly one of them reports the crawl complete', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, [...urls(5, 'a.com'), ...urls(5, 'b.com')]);
    const leases = await leaseAll(frontier, 'link', T0);
    const acks = await Promise.all(leases.map((l, i) => frontier.ack(l, i % 3 ? 'done' : 'fail', T0 + 1)));
    expect(acks.filter((a) => a.acked)).toHaveLength(10);
    expect(acks.filter((a) => a.complete)).toHaveLength(1);
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 0, done: 6, failed: 4 });
  });

  test('8 concurrent leasers draining 300 requests get each request exactly once', async () => {
    const frontier = testFrontier(redis);
    await queue(
      frontier,
      Array.from({ length: 300 }, (_, i) => `http://d${i % 7}.com/${i}`),
    );
    const got = await Promise.all(Array.from({ length: 8 }, () => leaseAll(frontier, 'link', T0)));
    const handles = got.flat().map((l) => l.handle);
    expect(handles).toHaveLength(300);
    expect(new Set(handles).size).toBe(300);
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 300, done: 0, failed: 0 });
  });

  test('a released last lease does not complete the crawl; its later ack does', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, urls(1));
    const [a] = await leaseAll(frontier, 'link', T0);
    expect(await frontier.release([a as Lease], T0 + 1)).toBe(1);
    const [again] = await leaseAll(frontier, 'link', T0 + 2);
    expect((await frontier.ack(again as Lease, 'done', T0 + 3)).complete).toBe(true);
  });
});

describe('leaseMany', () => {
  test('takes in one call what single leases would, in their order; a short batch says when more is due', async () => {
    const options = { hits: 2, windowSec: 1, moderated: false, throttleMarginMs: 0 };
    const single = testFrontier(redis, options);
    const many = testFrontier(redis, options);
    const all = [...urls(4, 'a.com'), ...urls(4, 'b.com'), ...urls(4, 'c.com')];
    await queue(single, all);
    await queue(many, all);
    const one: string[] = [];
    for (;;) {
      const r = await leaseOne(single, 'link', { now: T0 });
      if (!r.leased) break;
      one.push(r.lease.url);
    }
    // Two per domain inside the first second.
    expect(one).toHaveLength(6);
    const batch = await many.leaseMany('link', 10, { now: T0 });
    expect(batch.leases.map((l) => l.url)).toEqual(one);
    expect(batch.leases.every((l) => l.hitMs === T0 && l.crawl.crawlid === 'c1')).toBe(true);
    expect(batch.nextDueMs).toBe(T0 + 1000);
    expect(await counts(many)).toEqual({ queued: 6, leased: 6, done: 0, failed: 0 });

    // A full batch: more may be due right now.
    const full = await many.leaseMany('link', 3, { now: T0 + 1000 });
    expect(full.leases).toHaveLength(3);
    expect(full.nextDueMs).toBe(T0 + 1000);
    // The rest of that second's turns, then nothing left: no work at all.
    expect((await many.leaseMany('link', 10, { now: T0 + 1000 })).leases).toHaveLength(3);
    for (const l of [...batch.leases, ...full.leases]) await many.ack(l, 'done', T0 + 1000);
    expect(await many.leaseMany('link', 10, { now: T0 + 5000 })).toEqual({
      leases: [],
      nextDueMs: null,
      left: 'none',
      skipped: 0,
    });
  });
});

describe('frontier partitions while one partition’s shard fails', () => {
  /**
   * Makes script calls on partition `p`'s keys fail as a shard failing over answers (CLUSTERDOWN), `times` of them
   * (default: all), until the returned function is called.
   */
  function failScriptsOf(p: PartitionRef, times = Number.POSITIVE_INFINITY): () => void {
    const failing = partitionKeys(p).counts;
    const client = redis as unknown as { sendCommand: (command: Command) => unknown };
    const send = client.sendCommand.bind(client);
    let left = times;
    const spy = vi.spyOn(client, 'sendCommand').mockImplementation((command: Command) => {
      if (/^eval/.test(command.name) && command.args.some((a) => String(a) === failing) && left-- > 0) {
        command.reject(Object.assign(new Error('CLUSTERDOWN The cluster is down'), { name: 'ReplyError' }));
        return command.promise;
      }
      return send(command);
    });
    return () => spy.mockRestore();
  }

  test('what the other partitions leased is returned, not left held by no one; the call fails only when nothing was leased', async () => {
    const prefix = uniqueName();
    const frontier = testFrontier(redis, { prefix, partitions: 6 });
    const hosts = Array.from({ length: 30 }, (_, i) => `host-${i}.com`);
    await queue(
      frontier,
      hosts.map((h) => `http://${h}/`),
    );
    const failing: PartitionRef = { prefix, scope: 'link', partition: 2, spider: 'link', count: 6 };
    const onFailing = hosts.filter((h) => partitionIndex(h, 6) === 2);
    expect(onFailing.length).toBeGreaterThan(0);
    expect(onFailing.length).toBeLessThan(hosts.length);

    const restore = failScriptsOf(failing);
    try {
      const r = await frontier.leaseMany('link', 100, { now: T0 });
      expect(r.leases.map((l) => l.domain).sort()).toEqual(hosts.filter((h) => !onFailing.includes(h)).sort());
      // Every request leased is in the caller's hands: the crawl counts exactly those leased.
      restore();
      expect(await counts(frontier)).toEqual({ queued: onFailing.length, leased: r.leases.length, done: 0, failed: 0 });
    } finally {
      restore();
    }

    // Only the failing partition has work left: nothing can be leased, and the call says why.
    const again = failScriptsOf(failing);
    try {
      await expect(frontier.leaseMany('link', 100, { now: T0 })).rejects.toThrow(/CLUSTERDOWN/);
    } finally {
      again();
    }
    const after = await frontier.leaseMany('link', 100, { now: T0 });
    expect(after.leases.map((l) => l.domain).sort()).toEqual([...onFailing].sort());
  });

  test('the ack that leaves the crawl with no work completes it though another partition’s counts fail for a while', async () => {
    const prefix = uniqueName();
    const frontier = testFrontier(redis, { prefix, partitions: 6 });
    // Two domains of two partitions.
    const a = 'host-0.com';
    const b = ['host-1.com', 'host-2.com', 'host-3.com'].find(
      (h) => partitionIndex(h, 6) !== partitionIndex(a, 6),
    ) as string;
    await queue(frontier, [`http://${a}/`, `http://${b}/`]);
    const leases = (await frontier.leaseMany('link', 10, { now: T0 })).leases;
    const onA = leases.find((l) => l.domain === a) as Lease;
    const onB = leases.find((l) => l.domain === b) as Lease;
    expect(await frontier.ack(onB, 'done', T0 + 1)).toMatchObject({ acked: true, complete: false });

    // The last ack: stored in a's partition, while b's partition answers CLUSTERDOWN twice to the sums.
    const restore = failScriptsOf(
      { prefix, scope: 'link', partition: partitionIndex(b, 6), spider: 'link', count: 6 },
      2,
    );
    try {
      expect(await frontier.ack(onA, 'done', T0 + 2)).toMatchObject({
        acked: true,
        complete: true,
        done: 2,
        failed: 0,
      });
    } finally {
      restore();
    }
  });
});

describe('leaseMany: per-domain in-flight cap (issue 32)', () => {
  test('leases nothing of the excluded domains and at most perDomain of one; the rest keep their place', async () => {
    const open = { hits: 1000, windowSec: 1, moderated: false, throttleMarginMs: 0 };
    const frontier = testFrontier(redis, open);
    // a.com's requests come first in the queue order: without a cap one call takes only them.
    await queue(frontier, [...urls(6, 'a.com'), ...urls(3, 'b.com'), ...urls(3, 'c.com')]);
    const capped = await frontier.leaseMany('link', 10, { now: T0, perDomain: 2, exclude: ['b.com'] });
    const byDomain = (ls: Lease[]) => {
      const m: Record<string, number> = {};
      for (const l of ls) m[l.domain] = (m[l.domain] ?? 0) + 1;
      return m;
    };
    expect(byDomain(capped.leases)).toEqual({ 'a.com': 2, 'c.com': 2 });
    // Left ready: b.com (excluded) and a.com and c.com, which reached perDomain in this call: "more now", but only
    // in domains this call leased from (the crawler, whose cap perDomain is, judges them: lease.lua's `left`).
    expect(capped.nextDueMs).toBe(T0);
    expect(capped.left).toBe('leased');
    const rest = await frontier.leaseMany('link', 20, { now: T0 + 1 });
    expect(byDomain(rest.leases)).toEqual({ 'a.com': 4, 'b.com': 3, 'c.com': 1 });
    expect(rest.leases.filter((l) => l.domain === 'a.com').map((l) => l.url)).toEqual(urls(6, 'a.com').slice(2));
  });

  test('with IP-scoped throttles too', async () => {
    const frontier = testFrontier(redis, {
      hits: 1000,
      windowSec: 1,
      moderated: false,
      throttleMarginMs: 0,
      ipEnabled: true,
    });
    await queue(frontier, [...urls(4, 'a.com'), ...urls(2, 'b.com')]);
    const r = await frontier.leaseMany('link', 10, { now: T0, ip: '10.0.0.1', exclude: ['a.com'] });
    expect(r.leases.map((l) => l.domain)).toEqual(['b.com', 'b.com']);
  });
});

describe('ackMany', () => {
  test('acks leases of two spider types in one script call each, as single acks would, the crawl complete once', async () => {
    const frontier = testFrontier(redis);
    await queue(frontier, urls(6));
    const seed = seedCrawl('app', 'w1', { spiderid: 'wandering' });
    expect(
      await frontier.enqueue('wandering', [{ crawl: seed, request: queueRequest('http://w.com/1', 5) }], T0),
    ).toEqual(['queued']);
    const links = await leaseAll(frontier, 'link', T0);
    const wander = await leaseAll(frontier, 'wandering', T0);
    expect([links.length, wander.length]).toEqual([6, 1]);
    const items = [
      ...links.slice(0, 5).map((lease) => ({ lease, outcome: 'done' as const })),
      { lease: wander[0] as Lease, outcome: 'fail' as const },
      { lease: links[5] as Lease, outcome: 'done' as const },
      { lease: links[0] as Lease, outcome: 'done' as const }, // acked already, earlier in this very batch
    ];
    let results: Awaited<ReturnType<Frontier['ackMany']>> = [];
    const calls = await recordScriptCalls(redis, async () => {
      results = await frontier.ackMany(items, T0 + 1);
    });
    expect(calls.map((c) => c.script).sort()).toEqual(['ack', 'ack']);
    expect(results.map((r) => [r.acked, r.complete])).toEqual([
      [true, false],
      [true, false],
      [true, false],
      [true, false],
      [true, false],
      [true, true],
      [true, true],
      [false, false],
    ]);
    expect(results[6]).toMatchObject({ queued: 0, leased: 0, done: 6, failed: 0 });
    expect(results[5]).toMatchObject({ done: 0, failed: 1 });
    expect(await counts(frontier)).toEqual({ queued: 0, leased: 0, done: 6, failed: 0 });
  });
});

describe('extending leases', () => {
  test('an extended lease outlives its first deadline; once its new one passes, reclaim takes it back', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    await queue(frontier, urls(3));
    const leases = await leaseAll(frontier, 'link', T0);
    expect(leases).toHaveLength(3);
    const [kept, acked, lapsed] = leases as [Lease, Lease, Lease];
    await frontier.ack(acked, 'done', T0 + 1000);
    // Two thirds into the lease: the first is extended; the acked one is not leased any more and stays done.
    expect(await frontier.extend([kept, acked], T0 + 20_000)).toBe(1);
    // Past the first deadline: only the lease nobody extended goes back.
    expect(await frontier.reclaim('link', T0 + LEASE_MS + 1)).toBe(1);
    expect(await counts(frontier)).toEqual({ queued: 1, leased: 1, done: 1, failed: 0 });
    const again = await leaseAll(frontier, 'link', T0 + LEASE_MS + 2);
    expect(again.map((l) => l.url)).toEqual([lapsed.url]);
    // Past the extended deadline (T0 + 20 s + LEASE_MS), the kept lease is reclaimed too.
    expect(await frontier.reclaim('link', T0 + 20_000 + LEASE_MS - 1)).toBe(0);
    expect(await frontier.reclaim('link', T0 + 20_000 + LEASE_MS + 1)).toBe(1);
  });

  test('extending a released or reclaimed lease does not bring it back', async () => {
    const frontier = testFrontier(redis, { leaseMs: LEASE_MS });
    await queue(frontier, urls(2));
    const [released, reclaimed] = (await leaseAll(frontier, 'link', T0)) as [Lease, Lease];
    await frontier.release([released], T0 + 1);
    await frontier.extend([reclaimed], T0 + 2);
    expect(await frontier.reclaim('link', T0 + LEASE_MS + 10)).toBe(1);
    expect(await frontier.extend([released, reclaimed], T0 + LEASE_MS + 20)).toBe(0);
    expect(await counts(frontier)).toEqual({ queued: 2, leased: 0, done: 0, failed: 0 });
  });
});
