/**
 * `frontier reshard` (lib/redis/reshard.ts) on the cluster-mode Redis: a frontier with several crawls over many
 * domains, some pages acked, retries delayed, a stopped crawl, a completed one, a page cap, domain config, a blacklist
 * and a Crawl-delay, moved from 1 partition to 6 and then to 3, and moves stopped half-way and run again. After each,
 * leasing and acking everything gives exactly the requests that were queued, once each and in their FIFO order, every
 * URL seen before is still a duplicate, `info` answers as before, and each crawl completes once with exact totals.
 */
import { describe, expect, test } from 'vitest';
import { failureCause } from '../../lib/errors.ts';
import type { AckResult, CrawlInfo, CrawlRef, FrontierItem, Lease } from '../../lib/frontier-model.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import type { FrontierOptions } from '../../lib/redis/frontier-options.ts';
import {
  crawlKey,
  dupefilterKey,
  partitionKeyList,
  partitionKeys,
  partitionTag,
  reshardKey,
  spiderPartitions,
  stateMarkerKey,
} from '../../lib/redis/keys.ts';
import {
  type ReshardOptions,
  type ReshardProgress,
  type ReshardStep,
  reshardFrontier,
} from '../../lib/redis/reshard.ts';
import { ReshardInterruptedError, ReshardRefusedError } from '../../lib/redis/reshard-errors.ts';
import {
  childCrawl,
  frontierTestRedis,
  queueRequest,
  seedCrawl,
  T0,
  TEST_FRONTIER_OPTIONS,
  testFrontier,
} from '../helpers/frontier.ts';
import { recordScriptCalls } from '../helpers/scripts.ts';
import { uniqueName } from '../helpers/services.ts';

const redis = frontierTestRedis();

const SPIDER = 'link';
/** The test frontier's options (test/helpers/frontier.ts), which the move is given too. */
const BASE = TEST_FRONTIER_OPTIONS;
/** How long the retries made before the move wait. */
const RETRY_MS = 300_000;

/** A request the frontier should hold: its crawl, URL and what it carries. */
interface Expected {
  crawlid: string;
  url: string;
  priority: number;
  depth: number;
  retries: number;
  /** Its place in the order it was queued (FIFO among equal priority in a domain). */
  order: number;
}

/** A frontier in the state the tests move, and what it should hold. */
interface Scenario {
  prefix: string;
  crawls: Record<'a' | 'b' | 'c' | 'd' | 'e', CrawlRef> & { late?: CrawlRef };
  /** Requests queued or delayed, by `<crawlid> <url>`. */
  queued: Map<string, Expected>;
  /** Every URL each crawl was sent and queued, by crawlid. */
  seen: Map<string, string[]>;
  /** Info of the live crawls before the move (without `waits`). */
  infos: Map<string, CrawlInfo>;
  backlog: Record<string, number>;
  /** The domain whose requests all stay queued: blacklisted. */
  blacklisted: string;
}

const id = (crawlid: string, url: string) => `${crawlid} ${url}`;

function options(prefix: string, partitions: number): FrontierOptions {
  return { ...BASE, prefix, partitions };
}

/** Info without `waits` (which domains are parked depends on the partitions, not on what is queued). */
function plain(info: CrawlInfo | undefined): CrawlInfo | undefined {
  if (info === undefined) return undefined;
  const { waits: _, ...rest } = info;
  return rest;
}

/**
 * At N = 1: crawl a over 40 domains (5 URLs each, of three priorities, some on a www. or another host), b over 30,
 * c (stopped after some pages), d with a page cap of 4 on one domain, e complete; 60 leased: 40 acked (5 failed),
 * 10 retried (delayed), 5 released, 5 acked later; site3.com throttled, site5.com blacklisted, site7.com with a
 * Crawl-delay.
 */
