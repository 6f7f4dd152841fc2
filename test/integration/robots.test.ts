import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { UndiciFetcher } from '../../lib/crawl/fetch/fetcher.ts';
import { RobotsCache, type RobotsCacheOptions } from '../../lib/crawl/fetch/robots.ts';
import { FetchError, type Fetcher, type FetchRequest, type FetchResult } from '../../lib/crawl/types.ts';
import { robotsKey } from '../../lib/redis/keys.ts';
import { redisRobotsStore } from '../../lib/redis/robots-store.ts';
import { clusterRedis, uniqueName } from '../helpers/services.ts';

const DISALLOWS = 'robots.txt disallows this URL';
const unreadable = (what: string) =>
  `robots.txt could not be read (${what}); failing closed, so the URL is not fetched`;

const redis = clusterRedis();
afterAll(() => redis.disconnect());

const UA = 'Mozilla/5.0 (compatible; crawl-cluster/1.0; +https://example.com/bot)';
const OTHER_UA = 'SomeOtherCrawler/2.0';

/** A robots.txt answer per origin: a status and body, or a FetchError to throw. */
type Answer = { status: number; body?: string | Buffer } | FetchError;

/** Our Fetcher interface over a table of answers, counting the requests it gets. */
class FakeFetcher implements Fetcher {
  readonly requests: FetchRequest[] = [];
  readonly #answers: Map<string, Answer>;
  constructor(answers: Record<string, Answer>) {
    this.#answers = new Map(Object.entries(answers));
  }
  async fetch(request: FetchRequest): Promise<FetchResult> {
    this.requests.push(request);
    await Promise.resolve();
    const answer = this.#answers.get(request.url) ?? { status: 404 };
    if (answer instanceof FetchError) throw answer;
    const body = typeof answer.body === 'string' ? Buffer.from(answer.body) : (answer.body ?? Buffer.alloc(0));
    return {
      requestUrl: request.url,
      url: request.url,
      status: answer.status,
      statusText: '',
      headers: { 'content-type': ['text/plain'] },
      requestHeaders: { 'user-agent': [request.userAgent] },
      body,
      text: body.toString('utf8'),
      encoding: 'utf-8',
      truncated: false,
      redirects: [],
      fetchedMs: 1,
    };
  }
  async close(): Promise<void> {}
}

const usedKeys: string[] = [];
afterEach(async () => {
  for (const key of usedKeys.splice(0)) await redis.del(key);
});

/** A fresh prefix and a cache over it; the keys of `origins` are deleted after the test. */
function setup(answers: Record<string, Answer>, options: Partial<RobotsCacheOptions> = {}) {
  const prefix = uniqueName();
  const fetcher = new FakeFetcher(answers);
  for (const url of Object.keys(answers)) usedKeys.push(robotsKey(prefix, new URL(url).origin));
  const cache = new RobotsCache({ store: redisRobotsStore(redis, prefix), fetcher, ...options });
  return { prefix, fetcher, cache };
}

const ROBOTS = [
  'User-agent: *',
  'Disallow: /private/',
  'Crawl-delay: 2.5',
  '',
  'User-agent: crawl-cluster',
  'Disallow: /no-bots/',
  'Allow: /no-bots/except-this',
  'Disallow: /*.json$',
  'Crawl-delay: 1',
].join('\n');

