/**
 * The spider API's contract (lib/crawl/types.ts `Spider`, lib/crawl/spiders/run.ts, children.ts): what a follow entry's
 * priority, attrs, dont_filter and spider mean once queued, the bounds on them, and the lazily built document.
 */
import { describe, expect, it } from 'vitest';
import {
  childRequests,
  type DroppedFollow,
  MAX_FOLLOW_PRIORITY,
  MIN_FOLLOW_PRIORITY,
} from '../../lib/crawl/crawler/children.ts';
import { requestFingerprint } from '../../lib/crawl/fingerprint.ts';
import { mergeAttrs, putData, queuedUrl, runSpider, splitRequestUrl } from '../../lib/crawl/spiders/run.ts';
import type { FetchResult, FollowRequest, PageItem, Spider, SpiderRequest } from '../../lib/crawl/types.ts';
import type { CrawlSettings, Lease } from '../../lib/frontier-model.ts';

const CRAWL: CrawlSettings = { appid: 'app', crawlid: 'c1', spiderid: 'shop', priority: 5, maxdepth: 2, expires: 0 };

function lease(fields: Partial<Lease> = {}): Lease {
  return {
    handle: 'h',
    partition: { prefix: 't', scope: 'shop', partition: 0, spider: 'shop' },
    url: 'http://a.example/',
    domain: 'a.example',
    priority: 5,
    depth: 0,
    retries: 0,
    crawl: CRAWL,
    ...fields,
  };
}

function request(l: Lease): SpiderRequest {
  return { url: l.url, depth: l.depth, priority: l.priority, retries: 0, crawl: l.crawl, spider: l.partition.spider };
}

const response: FetchResult = {
  requestUrl: 'http://a.example/',
  url: 'http://a.example/',
  status: 200,
  statusText: 'OK',
  headers: { 'content-type': ['text/html'] },
  requestHeaders: {},
  body: Buffer.from('<h1>Hi</h1><a href="/x">x</a>'),
  text: '<h1>Hi</h1><a href="/x">x</a>',
  encoding: 'utf-8',
  truncated: false,
  redirects: [],
  fetchedMs: 1,
};

function children(follow: FollowRequest[], l = lease(), spider: Pick<Spider, 'boundsItself'> = {}) {
  const dropped: DroppedFollow[] = [];
  const batch = childRequests(l, request(l), spider, follow, dropped);
  return { batch, dropped, all: [...batch.values()].flat() };
}

describe('follow entries', () => {
  it('are queued for the page’s spider type at priority - 10 and depth + 1 by default', () => {
    const { batch } = children([{ url: 'http://a.example/x' }]);
    expect([...batch.keys()]).toEqual(['shop']);
    expect(batch.get('shop')?.[0]).toMatchObject({
      crawl: { appid: 'app', crawlid: 'c1' },
      request: { url: 'http://a.example/x', domain: 'a.example', priority: -5, depth: 1 },
    });
    expect(batch.get('shop')?.[0]?.crawl.settings).toBeUndefined();
  });

  it('take the priority they set, rounded and clamped to what the frontier encodes', () => {
    const { all } = children([
      { url: 'http://a.example/1', priority: 90 },
      { url: 'http://a.example/2', priority: 12.6 },
      { url: 'http://a.example/3', priority: 1e9 },
      { url: 'http://a.example/4', priority: -1e9 },
      { url: 'http://a.example/5', priority: Number.NaN },
    ]);
    expect(all.map((c) => c.request.priority)).toEqual([90, 13, MAX_FOLLOW_PRIORITY, MIN_FOLLOW_PRIORITY, -5]);
  });

  it('hand off to another spider type with the crawl’s settings under that type', () => {
    const { batch } = children([{ url: 'http://a.example/p/1', spider: 'detail' }, { url: 'http://a.example/y' }]);
    expect([...batch.keys()].sort()).toEqual(['detail', 'shop']);
    expect(batch.get('detail')?.[0]?.crawl.settings).toEqual({ ...CRAWL, spiderid: 'detail' });
  });

  it('carry their attrs with the queued URL, which the crawler splits off again (same fingerprint as without)', () => {
    const { all } = children([{ url: 'http://a.example/x#top', attrs: { from: 'list', n: 1 } }]);
    const queued = all[0]?.request.url as string;
    expect(splitRequestUrl(queued)).toEqual({ url: 'http://a.example/x', attrs: { from: 'list', n: 1 } });
    expect(all[0]?.request.fingerprint).toEqual(requestFingerprint('http://a.example/x'));
  });

  it('drop attrs over 1024 bytes of JSON, or that are not an object, and say why', () => {
    const { all, dropped } = children([
      { url: 'http://a.example/big', attrs: { x: 'y'.repeat(2000) } },
      { url: 'http://a.example/arr', attrs: [1, 2] as unknown as Record<string, unknown> },
    ]);
    expect(all).toEqual([]);
    expect(dropped.map((d) => d.reason)).toEqual([
      'attrs are not a JSON object of at most 1024 bytes',
      'attrs are not a JSON object of at most 1024 bytes',
    ]);
  });

  it('with dont_filter get a fingerprint of their own per asking page, never the URL’s', () => {
    const plain = children([{ url: 'http://a.example/x' }]).all[0]?.request.fingerprint;
    const again = children([{ url: 'http://a.example/x', dont_filter: true }]).all[0]?.request.fingerprint;
    const fromOther = children(
      [{ url: 'http://a.example/x', dont_filter: true }],
      lease({ url: 'http://a.example/other' }),
    ).all[0]?.request.fingerprint;
    const twice = children([{ url: 'http://a.example/x', dont_filter: true }]).all[0]?.request.fingerprint;
    expect(again).not.toEqual(plain);
    expect(fromOther).not.toEqual(again);
    expect(twice).toEqual(again);
  });

  it('stop at the crawl’s maxdepth unless the spider bounds its own walk', () => {
    const deep = lease({ depth: 2 });
    expect(children([{ url: 'http://a.example/x' }], deep).all).toEqual([]);
    expect(children([{ url: 'http://a.example/x' }], deep, { boundsItself: true }).all).toHaveLength(1);
  });

  it('stay within allowed_domains, and drop what is not an absolute http(s) URL of at most 2048 characters', () => {
    const l = lease({ crawl: { ...CRAWL, allowed_domains: ['a.example'] } });
    const { all, dropped } = children(
      [
        { url: 'http://a.example/ok.zip' },
        { url: 'http://b.example/no' },
        { url: 'ftp://a.example/f' },
        { url: `http://a.example/${'l'.repeat(2100)}` },
        { nope: true } as unknown as FollowRequest,
      ],
      l,
    );
    // A follow entry is the spider's choice: deny_extensions filtered the links it was given, not its own URLs.
    expect(all.map((c) => c.request.url)).toEqual(['http://a.example/ok.zip']);
    expect(dropped.map((d) => d.reason)).toEqual([
      'not an absolute http(s) URL of at most 2048 characters',
      'not an absolute http(s) URL of at most 2048 characters',
      'no url',
    ]);
  });
});

