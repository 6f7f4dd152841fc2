/**
 * The contract between the unit tier's FakeFrontier (test/helpers/fake-frontier.ts) and the real frontier
 * (lib/redis/frontier.ts over its Lua scripts): one list of scenarios, each run against both, each asserting
 * the same observable results through the monitors' port (lib/ports.ts `FrontierApi`). A difference means the fake
 * no longer says what the Lua says, and the unit tests built on it test something that does not exist.
 *
 * The real frontier runs on the cluster-mode Redis, under a random key prefix per test, as the other
 * frontier-*.test.ts files do. What a scenario needs beyond the port, crawling a crawl's queued requests, is a
 * driver: the fake's `finishCrawl`, the real one's lease and ack.
 *
 * Left out: `reclaim` and `sweepFinished` answer what a test planted in the fake (`expireLeases`, `finished`), so
 * only their "nothing to do" answer is compared; `configureDomain` is recorded, not applied, by the fake, so only
 * its lack of effect on enqueue outcomes and counts is compared; `leased` in info is always 0 in the fake (it does
 * not model leases); the order of `dueCrawls` is not compared (the real one lists by expiry time, the fake by
 * registration), nor what its `limit` cuts off.
 */
import { describe, expect, test } from 'vitest';
import type { CrawlSettings, FrontierItem, Lease } from '../../lib/frontier-model.ts';
import type { FrontierApi } from '../../lib/ports.ts';
import type { Frontier } from '../../lib/redis/frontier.ts';
import { child, FakeFrontier, seed } from '../helpers/fake-frontier.ts';
import { frontierTestRedis, T0, testFrontier } from '../helpers/frontier.ts';

const redis = frontierTestRedis();

const T0S = T0 / 1000;

/** How long a stopped crawl refuses requests, in both frontiers. */
const STOP_TTL_MS = 60_000;

/**
 * A spider type's queued requests per domain, from `queueSummary` (every domain: these tests queue few), after
 * checking that its kept total and domain count agree with the domains it lists.
 */
async function backlogOf(frontier: FrontierApi, spider: string): Promise<Record<string, number>> {
  const summary = await frontier.queueSummary(spider, 100);
  const out = Object.fromEntries(summary.busiest.map((d) => [d.domain, d.backlog]));
  expect({ queued: summary.queued, domains: summary.domains }).toEqual({
    queued: Object.values(out).reduce((s, n) => s + n, 0),
    domains: Object.keys(out).length,
  });
  return out;
}

/** A frontier under test, and what a scenario does to it beyond the port. */
interface Subject {
  frontier: FrontierApi;
  /** Crawls every queued request of one crawl (each done), as the fleet would; other crawls' stay queued. */
  finish(spider: string, appid: string, crawlid: string, now: number): Promise<void>;
}

function fakeSubject(): Subject {
  const frontier = new FakeFrontier({ stopTtlMs: STOP_TTL_MS });
  return {
    frontier,
    async finish(spider, appid, crawlid) {
      frontier.finishCrawl(spider, appid, crawlid);
    },
  };
}

function redisSubject(partitions = 1): Subject {
  const frontier = testFrontier(redis, { stopTtlMs: STOP_TTL_MS, partitions });
  return { frontier, finish: (spider, appid, crawlid, now) => leaseAndAck(frontier, spider, appid, crawlid, now) };
}

/** Leases everything due, acks the crawl's leases as done and releases the others (they keep their place). */
async function leaseAndAck(frontier: Frontier, spider: string, appid: string, crawlid: string, now: number) {
  const others: Lease[] = [];
  for (;;) {
    const { leases } = await frontier.leaseMany(spider, 100, { now });
    if (leases.length === 0) break;
    const mine = leases.filter((l) => l.crawl.appid === appid && l.crawl.crawlid === crawlid);
    others.push(...leases.filter((l) => !mine.includes(l)));
    if (mine.length > 0)
      await frontier.ackMany(
        mine.map((lease) => ({ lease, outcome: 'done' as const })),
        now,
      );
  }
  if (others.length > 0) await frontier.release(others, now);
}

/** A crawl's settings as a seed registers them. */
function settingsOf(item: FrontierItem): CrawlSettings {
  return item.crawl.settings as CrawlSettings;
}