describe('RobotsCache', () => {
  test('applies the group of the User-Agent’s product token, and * to other agents', async () => {
    const { cache } = setup({ 'http://a.example/robots.txt': { status: 200, body: ROBOTS } });
    expect(await cache.check('http://a.example/no-bots/page', UA)).toEqual({
      allowed: false,
      reason: DISALLOWS,
      crawlDelayMs: 1000,
    });
    expect(await cache.check('http://a.example/no-bots/except-this', UA)).toMatchObject({ allowed: true });
    expect(await cache.check('http://a.example/data.json', UA)).toMatchObject({ allowed: false });
    expect(await cache.check('http://a.example/data.json?x=1', UA)).toMatchObject({ allowed: true });
    // Only the most specific group applies: the * rules do not add to crawl-cluster's.
    expect(await cache.check('http://a.example/private/x', UA)).toMatchObject({ allowed: true });

    expect(await cache.check('http://a.example/private/x', OTHER_UA)).toEqual({
      allowed: false,
      reason: DISALLOWS,
      crawlDelayMs: 2500,
    });
    expect(await cache.check('http://a.example/no-bots/page', OTHER_UA)).toEqual({ allowed: true, crawlDelayMs: 2500 });
  });

  test('matches the product token as a whole word, case-insensitively', async () => {
    const body = 'User-agent: Bot\nDisallow: /\n\nUser-agent: MYBOT\nDisallow: /mine/\n';
    const { cache } = setup({ 'http://w.example/robots.txt': { status: 200, body } });
    expect((await cache.check('http://w.example/x', 'MyBot/3.1')).allowed).toBe(true);
    expect((await cache.check('http://w.example/mine/x', 'mybot')).allowed).toBe(false);
    expect((await cache.check('http://w.example/x', 'Some Bot/1.0')).allowed).toBe(false);
    expect((await cache.check('http://w.example/x', 'robotic/1.0')).allowed).toBe(true);
  });

  test('allows everything when robots.txt is 404 (unavailable)', async () => {
    const { cache } = setup({ 'http://b.example/robots.txt': { status: 404 } });
    expect(await cache.check('http://b.example/anything', UA)).toEqual({ allowed: true });
    expect(await cache.check('http://b.example/private/x', UA)).toEqual({ allowed: true });
  });

  test('disallows everything when robots.txt answers 500, and asks again after the shorter TTL', async () => {
    const { prefix, cache } = setup(
      { 'http://c.example/robots.txt': { status: 500 } },
      { ttlMs: 3_600_000, errorTtlMs: 60_000 },
    );
    expect(await cache.check('http://c.example/', UA)).toEqual({ allowed: false, reason: unreadable('HTTP 500') });
    const ttl = await redis.pttl(robotsKey(prefix, 'http://c.example'));
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  test('disallows everything when robots.txt answers 429 or 503', async () => {
    const { cache } = setup({
      'http://d.example/robots.txt': { status: 429 },
      'http://e.example/robots.txt': { status: 503 },
    });
    expect((await cache.check('http://d.example/x', UA)).allowed).toBe(false);
    expect((await cache.check('http://e.example/x', UA)).allowed).toBe(false);
  });

  test('disallows everything when robots.txt is unreachable (the fetcher throws a FetchError)', async () => {
    const { fetcher, cache } = setup({
      'http://f.example/robots.txt': new FetchError('connect', 'ECONNREFUSED'),
      'http://g.example/robots.txt': new FetchError('timeout', 'no response in 10000 ms'),
    });
    expect(await cache.check('http://f.example/', UA)).toEqual({ allowed: false, reason: unreadable('no response') });
    expect(await cache.check('http://g.example/x', UA)).toEqual({ allowed: false, reason: unreadable('no response') });
    expect(fetcher.requests.map((r) => r.url)).toEqual(['http://f.example/robots.txt', 'http://g.example/robots.txt']);
  });

  test('always allows /robots.txt itself, even when the origin is disallowed', async () => {
    const { cache } = setup({ 'http://h.example/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /\n' } });
    expect((await cache.check('http://h.example/page', UA)).allowed).toBe(false);
    expect((await cache.check('http://h.example/robots.txt', UA)).allowed).toBe(true);
  });

  test('stores robots.txt in Redis with the TTL, so another crawler does not fetch it again', async () => {
    const answers = { 'http://i.example/robots.txt': { status: 200, body: ROBOTS } };
    const first = setup(answers, { ttlMs: 600_000 });
    expect((await first.cache.check('http://i.example/private/x', OTHER_UA)).allowed).toBe(false);
    expect(first.fetcher.requests).toHaveLength(1);
    expect(first.fetcher.requests[0]).toMatchObject({ url: 'http://i.example/robots.txt', userAgent: OTHER_UA });

    const key = robotsKey(first.prefix, 'http://i.example');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThanOrEqual(600_000);
    expect(await redis.get(key)).toContain('Disallow: /private/');

    const secondFetcher = new FakeFetcher(answers);
    const second = new RobotsCache({ store: redisRobotsStore(redis, first.prefix), fetcher: secondFetcher });
    expect(await second.check('http://i.example/private/x', OTHER_UA)).toEqual({
      allowed: false,
      reason: DISALLOWS,
      crawlDelayMs: 2500,
    });
    expect(await second.check('http://i.example/no-bots/x', UA)).toEqual({
      allowed: false,
      reason: DISALLOWS,
      crawlDelayMs: 1000,
    });
    expect(secondFetcher.requests).toHaveLength(0);
  });

  test('shares the cached unreachable verdict too, so the fleet does not hammer a failing server', async () => {
    const answers = { 'http://j.example/robots.txt': { status: 502 } };
    const first = setup(answers);
    await first.cache.check('http://j.example/', UA);
    const secondFetcher = new FakeFetcher(answers);
    const second = new RobotsCache({ store: redisRobotsStore(redis, first.prefix), fetcher: secondFetcher });
    expect(await second.check('http://j.example/x', UA)).toEqual({ allowed: false, reason: unreadable('HTTP 502') });
    expect(secondFetcher.requests).toHaveLength(0);
  });

  test('fetches once for many checks of one origin, concurrent or not', async () => {
    const { fetcher, cache } = setup({ 'http://k.example/robots.txt': { status: 200, body: ROBOTS } });
    await Promise.all(Array.from({ length: 20 }, (_, i) => cache.check(`http://k.example/p${i}`, UA)));
    await cache.check('http://k.example/again', UA);
    expect(fetcher.requests).toHaveLength(1);
  });

  test('treats origins separately: scheme, host and port each have their own robots.txt', async () => {
    const { fetcher, cache } = setup({
      'http://l.example/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /\n' },
      'https://l.example/robots.txt': { status: 404 },
      'http://l.example:8080/robots.txt': { status: 404 },
      'http://sub.l.example/robots.txt': { status: 404 },
    });
    expect((await cache.check('http://l.example/x', UA)).allowed).toBe(false);
    expect((await cache.check('https://l.example/x', UA)).allowed).toBe(true);
    expect((await cache.check('http://l.example:8080/x', UA)).allowed).toBe(true);
    expect((await cache.check('http://SUB.l.example/x', UA)).allowed).toBe(true);
    expect(fetcher.requests).toHaveLength(4);
  });

  test('fetches again once the stored copy has expired', async () => {
    let now = Date.now();
    const { fetcher, cache } = setup(
      { 'http://m.example/robots.txt': { status: 200, body: ROBOTS } },
      { ttlMs: 60_000, now: () => now },
    );
    await cache.check('http://m.example/', UA);
    now += 30_000;
    await cache.check('http://m.example/', UA);
    expect(fetcher.requests).toHaveLength(1);
    now += 31_000;
    await cache.check('http://m.example/', UA);
    expect(fetcher.requests).toHaveLength(2);
  });

  test('parses only the first maxBytes of robots.txt', async () => {
    const head = 'User-agent: *\nDisallow: /early/\n';
    const body = `${head}${'#'.repeat(200)}\nDisallow: /late/\n`;
    const { cache } = setup({ 'http://n.example/robots.txt': { status: 200, body } }, { maxBytes: 100 });
    expect((await cache.check('http://n.example/early/x', UA)).allowed).toBe(false);
    expect((await cache.check('http://n.example/late/x', UA)).allowed).toBe(true);
  });

  test('reads a robots.txt that starts with a UTF-8 byte order mark', async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('User-agent: *\nDisallow: /x/\n')]);
    const { cache } = setup({ 'http://o.example/robots.txt': { status: 200, body } });
    expect((await cache.check('http://o.example/x/1', UA)).allowed).toBe(false);
  });

  test('leaves out a Crawl-delay that is zero or not a number', async () => {
    const { cache } = setup({
      'http://p.example/robots.txt': { status: 200, body: 'User-agent: *\nCrawl-delay: 0\n' },
      'http://q.example/robots.txt': { status: 200, body: 'User-agent: *\nCrawl-delay: soon\n' },
    });
    expect(await cache.check('http://p.example/', UA)).toEqual({ allowed: true });
    expect(await cache.check('http://q.example/', UA)).toEqual({ allowed: true });
  });

  test('allows everything without fetching when obey is false', async () => {
    const { fetcher, cache } = setup(
      { 'http://r.example/robots.txt': { status: 200, body: 'User-agent: *\nDisallow: /\n' } },
      { obey: false },
    );
    expect(await cache.check('http://r.example/x', UA)).toEqual({ allowed: true });
    expect(fetcher.requests).toHaveLength(0);
  });

  test('rejects a URL that is not absolute http(s)', async () => {
    const { cache } = setup({});
    await expect(cache.check('/relative', UA)).rejects.toThrow(/invalid URL/);
    await expect(cache.check('ftp://s.example/x', UA)).rejects.toThrow(/invalid URL/);
  });

  test('checkNow answers from the rules this process holds, the same as check, and undefined until then', async () => {
    let now = Date.now();
    const { fetcher, cache } = setup(
      { 'http://t.example/robots.txt': { status: 200, body: ROBOTS }, 'http://u.example/robots.txt': { status: 503 } },
      { ttlMs: 60_000, errorTtlMs: 60_000, now: () => now },
    );
    // Nothing held yet: no answer, and nothing read or fetched for it.
    expect(cache.checkNow('http://t.example/no-bots/page', UA)).toBeUndefined();
    expect(fetcher.requests).toHaveLength(0);
    expect(await cache.check('http://t.example/', UA)).toEqual({ allowed: true, crawlDelayMs: 1000 });
    for (const url of ['http://t.example/no-bots/page', 'http://t.example/no-bots/except-this', 'http://t.example/x'])
      for (const ua of [UA, OTHER_UA])
        expect(cache.checkNow(url, ua), `${url} ${ua}`).toEqual(await cache.check(url, ua));
    expect(cache.checkNow('http://t.example/robots.txt', UA)).toEqual({ allowed: true });
    // A fail-closed origin is answered at once too.
    expect((await cache.check('http://u.example/', UA)).allowed).toBe(false);
    expect(cache.checkNow('http://u.example/a', UA)).toEqual({ allowed: false, reason: unreadable('HTTP 503') });
    expect(fetcher.requests).toHaveLength(2);
    // Past the TTL the held rules are no answer: check reads or fetches again.
    now += 61_000;
    expect(cache.checkNow('http://t.example/x', UA)).toBeUndefined();
    expect(() => cache.checkNow('/relative', UA)).toThrow(/invalid URL/);
  });
});