async function buildScenario(): Promise<Scenario> {
  const prefix = uniqueName();
  const f = testFrontier(redis, options(prefix, 1));
  const crawls = {
    a: seedCrawl('app', 'a'),
    b: seedCrawl('app', 'b', { priority: 5 }),
    c: seedCrawl('app', 'c'),
    d: seedCrawl('other', 'd', { domain_max_pages: 4 }),
    e: seedCrawl('app', 'e'),
  };
  const queued = new Map<string, Expected>();
  const seen = new Map<string, string[]>();
  let order = 0;
  const send = async (key: keyof typeof crawls, urls: { url: string; priority: number; depth: number }[]) => {
    const crawl = crawls[key];
    const items: FrontierItem[] = urls.map(({ url, priority, depth }, i) => ({
      crawl: i === 0 ? crawl : childCrawl(crawl),
      request: queueRequest(url, priority, depth),
    }));
    const outcomes = await f.enqueue(SPIDER, items, T0);
    outcomes.forEach((o, i) => {
      const { url, priority, depth } = urls[i] as (typeof urls)[number];
      if (o !== 'queued') return;
      queued.set(id(crawl.crawlid, url), { crawlid: crawl.crawlid, url, priority, depth, retries: 0, order: order++ });
      seen.set(crawl.crawlid, [...(seen.get(crawl.crawlid) ?? []), url]);
    });
    return outcomes;
  };
  const hosts = (d: number, i: number) =>
    i === 1 ? `www.site${d}.com` : i === 3 ? `blog.site${d}.com` : `site${d}.com`;
  await send(
    'a',
    Array.from({ length: 200 }, (_, k) => {
      const d = k % 40;
      const i = Math.floor(k / 40);
      return { url: `${i === 4 ? 'https' : 'http'}://${hosts(d, i)}/a/${i}?q=${k}`, priority: (i % 3) - 1, depth: i };
    }),
  );
  await send(
    'b',
    Array.from({ length: 90 }, (_, k) => ({ url: `http://site${k % 30}.com/b/${k}`, priority: 5, depth: 1 })),
  );
  await send(
    'c',
    Array.from({ length: 20 }, (_, k) => ({ url: `http://site${k % 10}.com/c/${k}`, priority: 0, depth: 0 })),
  );
  const capped = await send(
    'd',
    Array.from({ length: 6 }, (_, k) => ({ url: `http://capped.org/d/${k}`, priority: 0, depth: 0 })),
  );
  expect(capped.filter((o) => o === 'capped')).toHaveLength(2);
  await send('e', [{ url: 'http://done.net/e', priority: 50, depth: 0 }]);

  const forget = (lease: Lease) => queued.delete(id(lease.crawl.crawlid, lease.url));
  const { leases } = await f.leaseMany(SPIDER, 60, { now: T0 });
  expect(leases).toHaveLength(60);
  const [acked, failed, retried, released, late] = [0, 35, 40, 50, 55].map((at, i, all) =>
    leases.slice(at, all[i + 1] ?? 60),
  ) as [Lease[], Lease[], Lease[], Lease[], Lease[]];
  for (const l of acked) await f.ack(l, 'done', T0 + 1);
  for (const l of failed) await f.ack(l, 'fail', T0 + 1);
  for (const l of retried) {
    expect((await f.retry(l, RETRY_MS, T0 + 1)).retried).toBe(true);
    const e = queued.get(id(l.crawl.crawlid, l.url)) as Expected;
    queued.set(id(l.crawl.crawlid, l.url), { ...e, priority: e.priority - 10, retries: 1 });
  }
  await f.release(released, T0 + 1);
  for (const l of late) await f.ack(l, 'done', T0 + 2);
  for (const l of [...acked, ...failed, ...late]) forget(l);
  // e's only page was the best of all (priority 50): acked above, so e is complete.
  expect(queued.has(id('e', 'http://done.net/e'))).toBe(false);

  expect((await f.stop(SPIDER, 'app', 'c', T0 + 3)).purged).toBeGreaterThan(0);
  for (const key of [...queued.keys()]) if (key.startsWith('c ')) queued.delete(key);
  await f.configureDomain('domain-update', 'site3.com', { hits: 2, window: 1 }, T0 + 3);
  await f.configureDomain('blacklist-update', 'site5.com', {}, T0 + 3);
  await f.setCrawlDelay(f.partitionFor(SPIDER, 'site7.com'), 'site7.com', 1500);

  const infos = new Map<string, CrawlInfo>();
  for (const c of Object.values(crawls)) {
    const info = plain(await f.crawlInfo(SPIDER, c.appid, c.crawlid, T0 + 4));
    if (info) infos.set(c.crawlid, info);
  }
  expect([...infos.keys()].sort()).toEqual(['a', 'b', 'd', 'e']);
  return { prefix, crawls, queued, seen, infos, backlog: await f.backlog(SPIDER, T0 + 4), blacklisted: 'site5.com' };
}