/** Crawlids of settings, sorted. */
function crawlids(settings: CrawlSettings[]): string[] {
  return settings.map((s) => s.crawlid).sort();
}

const A = { appid: 'app', crawlid: 'a' };
const B = { appid: 'app', crawlid: 'b' };

/** The scenarios: each takes a fresh subject and asserts what both frontiers must answer. */
const SCENARIOS: [string, (s: Subject) => Promise<void>][] = [
  [
    'a request is queued once per crawl (canonical fingerprint), and again in another crawl, app or spider type',
    async ({ frontier }) => {
      const a = seed({ ...A, url: 'http://example.com/p?x=1&y=2' });
      expect(
        await frontier.enqueue(
          'link',
          [
            a,
            child(A, 'http://EXAMPLE.com:80/p?y=2&x=1#top', 5),
            child(A, 'http://example.com/q', 5),
            child(A, 'http://example.com/q', 7),
            seed({ ...B, url: 'http://example.com/p?x=1&y=2' }),
            seed({ appid: 'other', crawlid: 'a', url: 'http://example.com/p?x=1&y=2' }),
          ],
          T0,
        ),
      ).toEqual(['queued', 'duplicate', 'queued', 'duplicate', 'queued', 'queued']);
      // A redelivered batch changes nothing.
      expect(await frontier.enqueue('link', [a, child(A, 'http://example.com/q', 5)], T0 + 1)).toEqual([
        'duplicate',
        'duplicate',
      ]);
      expect(
        await frontier.enqueue('wandering', [seed({ ...A, spiderid: 'wandering', url: 'http://example.com/q' })], T0),
      ).toEqual(['queued']);
      expect((await frontier.crawlInfo('link', 'app', 'a', T0 + 1))?.queued).toBe(2);
    },
  ],
  [
    'stop purges the queued requests, returns the settings, and refuses the crawl until the stop TTL has passed',
    async ({ frontier }) => {
      const a = seed({ ...A, url: 'http://x.com/1', expires: T0S + 3600 });
      await frontier.enqueue(
        'link',
        [a, child(A, 'http://x.com/2', 1), child(A, 'http://y.com/1', 1), seed({ ...B, url: 'http://x.com/1' })],
        T0,
      );

      expect(await frontier.stop('link', 'app', 'a', T0 + 1)).toEqual({ purged: 3, settings: settingsOf(a) });

      expect(await frontier.enqueue('link', [a, child(A, 'http://z.com/1', 1)], T0 + 2)).toEqual([
        'stopped',
        'stopped',
      ]);
      expect(await frontier.crawlInfo('link', 'app', 'a', T0 + 2)).toBeUndefined();
      expect(Object.keys(await frontier.appInfo('link', 'app', T0 + 2))).toEqual(['b']);
      expect(await backlogOf(frontier, 'link')).toEqual({ 'x.com': 1 });
      expect(await frontier.dueCrawls('link', T0 + 3600_000)).toEqual([]);
      // Stopping again, or stopping a crawl never seen: nothing to purge, no settings; the crawl is refused all the same.
      expect(await frontier.stop('link', 'app', 'a', T0 + 3)).toEqual({ purged: 0, settings: undefined });
      expect(await frontier.stop('link', 'app', 'never', T0 + 3)).toEqual({ purged: 0, settings: undefined });
      expect(
        await frontier.enqueue('link', [seed({ appid: 'app', crawlid: 'never', url: 'http://x.com/1' })], T0 + 4),
      ).toEqual(['stopped']);

      // The last stop of `a` was at T0 + 3: refused until T0 + 3 + TTL, then unknown to children and started
      // afresh by a seed (a new dupefilter: what was seen before is queued again).
      const until = T0 + 3 + STOP_TTL_MS;
      expect(await frontier.enqueue('link', [a], until - 1)).toEqual(['stopped']);
      expect(await frontier.enqueue('link', [child(A, 'http://x.com/2', 1)], until)).toEqual(['unknown_crawl']);
      expect(await frontier.enqueue('link', [a, child(A, 'http://x.com/2', 1)], until)).toEqual(['queued', 'queued']);
      expect(await frontier.crawlInfo('link', 'app', 'a', until)).toMatchObject({ queued: 2, done: 0 });
    },
  ],
  [
    'an expired crawl refuses its requests (a seed too) and dueCrawls lists exactly the expired crawls',
    async ({ frontier, finish }) => {
      const soon = seed({ appid: 'app', crawlid: 'soon', url: 'http://x.com/1', expires: T0S + 10 });
      const later = seed({ appid: 'app', crawlid: 'later', url: 'http://x.com/2', expires: T0S + 100 });
      expect(
        await frontier.enqueue(
          'link',
          [
            soon,
            later,
            seed({ appid: 'app', crawlid: 'never', url: 'http://x.com/3' }),
            seed({ appid: 'app', crawlid: 'past', url: 'http://x.com/4', expires: T0S - 1 }),
            seed({ appid: 'other', crawlid: 'done', url: 'http://x.com/5', expires: T0S + 10 }),
          ],
          T0,
        ),
      ).toEqual(['queued', 'queued', 'queued', 'expired', 'queued']);
      await frontier.enqueue(
        'wandering',
        [seed({ appid: 'app', crawlid: 'w', spiderid: 'wandering', url: 'http://x.com/1', expires: T0S + 10 })],
        T0,
      );
      // A crawl whose every request was crawled is listed all the same: expiry is about the records.
      await finish('link', 'other', 'done', T0 + 1);
      expect(await frontier.dueCrawls('link', T0 + 9_999)).toEqual([]);
      expect(
        await frontier.enqueue('link', [child({ appid: 'app', crawlid: 'soon' }, 'http://y.com/1', 1)], T0 + 9_999),
      ).toEqual(['queued']);

      const at = T0 + 10_000;
      // The stored expiry holds: a seed cannot extend it.
      expect(
        await frontier.enqueue(
          'link',
          [
            child({ appid: 'app', crawlid: 'soon' }, 'http://y.com/2', 1),
            seed({ appid: 'app', crawlid: 'soon', url: 'http://y.com/3', expires: 0 }),
            child({ appid: 'app', crawlid: 'later' }, 'http://y.com/2', 1),
          ],
          at,
        ),
      ).toEqual(['expired', 'expired', 'queued']);
      expect(crawlids(await frontier.dueCrawls('link', at))).toEqual(['done', 'soon']);
      expect((await frontier.dueCrawls('link', at)).find((s) => s.crawlid === 'soon')).toEqual(settingsOf(soon));
      expect(crawlids(await frontier.dueCrawls('wandering', at))).toEqual(['w']);
      // An expired crawl keeps its records (and answers info) until it is stopped.
      expect(await frontier.crawlInfo('link', 'app', 'soon', at)).toMatchObject({ queued: 2 });
      expect(await frontier.stop('link', 'app', 'soon', at)).toEqual({ purged: 2, settings: settingsOf(soon) });
      expect(crawlids(await frontier.dueCrawls('link', T0 + 100_000))).toEqual(['done', 'later']);
    },
  ],
  [
    'a child whose crawl has no record is an unknown crawl; with its seed in the same batch it is queued',
    async ({ frontier }) => {
      expect(await frontier.enqueue('link', [child(A, 'http://x.com/1', 1)], T0)).toEqual(['unknown_crawl']);
      expect(await frontier.crawlInfo('link', 'app', 'a', T0)).toBeUndefined();
      expect(await frontier.appInfo('link', 'app', T0)).toEqual({});

      const b = seed({ ...B, url: 'http://x.com/1' });
      expect(
        await frontier.enqueue(
          'link',
          [child(B, 'http://x.com/2', 1), b, child({ appid: 'other', crawlid: 'b' }, 'http://x.com/3', 1)],
          T0,
        ),
      ).toEqual(['queued', 'queued', 'unknown_crawl']);
      expect(await frontier.crawlInfo('link', 'app', 'b', T0)).toMatchObject({ settings: settingsOf(b), queued: 2 });
      // Another spider type's crawl of the same ids is another crawl.
      expect(await frontier.enqueue('wandering', [child(B, 'http://x.com/2', 1)], T0)).toEqual(['unknown_crawl']);
    },
  ],
  [
    'domain_max_pages caps the requests accepted per domain, crawled ones included; duplicates are answered first',
    async ({ frontier, finish }) => {
      const c = seed({ ...A, url: 'http://x.com/1', domain_max_pages: 2 });
      expect(
        await frontier.enqueue(
          'link',
          [
            c,
            child(A, 'http://x.com/2', 1),
            child(A, 'http://x.com/3', 1),
            child(A, 'http://y.com/1', 1),
            child(A, 'http://x.com/1', 1),
            seed({ ...B, url: 'http://x.com/1' }),
            child(B, 'http://x.com/2', 1),
            child(B, 'http://x.com/3', 1),
          ],
          T0,
        ),
      ).toEqual(['queued', 'queued', 'capped', 'queued', 'duplicate', 'queued', 'queued', 'queued']);
      await finish('link', 'app', 'a', T0 + 1);
      expect(
        await frontier.enqueue(
          'link',
          [
            child(A, 'http://x.com/4', 1),
            child(A, 'http://y.com/2', 1),
            child(A, 'http://y.com/3', 1),
            // A later seed's cap does not replace the stored one.
            seed({ ...A, url: 'http://x.com/5', domain_max_pages: 10 }),
          ],
          T0 + 2,
        ),
      ).toEqual(['capped', 'queued', 'capped', 'capped']);
      expect(await frontier.crawlInfo('link', 'app', 'a', T0 + 2)).toEqual({
        settings: settingsOf(c),
        queued: 1,
        leased: 0,
        done: 3,
        failed: 0,
        domains: { 'y.com': { priorities: { 1: 1 }, total: 1 } },
      });
    },
  ],
  [
    'crawlInfo and appInfo count queued requests per domain and (clamped) priority, per spider type and app',
    async ({ frontier }) => {
      const a = seed({ ...A, url: 'http://x.com/', priority: 50 });
      const b = seed({ ...B, url: 'http://x.com/', priority: 3 });
      await frontier.enqueue(
        'link',
        [
          a,
          child(A, 'http://x.com/1', 40),
          child(A, 'http://x.com/2', 40, 1),
          child(A, 'http://www.y.com/1', 40),
          child(A, 'http://y.com/2', 30, 2),
          child(A, 'http://x.com/low', -5000, 3),
          child(A, 'http://x.com/high', 5000),
          b,
          seed({ appid: 'other', crawlid: 'c', url: 'http://x.com/' }),
        ],
        T0,
      );
      await frontier.enqueue(
        'wandering',
        [seed({ ...A, crawlid: 'd', spiderid: 'wandering', url: 'http://x.com/' })],
        T0,
      );

      const info = await frontier.crawlInfo('link', 'app', 'a', T0);
      expect(info).toEqual({
        settings: settingsOf(a),
        queued: 7,
        leased: 0,
        done: 0,
        failed: 0,
        domains: {
          'x.com': { priorities: { 50: 1, 40: 2, [-1023]: 1, 1024: 1 }, total: 5 },
          'y.com': { priorities: { 40: 1, 30: 1 }, total: 2 },
        },
      });
      const app = await frontier.appInfo('link', 'app', T0);
      expect(Object.keys(app).sort()).toEqual(['a', 'b']);
      expect(app.a).toEqual(info);
      expect(app.b).toEqual({
        settings: settingsOf(b),
        queued: 1,
        leased: 0,
        done: 0,
        failed: 0,
        domains: { 'x.com': { priorities: { 3: 1 }, total: 1 } },
      });
      expect(Object.keys(await frontier.appInfo('link', 'other', T0))).toEqual(['c']);
      expect(Object.keys(await frontier.appInfo('wandering', 'app', T0))).toEqual(['d']);
      expect(await frontier.appInfo('link', 'nobody', T0)).toEqual({});
      expect(await frontier.crawlInfo('link', 'app', 'd', T0)).toBeUndefined();
    },
  ],
  [
    'backlog counts queued requests per domain over a spider type; spiders lists every type sent work',
    async ({ frontier, finish }) => {
      expect(await frontier.enqueue('link', [], T0)).toEqual([]);
      expect(await frontier.spiders()).toEqual([]);
      await frontier.enqueue(
        'link',
        [
          seed({ ...A, url: 'http://x.com/1' }),
          child(A, 'http://x.com/2', 1),
          child(A, 'http://y.com/1', 1),
          seed({ ...B, url: 'http://x.com/1' }),
          child(B, 'http://z.com/1', 1),
        ],
        T0,
      );
      await frontier.enqueue('wandering', [seed({ ...A, spiderid: 'wandering', url: 'http://x.com/1' })], T0);
      // Sent work, all of it refused: the type is registered all the same.
      expect(await frontier.enqueue('refused', [child(A, 'http://x.com/1', 1)], T0)).toEqual(['unknown_crawl']);

      expect(await backlogOf(frontier, 'link')).toEqual({ 'x.com': 3, 'y.com': 1, 'z.com': 1 });
      expect(await backlogOf(frontier, 'wandering')).toEqual({ 'x.com': 1 });
      expect(await backlogOf(frontier, 'refused')).toEqual({});
      expect(await frontier.spiders()).toEqual(['link', 'refused', 'wandering']);
      await finish('link', 'app', 'a', T0 + 1);
      expect(await backlogOf(frontier, 'link')).toEqual({ 'x.com': 1, 'z.com': 1 });
      await frontier.stop('link', 'app', 'b', T0 + 2);
      expect(await backlogOf(frontier, 'link')).toEqual({});
      expect(await backlogOf(frontier, 'wandering')).toEqual({ 'x.com': 1 });
    },
  ],
  [
    'a finished crawl stays known: late children are queued, what it saw stays duplicate, done is counted',
    async ({ frontier, finish }) => {
      await frontier.enqueue('link', [seed({ ...A, url: 'http://x.com/1' }), child(A, 'http://x.com/2', 1)], T0);
      await finish('link', 'app', 'a', T0 + 1);
      expect(await frontier.crawlInfo('link', 'app', 'a', T0 + 1)).toMatchObject({ queued: 0, done: 2, domains: {} });
      expect(
        await frontier.enqueue('link', [child(A, 'http://x.com/2', 1), child(A, 'http://x.com/3', 1)], T0 + 2),
      ).toEqual(['duplicate', 'queued']);
      expect(await frontier.crawlInfo('link', 'app', 'a', T0 + 2)).toMatchObject({ queued: 1, done: 2 });
      expect(await frontier.stop('link', 'app', 'a', T0 + 3)).toMatchObject({ purged: 1 });
    },
  ],
  [
    'a domain blacklist or throttle change leaves enqueue outcomes and counts alone',
    async ({ frontier }) => {
      await frontier.enqueue('link', [seed({ ...A, url: 'http://y.com/1' })], T0);
      await frontier.configureDomain('blacklist-update', 'x.com', {}, T0);
      await frontier.configureDomain('domain-update', 'y.com', { hits: 1, window: 60, scale: 0.5 }, T0);
      expect(
        await frontier.enqueue('link', [child(A, 'http://x.com/1', 1), child(A, 'http://y.com/2', 1)], T0),
      ).toEqual(['queued', 'queued']);
      expect(await backlogOf(frontier, 'link')).toEqual({ 'x.com': 1, 'y.com': 2 });
      expect(await frontier.crawlInfo('link', 'app', 'a', T0)).toMatchObject({ queued: 3 });
    },
  ],
  [
    'reclaim and sweepFinished find nothing when nothing was leased or finished',
    async ({ frontier }) => {
      await frontier.enqueue('link', [seed({ ...A, url: 'http://x.com/1' }), child(A, 'http://y.com/1', 1)], T0);
      const later = T0 + 24 * 3600_000;
      expect(await frontier.reclaim('link', later)).toBe(0);
      expect(await frontier.sweepFinished('link', later)).toBe(0);
      expect(await frontier.crawlInfo('link', 'app', 'a', later)).toMatchObject({ queued: 2 });
    },
  ],
];

describe.each([
  ['the in-memory FakeFrontier', fakeSubject],
  ['the Redis Frontier (Lua scripts, cluster mode)', () => redisSubject()],
  // FRONTIER_PARTITIONS=6 on the 3-master cluster: the scenarios' domains spread over partitions and shards.
  ['the Redis Frontier over 6 partitions (3 shards)', () => redisSubject(6)],
])('%s', (_name, subject) => {
  test.each(SCENARIOS)('%s', async (_title, run) => {
    await run(subject());
  });
});
