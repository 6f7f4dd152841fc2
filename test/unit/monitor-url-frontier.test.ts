/**
 * The URL Frontier API's crawls on the Kafka side: spider ID `url-frontier` in info, stop and stats; domain
 * overrides reach its queues. A fake UrlFrontierView stands in for the Redis store (its Redis side:
 * test/integration/url-frontier-kafka.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { SchemaValidationError } from '../../lib/errors.ts';
import { handleActions } from '../../lib/monitor/redis-monitor.ts';
import { parseRequest, URL_FRONTIER_SPIDERID } from '../../lib/schemas/index.ts';
import { recordsOf } from '../helpers/events.ts';
import { seed } from '../helpers/fake-frontier.ts';
import { FakeUrlFrontier } from '../helpers/fake-stores.ts';
import { TEST_NOW, TEST_NOW_SEC, testContext } from '../helpers/fakes.ts';

const ACTIONS = 'demo.actions';

/** Crawl `news`: example.com 3 left, done.org finished; crawl `DEFAULT`: example.com 2 left, shop.net 1. */
function frontier(): FakeUrlFrontier {
  return new FakeUrlFrontier({
    news: { 'example.com': 3, 'done.org': 0 },
    DEFAULT: { 'example.com': 2, 'shop.net': 1 },
  });
}

async function reply(ctx: ReturnType<typeof testContext>, request: object): Promise<Record<string, unknown>> {
  const { replies } = await handleActions(ctx, recordsOf(ACTIONS, [request]));
  expect(replies).toHaveLength(1);
  return replies[0] as Record<string, unknown>;
}

describe('URL Frontier crawls through the Kafka API', () => {
  it('accepts spider ID url-frontier in action requests, but not in crawl requests', () => {
    const action = parseRequest(
      JSON.stringify({ action: 'info', appid: 'ops', uuid: 'u1', spiderid: URL_FRONTIER_SPIDERID }),
      { spiders: BUILT_IN_SPIDERS },
    );
    expect(action.type).toBe('action');
    expect(() =>
      parseRequest(JSON.stringify({ url: 'http://a.com/', appid: 'ops', crawlid: 'c', spiderid: 'url-frontier' }), {
        spiders: BUILT_IN_SPIDERS,
      }),
    ).toThrow(SchemaValidationError);
  });

  it('info without crawlid lists every URL Frontier crawl with work left, queue keys as domains', async () => {
    const ctx = testContext({ urlFrontier: frontier() });
    const r = await reply(ctx, { action: 'info', appid: 'ops', uuid: 'u1', spiderid: 'url-frontier' });
    expect(r).toEqual({
      server_time: TEST_NOW_SEC,
      uuid: 'u1',
      appid: 'ops',
      spiderid: 'url-frontier',
      total_pending: 6,
      total_domains: 2,
      total_crawlids: 2,
      crawlids: {
        news: {
          domains: { 'example.com': { low_priority: 0, high_priority: 0, total: 3 } },
          distinct_domains: 1,
          total: 3,
        },
        DEFAULT: {
          domains: {
            'example.com': { low_priority: 0, high_priority: 0, total: 2 },
            'shop.net': { low_priority: 0, high_priority: 0, total: 1 },
          },
          distinct_domains: 2,
          total: 3,
        },
      },
    });
  });

  it('info with a crawlid answers for that crawl, and zeros for an unknown one', async () => {
    const ctx = testContext({ urlFrontier: frontier() });
    const r = await reply(ctx, {
      action: 'info',
      appid: 'ops',
      uuid: 'u2',
      spiderid: 'url-frontier',
      crawlid: 'DEFAULT',
    });
    expect(r).toMatchObject({
      crawlid: 'DEFAULT',
      spiderid: 'url-frontier',
      total_pending: 3,
      total_domains: 2,
      domains: { 'shop.net': { low_priority: 0, high_priority: 0, total: 1 } },
    });
    const unknown = await reply(ctx, {
      action: 'info',
      appid: 'ops',
      uuid: 'u3',
      spiderid: 'url-frontier',
      crawlid: 'nope',
    });
    expect(unknown).toMatchObject({ crawlid: 'nope', total_pending: 0, total_domains: 0, domains: {} });
  });

  it('stop deletes the URL Frontier crawl and reports how many URLs went', async () => {
    const uf = frontier();
    const ctx = testContext({ urlFrontier: uf });
    const r = await reply(ctx, { action: 'stop', appid: 'ops', uuid: 's1', spiderid: 'url-frontier', crawlid: 'news' });
    expect(r).toMatchObject({ action: 'stop', crawlid: 'news', spiderid: 'url-frontier', total_purged: 3 });
    expect(Object.keys(uf.crawls)).toEqual(['DEFAULT']);
  });

  it('stats queue lists the URL Frontier queues as spider type url-frontier, in the total backlog', async () => {
    const ctx = testContext({ urlFrontier: frontier() });
    await ctx.frontier.enqueue('link', [seed({ appid: 'a', crawlid: 'c', url: 'http://example.org/' })], TEST_NOW);
    const r = await reply(ctx, { stats: 'queue', appid: 'ops', uuid: 'q1' });
    const queues = r.queues as Record<string, unknown>;
    expect(queues.total_backlog).toBe(7);
    expect(queues['queue_url-frontier']).toEqual({
      spider_backlog: 6,
      num_domains: 2,
      domains: [
        { domain: 'example.com', backlog: 5 },
        { domain: 'shop.net', backlog: 1 },
      ],
    });
  });

  it('stats queue has no url-frontier entry when the URL Frontier holds nothing', async () => {
    const ctx = testContext({ urlFrontier: new FakeUrlFrontier({ old: { 'a.com': 0 } }) });
    const r = await reply(ctx, { stats: 'queue', appid: 'ops', uuid: 'q2' });
    expect(Object.keys(r.queues as object)).toEqual(['total_backlog']);
  });

  it('domain throttle overrides and the blacklist reach the URL Frontier too', async () => {
    const uf = frontier();
    const ctx = testContext({ urlFrontier: uf });
    await reply(ctx, {
      action: 'domain-update',
      appid: 'ops',
      uuid: 'd1',
      domain: 'example.com',
      hits: 5,
      window: 60,
      scale: 0.5,
    });
    await reply(ctx, { action: 'blacklist-update', appid: 'ops', uuid: 'd2', domain: 'shop.net' });
    expect(uf.domainConfig.get('example.com')).toBe('5,60,0.5');
    expect([...uf.blacklist]).toEqual(['shop.net']);
    await reply(ctx, { action: 'domain-remove', appid: 'ops', uuid: 'd3', domain: 'example.com' });
    expect(uf.domainConfig.has('example.com')).toBe(false);
  });
});