/** A move of the scenario's frontier at T0 + 5 s. */
function move(s: Scenario, from: number, to: number, extra: Partial<ReshardOptions> = {}) {
  return reshardFrontier(redis, options(s.prefix, from), { from, to, now: T0 + 5_000, ...extra });
}

/** A hook that stops the move (as a crash would) at the `nth` report of `step`. */
function dieAt(step: ReshardStep, nth: number): Pick<ReshardOptions, 'onProgress'> {
  let seen = 0;
  return {
    onProgress: (p) => {
      if (p.step === step && ++seen === nth) throw new Error(`killed at ${step} #${nth}`);
    },
  };
}

/** Every key of the layout of `count` partitions that the scenario's crawls and requests use, that exists. */
async function layoutKeys(s: Scenario, count: number): Promise<number> {
  let n = 0;
  for (const p of spiderPartitions(s.prefix, SPIDER, true, count)) {
    const dupes = Object.values(s.crawls).map((c) => dupefilterKey(p, crawlKey(c.appid, c.crawlid, SPIDER)));
    n += await redis.exists(...partitionKeyList(p), stateMarkerKey(partitionTag(p)), ...dupes);
  }
  return n;
}

/** What the frontier at `count` partitions must answer right after a move: info, backlog, state, duplicates. */
async function checkMoved(s: Scenario, count: number): Promise<Frontier> {
  const f = testFrontier(redis, options(s.prefix, count));
  for (const c of Object.values(s.crawls))
    expect(plain(await f.crawlInfo(SPIDER, c.appid, c.crawlid, T0 + 6_000)), c.crawlid).toEqual(s.infos.get(c.crawlid));
  expect(await f.backlog(SPIDER, T0 + 6_000)).toEqual(s.backlog);
  expect(await redis.exists(reshardKey(s.prefix))).toBe(0);

  const p3 = partitionKeys(f.partitionFor(SPIDER, 'site3.com'));
  expect(await redis.hget(p3.domainConfig, 'site3.com')).toBe('2,1,1');
  expect(await redis.sismember(partitionKeys(f.partitionFor(SPIDER, s.blacklisted)).blacklist, s.blacklisted)).toBe(1);
  expect(await redis.hget(partitionKeys(f.partitionFor(SPIDER, 'site7.com')).throttle, 'site7.com\0cd')).toBe('1500');

  // Every URL a crawl was sent before is a duplicate, as a child and as a seed; the stopped crawl stays stopped.
  for (const c of Object.values(s.crawls)) {
    const urls = s.seen.get(c.crawlid) ?? [];
    const again = await f.enqueue(
      SPIDER,
      urls.map((url, i) => ({ crawl: i === 0 ? c : childCrawl(c), request: queueRequest(url) })),
      T0 + 6_000,
    );
    expect(new Set(again), c.crawlid).toEqual(new Set([c.crawlid === 'c' ? 'stopped' : 'duplicate']));
  }
  // The page cap counts the pages queued before the move.
  expect(
    await f.enqueue(SPIDER, [{ crawl: childCrawl(s.crawls.d), request: queueRequest('http://capped.org/new') }]),
  ).toEqual(['capped']);
  return f;
}