describe('per-request attrs', () => {
  it('leave a URL without them, and an ordinary fragment, alone', () => {
    expect(splitRequestUrl('http://a.example/x#section')).toEqual({ url: 'http://a.example/x#section' });
    expect(splitRequestUrl('http://a.example/x#cc-attrs=!!')).toEqual({ url: 'http://a.example/x#cc-attrs=!!' });
    expect(queuedUrl('http://a.example/x', undefined)).toBe('http://a.example/x');
  });

  it('go on top of the crawl’s', () => {
    expect(mergeAttrs({ a: 1, b: 1 }, { b: 2 })).toEqual({ a: 1, b: 2 });
    expect(mergeAttrs(undefined, { b: 2 })).toEqual({ b: 2 });
    expect(mergeAttrs({ a: 1 }, undefined)).toEqual({ a: 1 });
  });
});

describe('runSpider', () => {
  const l = lease({ crawl: { ...CRAWL, deny_regex: ['/private'] } });

  it('builds the cheerio document only when the spider asks, and once', async () => {
    const calls: number[] = [];
    const spider: Spider = {
      name: 'shop',
      parse: ({ $ }) => {
        const a = $();
        const b = $();
        calls.push(a === b ? 1 : 0);
        return { data: a('h1').text() };
      },
    };
    expect(await runSpider(spider, request(l), response, [])).toEqual({ data: 'Hi' });
    expect(calls).toEqual([1]);
    const lazy: Spider = { name: 'shop', parse: () => ({ data: 'no DOM' }) };
    // A response whose text would throw if read shows the document is never built.
    const untouchable = Object.defineProperty({ ...response }, 'text', {
      get() {
        throw new Error('the document was built');
      },
    });
    expect(await runSpider(lazy, request(l), untouchable, [])).toEqual({ data: 'no DOM' });
  });

  it('waits for an async spider and passes its throw on', async () => {
    const later: Spider = { name: 's', parse: async () => ({ data: 1 }) };
    const broken: Spider = {
      name: 's',
      parse: async () => {
        throw new Error('broken');
      },
    };
    expect(await runSpider(later, request(l), response, [])).toEqual({ data: 1 });
    await expect(runSpider(broken, request(l), response, [])).rejects.toThrow('broken');
    // A synchronous parse is checked synchronously: no promise.
    expect(() =>
      runSpider({ name: 's', parse: () => ({ follow: 'x' as unknown as [] }) }, request(l), response, []),
    ).toThrow('follow that is not an array');
    expect(runSpider({ name: 's', parse: () => ({ data: 2 }) }, request(l), response, [])).toEqual({ data: 2 });
  });
});

describe('putData', () => {
  const page = () => ({}) as PageItem;

  it('puts JSON up to the bound, and null with data_truncated above it', () => {
    const small = page();
    putData(small, { a: [1, 'x'] }, 100);
    expect(small).toEqual({ data: { a: [1, 'x'] } });
    const big = page();
    putData(big, 'x'.repeat(200), 100);
    expect(big).toEqual({ data: null, data_truncated: true });
    const none = page();
    putData(none, undefined);
    expect(none).toEqual({});
  });

  it('sends the JSON form: dates as strings, undefined members dropped; a cycle is not JSON', () => {
    const p = page();
    putData(p, { at: new Date(0), gone: undefined });
    expect(p.data).toEqual({ at: '1970-01-01T00:00:00.000Z' });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const c = page();
    putData(c, cyclic);
    expect(c).toEqual({ data: null, data_truncated: true });
  });
});