/**
 * The real fetcher against robots.txt files served on loopback: `loop.test` redirects robots.txt to itself,
 * `chain<N>.test` reaches a robots.txt (`Disallow: /private/`) after N redirects, any other host serves that
 * robots.txt at once. Every host name resolves to the one server.
 */
describe('RobotsCache over HTTP', () => {
  const HOSTS = ['loop.test', 'chain5.test', 'chain6.test', 'site.test'];
  const RULES = 'User-agent: *\nDisallow: /private/\n';
  /** Requests per `host path`. */
  const hits = new Map<string, number>();
  let server: Server;
  let port: number;
  const fetchers: UndiciFetcher[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const host = (req.headers.host ?? '').split(':')[0] ?? '';
      const path = req.url ?? '/';
      hits.set(`${host} ${path}`, (hits.get(`${host} ${path}`) ?? 0) + 1);
      const chain = /^chain(\d+)\.test$/.exec(host);
      const hop = /^\/hop\/(\d+)$/.exec(path);
      if (host === 'loop.test' && path === '/robots.txt') res.writeHead(301, { location: '/robots.txt' }).end();
      else if (chain && path === '/robots.txt') res.writeHead(302, { location: `/hop/${Number(chain[1]) - 1}` }).end();
      else if (hop && hop[1] !== '0') res.writeHead(302, { location: `/hop/${Number(hop[1]) - 1}` }).end();
      else if (hop || path === '/robots.txt') res.writeHead(200, { 'content-type': 'text/plain' }).end(RULES);
      else res.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    await Promise.all(fetchers.splice(0).map((f) => f.close()));
    hits.clear();
  });
  afterAll(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  const origin = (host: string) => `http://${host}:${port}`;

  /** A cache over a real fetcher; `allowPrivateNetworks` is the SSRF policy, `maxRedirects` the fetcher's own limit. */
  function httpCache(prefix: string, allowPrivateNetworks: boolean, maxRedirects = 5) {
    const fetcher = new UndiciFetcher({
      allowPrivateNetworks,
      maxRedirects,
      resolve: Object.fromEntries(HOSTS.map((h) => [h, '127.0.0.1'])),
    });
    fetchers.push(fetcher);
    for (const host of HOSTS) usedKeys.push(robotsKey(prefix, origin(host)));
    return new RobotsCache({ store: redisRobotsStore(redis, prefix), fetcher });
  }

  test('treats a robots.txt that redirects to itself as unavailable: the URL is allowed, and the verdict is shared', async () => {
    const prefix = uniqueName();
    expect(await httpCache(prefix, true).check(`${origin('loop.test')}/page`, UA)).toEqual({ allowed: true });
    // The loop is seen at its first repeat; five more requests would only have met the same redirect.
    expect(hits.get('loop.test /robots.txt')).toBe(1);
    // Another crawler reads the verdict from Redis, fetching nothing.
    expect(await httpCache(prefix, true).check(`${origin('loop.test')}/private/x`, UA)).toEqual({ allowed: true });
    expect(hits.get('loop.test /robots.txt')).toBe(1);
  });

  test("follows five redirects to a robots.txt, whatever the fetcher's own limit, and applies its rules to the origin asked about", async () => {
    const cache = httpCache(uniqueName(), true, 0);
    expect(await cache.check(`${origin('chain5.test')}/private/x`, UA)).toEqual({ allowed: false, reason: DISALLOWS });
    expect(await cache.check(`${origin('chain5.test')}/public`, UA)).toEqual({ allowed: true });
    expect(hits.get('chain5.test /hop/0')).toBe(1);
  });

  test('treats a robots.txt more than five redirects away as unavailable: allow all', async () => {
    const cache = httpCache(uniqueName(), true);
    expect(await cache.check(`${origin('chain6.test')}/private/x`, UA)).toEqual({ allowed: true });
    expect(hits.get('chain6.test /hop/0')).toBeUndefined();
  });

  test('names the SSRF refusal when robots.txt is on a blocked address, and stores nothing in Redis', async () => {
    const prefix = uniqueName();
    const cache = httpCache(prefix, false);
    const refused = {
      allowed: false,
      reason: 'robots.txt not fetched: refusing to connect to non-public address 127.0.0.1 (resolved from site.test)',
    };
    expect(await cache.check(`${origin('site.test')}/page`, UA)).toEqual(refused);
    // Held in process: the next URL is answered at once, and the guard is not asked again.
    expect(cache.checkNow(`${origin('site.test')}/other`, UA)).toEqual(refused);
    expect(await redis.get(robotsKey(prefix, origin('site.test')))).toBeNull();
    expect(hits.size).toBe(0);
  });

  test('a crawler allowed private networks reads the robots.txt at once after one that was refused it', async () => {
    const prefix = uniqueName();
    expect((await httpCache(prefix, false).check(`${origin('site.test')}/page`, UA)).allowed).toBe(false);
    const allowed = httpCache(prefix, true);
    expect(await allowed.check(`${origin('site.test')}/page`, UA)).toEqual({ allowed: true });
    expect(await allowed.check(`${origin('site.test')}/private/x`, UA)).toEqual({ allowed: false, reason: DISALLOWS });
    expect(hits.get('site.test /robots.txt')).toBe(1);
  });
});