/** Leases and acks everything (the blacklist lifted first), advancing time as throttles and retry delays say. */
async function drain(f: Frontier, s: Scenario): Promise<{ leases: Lease[]; acks: AckResult[] }> {
  await f.configureDomain('blacklist-remove', s.blacklisted, {}, T0 + 7_000);
  const leases: Lease[] = [];
  const acks: AckResult[] = [];
  let now = T0 + 7_000;
  for (let round = 0; round < 2_000; round++) {
    const r = await f.leaseMany(SPIDER, 100, { now });
    for (const lease of r.leases) {
      leases.push(lease);
      acks.push(await f.ack(lease, 'done', now));
    }
    if (r.leases.length > 0) continue;
    if (r.nextDueMs === null) break;
    now = Math.max(now + 1, r.nextDueMs);
  }
  return { leases, acks };
}

/** Drains the frontier and checks it gave exactly the expected requests, once each, in order, and completions. */
async function checkDrained(f: Frontier, s: Scenario): Promise<void> {
  const { leases, acks } = await drain(f, s);
  const got = leases.map((l) => ({
    crawlid: l.crawl.crawlid,
    url: l.url,
    priority: l.priority,
    depth: l.depth,
    retries: l.retries,
  }));
  const want = [...s.queued.values()].map(({ order: _, ...e }) => e);
  const byId = (a: { crawlid: string; url: string }, b: { crawlid: string; url: string }) =>
    id(a.crawlid, a.url) < id(b.crawlid, b.url) ? -1 : 1;
  expect(got.sort(byId)).toEqual(want.sort(byId));

  // FIFO within a crawl, domain and priority: requests never retried keep the order they were queued in.
  const groups = new Map<string, number[]>();
  for (const l of leases) {
    const e = s.queued.get(id(l.crawl.crawlid, l.url)) as Expected;
    if (e.retries > 0) continue;
    const g = `${l.crawl.crawlid} ${l.domain} ${l.priority}`;
    groups.set(g, [...(groups.get(g) ?? []), e.order]);
  }
  for (const [g, orders] of groups) expect(orders, g).toEqual([...orders].sort((x, y) => x - y));

  // Each crawl with work completes once, with its totals from before the move plus what was acked now.
  for (const [crawlid, before] of s.infos) {
    const mine = acks.filter((_, i) => (leases[i] as Lease).crawl.crawlid === crawlid);
    const complete = mine.filter((a) => a.complete);
    if (before.queued === 0) {
      expect(mine, crawlid).toEqual([]);
      continue;
    }
    expect(complete, crawlid).toHaveLength(1);
    expect(complete[0], crawlid).toMatchObject({
      queued: 0,
      leased: 0,
      done: before.done + before.queued,
      failed: before.failed,
    });
    const info = await f.crawlInfo(SPIDER, before.settings.appid, crawlid, T0 + 10_000_000);
    expect(info, crawlid).toMatchObject({
      queued: 0,
      leased: 0,
      done: before.done + before.queued,
      failed: before.failed,
    });
  }

  // A dupefilter TTL after the crawls completed, the sweep drops their records in every partition, those of the
  // partitions where a crawl never had work included.
  await f.sweepFinished(SPIDER, T0 + 100_000_000);
  for (const p of f.partitionsOf(SPIDER)) expect(await redis.hlen(partitionKeys(p).crawlSettings)).toBe(0);
}

