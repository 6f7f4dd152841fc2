/**
 * The URL Frontier server's bounds (issue 30, defects 9-12), over the cluster-mode Redis and real gRPC calls: what an
 * empty GetURLs costs in Redis commands whatever the crawl holds, how long an error message may get, invalid UTF-8
 * in any string field, and how much of a PutURLs stream the server holds while Redis stores it.
 */
import { afterAll, afterEach, describe, expect, test, vi } from 'vitest';
import type { UrlFrontierServer } from '../../functions/url-frontier/server.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { type PutItem, UrlFrontierStore } from '../../lib/url-frontier/store.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';

const redis = clusterRedis();

const open: { servers: UrlFrontierServer[]; clients: { close(): void }[]; stores: UrlFrontierStore[] } = {
  servers: [],
  clients: [],
  stores: [],
};

afterEach(async () => {
  for (const c of open.clients.splice(0)) c.close();
  for (const s of open.servers.splice(0)) await s.close(100);
  // One DEL per store: each store's keys share one hash tag, two stores' do not.
  for (const store of open.stores.splice(0)) {
    const keys = await store.knownKeys();
    if (keys.length) await redis.del(...keys);
  }
});
afterAll(() => redis.disconnect());

function newStore(now?: () => number): UrlFrontierStore {
  const store = new UrlFrontierStore(redis, uniqueName('ufx'), now);
  open.stores.push(store);
  return store;
}

/** Every command `run` sends on `client` (a script call counts once, with its KEYS), in order. */
async function recordCommands(
  client: RedisClient,
  run: () => Promise<unknown>,
): Promise<{ name: string; keys: number }[]> {
  type Sent = { name: string; args: unknown[] };
  const spy = vi.spyOn(client as unknown as { sendCommand: (c: Sent) => unknown }, 'sendCommand');
  let sent: Sent[] = [];
  try {
    await run();
  } finally {
    sent = spy.mock.calls.map((c) => c[0] as Sent);
    spy.mockRestore();
  }
  return sent.map((c) => ({
    name: c.name,
    keys: c.name === 'evalsha' || c.name === 'eval' ? Number(c.args[1]) : 0,
  }));
}

const item = (crawl: string, key: string, url: string, kind: 'discovered' | 'known', date = 0): PutItem => ({
  crawl,
  key,
  url,
  kind,
  date,
  metadata: {},
});

describe('GetURLs costs O(log n + queues served), not O(queues of the crawl)', () => {
  /** A crawl of `n` queues whose URLs were all served and then completed: nothing in it is due, ever. */
  async function exhausted(n: number): Promise<UrlFrontierStore> {
    const store = newStore();
    const hosts = Array.from({ length: n }, (_, i) => `q${i}.example.com`);
    await store.put(hosts.map((h) => item('c', h, `https://${h}/`, 'discovered')));
    let served = 0;
    await store.getUrls({ crawl: 'c', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 60 }, (urls) => {
      served += urls.length;
    });
    expect(served).toBe(n);
    await store.put(hosts.map((h) => item('c', h, `https://${h}/`, 'known', 0)));
    return store;
  }

  /** The commands (and the KEYS of script calls: the queues a script touched) of one empty GetURLs. */
  async function emptyGetUrls(store: UrlFrontierStore): Promise<{ commands: number; keys: number; scripts: string[] }> {
    let urls = 0;
    const sent = await recordCommands(redis, () =>
      store.getUrls({ crawl: 'c', maxQueues: 1, maxUrlsPerQueue: 1, holdSeconds: 30 }, (u) => {
        urls += u.length;
      }),
    );
    expect(urls).toBe(0);
    return {
      commands: sent.length,
      keys: sent.reduce((n, c) => n + c.keys, 0),
      scripts: sent.filter((c) => c.keys > 0).map((c) => c.name),
    };
  }

  test('an empty GetURLs over 2,000 exhausted queues sends as few commands, touching as few keys, as over 20', async () => {
    const small = await emptyGetUrls(await exhausted(20));
    const large = await emptyGetUrls(await exhausted(2000));
    expect(large).toEqual(small);
    // The active flag and one claim of the due queues (none): no queue is looked at.
    expect(large.commands).toBeLessThanOrEqual(2);
    expect(large.keys).toBeLessThanOrEqual(2);
  });

  test('the one due queue among 2,000 exhausted ones is served by a claim and one serve of that queue', async () => {
    const store = await exhausted(2000);
    await store.put([item('c', 'due.example.com', 'https://due.example.com/x', 'discovered')]);
    const got: string[] = [];
    const sent = await recordCommands(redis, () =>
      store.getUrls({ crawl: 'c', maxQueues: 0, maxUrlsPerQueue: 0, holdSeconds: 30 }, (u) => {
        got.push(...u.map((x) => x.url));
      }),
    );
    expect(got).toEqual(['https://due.example.com/x']);
    // HGET active, claim (1 queue), serve (that queue: crawl keys + its 6), claim (none left).
    expect(sent.length).toBeLessThanOrEqual(4);
    expect(sent.reduce((n, c) => n + c.keys, 0)).toBeLessThanOrEqual(2 + 12 + 2);
  });

  test('a queue comes back when a put, a hold ending, SetCrawlLimit or BlockQueueUntil lets it produce', async () => {
    const clock = { now: Date.UTC(2026, 10, 23, 12, 0, 0) };
    const store = newStore(() => clock.now);
    const all = async (max = 0) => {
      const out: string[] = [];
      await store.getUrls({ crawl: 'c', maxQueues: 0, maxUrlsPerQueue: max, holdSeconds: 10 }, (u) => {
        out.push(...u.map((x) => x.url));
      });
      return out.sort();
    };
    await store.put([
      item('c', 'a.com', 'http://a.com/1', 'discovered'),
      item('c', 'a.com', 'http://a.com/2', 'discovered'),
      item('c', 'b.com', 'http://b.com/1', 'discovered'),
      item('c', 'b.com', 'http://b.com/0', 'known', 0),
    ]);
    expect(await all(1)).toEqual(['http://a.com/1', 'http://b.com/1']);
    // a.com: one in flight (max 1) and the default politeness delay; b.com: nothing scheduled, one held.
    clock.now += 5000;
    expect(await all(1)).toEqual([]);
    // The holds end at +10 s: both URLs go back and are served again, a.com's second one too (no max now).
    clock.now += 5001;
    expect(await all()).toEqual(['http://a.com/1', 'http://a.com/2', 'http://b.com/1']);
    // Completed: b.com has nothing scheduled or held and leaves the index; a put brings it back.
    await store.put([item('c', 'b.com', 'http://b.com/1', 'known', 0)]);
    clock.now += 2000;
    expect(await all()).toEqual([]);
    await store.put([item('c', 'b.com', 'http://b.com/2', 'discovered')]);
    // At its crawl limit (2 completed, limit 2): not served, until the limit goes.
    await store.setCrawlLimit('c', 'b.com', 2);
    expect(await all()).toEqual([]);
    await store.setCrawlLimit('c', 'b.com', 0);
    expect(await all()).toEqual(['http://b.com/2']);
    // Blocked far ahead, then unblocked: served at once (after the politeness delay).
    await store.put([item('c', 'b.com', 'http://b.com/3', 'discovered')]);
    await store.blockQueueUntil('c', 'b.com', Math.floor(clock.now / 1000) + 86_400);
    clock.now += 2000;
    expect(await all()).toEqual([]);
    await store.blockQueueUntil('c', 'b.com', 0);
    expect(await all()).toEqual(['http://b.com/3']);
  });
});