describe('frontier reshard', () => {
  test('moves a frontier from 1 partition to 6, then to 3: every request once, in order, crawls exact', async () => {
    const s = await buildScenario();
    const queuedBefore = s.queued.size;

    const up = await move(s, 1, 6);
    expect(up).toMatchObject({ from: 1, to: 6, delayed: 10, present: 0, crawls: 4, resumed: false });
    expect(up.queued + up.delayed).toBe(queuedBefore);
    // The stopped crawl's requests are dropped, not moved.
    expect(up.dropped).toBeGreaterThan(0);
    expect(up.fingerprints).toBe([...s.seen.values()].flat().length - (s.seen.get('c')?.length ?? 0));
    expect(up).toMatchObject({ domainConfigs: 1, blacklisted: 1, stopped: 1 });
    expect(await layoutKeys(s, 1)).toBe(0);
    await checkMoved(s, 6);

    const down = await move(s, 6, 3);
    expect(down).toMatchObject({ from: 6, to: 3, delayed: 10, dropped: 0, present: 0, crawls: 4 });
    expect(down.queued + down.delayed).toBe(queuedBefore);
    expect(await layoutKeys(s, 6)).toBe(0);
    const f = await checkMoved(s, 3);
    await checkDrained(f, s);
  });

  test('a process with another partition count is refused the frontier before, during and after a move', async () => {
    const s = await buildScenario();
    const refusal = (has: number, configured: number) =>
      `the frontier under prefix "${s.prefix}" has ${has} partitions per scope, but FRONTIER_PARTITIONS is ` +
      `${configured}: set FRONTIER_PARTITIONS=${has}, or move the frontier with \`crawl-cluster frontier reshard --to ${configured}\``;
    const early = testFrontier(redis, options(s.prefix, 6)).crawlInfo(SPIDER, 'app', 'a', T0);
    await expect(early).rejects.toThrow(refusal(1, 6));
    await expect(early.catch((e: unknown) => failureCause(e))).resolves.toBe('infrastructure');
    // A move that names the wrong count now is refused before it changes anything.
    await expect(move(s, 6, 3)).rejects.toThrow(
      'the frontier has 1 partitions per scope, not 6: move it with `--from 1` (nothing was changed)',
    );

    let during: unknown;
    await move(s, 1, 6, {
      onProgress: async () => {
        during ??= await testFrontier(redis, options(s.prefix, 6))
          .enqueue(SPIDER, [{ crawl: seedCrawl('app', 'mid'), request: queueRequest('http://mid.test/') }], T0)
          .catch((e: unknown) => e);
      },
    });
    expect(String(during)).toContain(
      'a frontier move from 1 to 6 partitions (prefix "' +
        s.prefix +
        '") is unfinished: finish it with `crawl-cluster frontier reshard --from 1 --to 6`, then start with ' +
        'FRONTIER_PARTITIONS=6',
    );

    await expect(testFrontier(redis, options(s.prefix, 1)).crawlInfo(SPIDER, 'app', 'a', T0)).rejects.toThrow(
      refusal(6, 1),
    );
    await checkMoved(s, 6);
  });

  test('every script a move runs gets keys that all hash to one slot', async () => {
    const s = await buildScenario();
    const calls = await recordScriptCalls(redis, () => move(s, 1, 6, { batch: 50 }));
    expect(new Set(calls.map((c) => c.script))).toEqual(
      new Set(['reclaim', 'reshard-register', 'reshard-put', 'reshard-take', 'dupefilter-add']),
    );
    for (const { script, keys } of calls) {
      const slots = new Set<number>();
      for (const key of keys) slots.add(Number(await redis.cluster('KEYSLOT', key)));
      expect(slots.size, `${script}: ${keys.join(' ')}`).toBe(1);
    }
  });

  test.each<[ReshardStep, number]>([
    ['put', 3],
    ['take', 5],
    ['crawls', 1],
    ['dupefilters', 1],
    ['delete', 1],
  ])('a move stopped at %s #%i and run again loses nothing and queues nothing twice', async (step, nth) => {
    const s = await buildScenario();
    await expect(move(s, 1, 6, { batch: 16, ...dieAt(step, nth) })).rejects.toThrow(`killed at ${step}`);
    // Another move is refused while this one is unfinished.
    await expect(move(s, 1, 3)).rejects.toThrow(
      'a move from 1 to 6 partitions is unfinished: finish it first with `crawl-cluster frontier reshard --from 1 --to 6`',
    );

    const again = await move(s, 1, 6, { batch: 16 });
    expect(again.resumed).toBe(true);
    // Killed between putting a page and taking it: the second run finds that page's requests moved already.
    if (step === 'put') expect(again.present).toBeGreaterThan(0);
    else expect(again.present).toBe(0);
    expect(await layoutKeys(s, 1)).toBe(0);
    const f = await checkMoved(s, 6);
    await checkDrained(f, s);
  });

  test('a move from 6 partitions to 3 stopped half-way and run again loses nothing and queues nothing twice', async () => {
    const s = await buildScenario();
    await move(s, 1, 6);
    await expect(move(s, 6, 3, { batch: 8, ...dieAt('put', 7) })).rejects.toThrow('killed at put');
    await expect(move(s, 6, 3, { batch: 8, ...dieAt('dupefilters', 2) })).rejects.toThrow('killed at dupefilters');

    const again = await move(s, 6, 3, { batch: 8 });
    expect(again).toMatchObject({ resumed: true, dropped: 0 });
    expect(await layoutKeys(s, 6)).toBe(0);
    const f = await checkMoved(s, 3);
    await checkDrained(f, s);
  });

  test.each<[ReshardStep, number]>([
    ['take', 2],
    ['dupefilters', 1],
  ])(
    'a monitor that queues a new crawl into the old partitions at %s #%i stops the move; run again, it moves that crawl too',
    async (step, nth) => {
      const s = await buildScenario();
      const f1 = testFrontier(redis, options(s.prefix, 1));
      // A process started before the move: it read the partition count then, and reads it again only a minute later.
      await f1.backlog(SPIDER, T0);
      const late = seedCrawl('app', 'late');
      const urls = ['http://aaa-late.com/1', 'http://site2.com/late', 'http://zzz-late.com/3'];
      let seen = 0;
      const writer = async (p: ReshardProgress) => {
        if (p.step !== step || ++seen !== nth) return;
        // The monitor's enqueue runs between two steps of the move, as a process that was not stopped would.
        const items = urls.map((url, i) => ({ crawl: i === 0 ? late : childCrawl(late), request: queueRequest(url) }));
        expect(new Set(await f1.enqueue(SPIDER, items, T0 + 5_000))).toEqual(new Set(['queued']));
      };
      const stopped = move(s, 1, 6, { batch: 16, onProgress: writer });
      await expect(stopped).rejects.toBeInstanceOf(ReshardInterruptedError);
      await expect(stopped).rejects.toThrow(
        'something still writes to the frontier (a monitor, a crawler or a URL Frontier server). Nothing is lost: stop ' +
          'every crawler, monitor and URL Frontier server, then run this again to finish the move',
      );
      expect(await redis.exists(reshardKey(s.prefix))).toBe(1);
      urls.forEach((url, order) => {
        s.queued.set(id('late', url), {
          crawlid: 'late',
          url,
          priority: 1,
          depth: 0,
          retries: 0,
          order: 10_000 + order,
        });
      });
      s.crawls.late = late;
      s.seen.set('late', urls);
      s.infos.set('late', plain(await f1.crawlInfo(SPIDER, 'app', 'late', T0 + 5_000)) as CrawlInfo);
      for (const domain of ['aaa-late.com', 'site2.com', 'zzz-late.com'])
        s.backlog[domain] = (s.backlog[domain] ?? 0) + 1;

      await move(s, 1, 6, { batch: 16 });
      expect(await layoutKeys(s, 1)).toBe(0);
      const f = await checkMoved(s, 6);
      await checkDrained(f, s);
    },
  );

  test('refuses while a request is leased, and moves once the lease has expired', async () => {
    const s = await buildScenario();
    const f = testFrontier(redis, options(s.prefix, 1));
    const { leases } = await f.leaseMany(SPIDER, 1, { now: T0 + 4_000 });
    expect(leases).toHaveLength(1);

    const refused = move(s, 1, 6);
    await expect(refused).rejects.toBeInstanceOf(ReshardRefusedError);
    await expect(refused).rejects.toThrow(
      '1 request is leased: crawlers are at work (or stopped less than LEASE_TIMEOUT = 60 s ago). Stop the crawlers ' +
        'and the monitors first, or wait LEASE_TIMEOUT for their leases to expire, then run this again (nothing was moved)',
    );
    expect(await redis.exists(reshardKey(s.prefix))).toBe(0);
    expect(await layoutKeys(s, 6)).toBe(0);

    // A lease past its deadline is returned to its queue (one more retry), as the monitors would, then moved.
    const moved = await reshardFrontier(redis, options(s.prefix, 1), { from: 1, to: 6, now: T0 + 70_000 });
    expect(moved.reclaimed).toBe(1);
    const lease = leases[0] as Lease;
    const e = s.queued.get(id(lease.crawl.crawlid, lease.url)) as Expected;
    s.queued.set(id(lease.crawl.crawlid, lease.url), { ...e, retries: e.retries + 1 });
    await checkDrained(testFrontier(redis, options(s.prefix, 6)), s);
  });

  test('copies a dupefilter of 20,000 fingerprints whole into every new partition, its buckets split as enqueue splits them', async () => {
    const prefix = uniqueName();
    const f1 = testFrontier(redis, options(prefix, 1));
    const crawl = seedCrawl('app', 'big');
    const urls = Array.from({ length: 20_000 }, (_, k) => `http://big${k % 50}.com/${k}`);
    for (let from = 0; from < urls.length; from += 2_000) {
      const items = urls
        .slice(from, from + 2_000)
        .map((url, i) => ({ crawl: from + i === 0 ? crawl : childCrawl(crawl), request: queueRequest(url) }));
      expect(new Set(await f1.enqueue(SPIDER, items, T0))).toEqual(new Set(['queued']));
    }
    const ck = crawlKey('app', 'big', SPIDER);
    const [before] = spiderPartitions(prefix, SPIDER, true, 1).map((p) => dupefilterKey(p, ck));
    // 20,000 fingerprints: past 256 buckets of 32, so the set has split (`<fingerprints>:<buckets>`).
    expect(await redis.hget(before as string, '')).toBe('20000:625');

    const summary = await reshardFrontier(redis, options(prefix, 1), { from: 1, to: 3, now: T0 + 1 });
    expect(summary).toMatchObject({ queued: 20_000, fingerprints: 20_000 });
    for (const p of spiderPartitions(prefix, SPIDER, true, 3)) {
      const key = dupefilterKey(p, ck);
      expect(await redis.hget(key, '')).toBe('20000:625');
      expect(await redis.pttl(key)).toBeGreaterThan(590_000);
    }
    // Each of the 20,000 is a duplicate in whichever partition its domain now is: none is queued again.
    const f3 = testFrontier(redis, options(prefix, 3));
    for (let from = 0; from < urls.length; from += 2_000) {
      const items = urls
        .slice(from, from + 2_000)
        .map((url) => ({ crawl: childCrawl(crawl), request: queueRequest(url) }));
      expect(new Set(await f3.enqueue(SPIDER, items, T0 + 2))).toEqual(new Set(['duplicate']));
    }
  });

  test('moves spider types that share their throttle scope (SCHEDULER_TYPE_ENABLED=false) with their own queues', async () => {
    const prefix = uniqueName();
    const shared = { ...BASE, typeEnabled: false, prefix };
    const f1 = testFrontier(redis, { ...shared, partitions: 1 });
    const urls = (spider: string) => Array.from({ length: 30 }, (_, k) => `http://s${k % 12}.com/${spider}/${k}`);
    for (const spider of ['link', 'wander']) {
      const crawl = seedCrawl('app', `x-${spider}`, { spiderid: spider });
      const items = urls(spider).map((url, i) => ({
        crawl: i === 0 ? crawl : childCrawl(crawl),
        request: queueRequest(url),
      }));
      expect(new Set(await f1.enqueue(spider, items, T0))).toEqual(new Set(['queued']));
    }

    const summary = await reshardFrontier(redis, { ...shared, partitions: 1 }, { from: 1, to: 4, now: T0 + 1 });
    expect(summary).toMatchObject({ spiders: ['link', 'wander'], queued: 60, crawls: 2 });

    const f4 = testFrontier(redis, { ...shared, partitions: 4 });
    for (const spider of ['link', 'wander']) {
      const leased: string[] = [];
      for (let r = await f4.leaseMany(spider, 100, { now: T0 + 2 }); r.leases.length > 0; ) {
        for (const l of r.leases) {
          leased.push(l.url);
          await f4.ack(l, 'done', T0 + 2);
        }
        r = await f4.leaseMany(spider, 100, { now: T0 + 2 });
      }
      expect(leased.sort()).toEqual(urls(spider).sort());
      expect(await f4.crawlInfo(spider, 'app', `x-${spider}`, T0 + 3)).toMatchObject({ queued: 0, done: 30 });
    }
  });
});
