/**
 * A crawl's `attrs.proxy` is checked against the fleet's proxy groups (lib/monitor/proxy-groups.ts): crawlers
 * register their group names, the kafka-monitor accepts `none` and every registered group and rejects any other
 * value with `unknown_proxy_group`, reading the registry once per TTL plus once per batch for a name it does not know.
 */
import { describe, expect, it } from 'vitest';
import { FleetNames } from '../../lib/monitor/fleet-registry.ts';
import { handleIncoming } from '../../lib/monitor/kafka-monitor.ts';
import { parseRequest } from '../../lib/schemas/index.ts';
import { recordsOf } from '../helpers/events.ts';
import { MemoryFleetWake, MemoryRegistry } from '../helpers/fake-stores.ts';
import { testContext } from '../helpers/fakes.ts';

const crawl = (proxy: unknown, crawlid = 'c1') => ({
  appid: 'testapp',
  crawlid,
  url: 'http://example.com/',
  attrs: { proxy, other: 1 },
});

function setup() {
  let now = 1_000_000;
  const store = new MemoryRegistry();
  const groups = new FleetNames(new Set(), store, { ttlMs: 5000, minForceMs: 250, now: () => now });
  const wake = new MemoryFleetWake();
  const ctx = testContext({ proxyGroups: groups, fleetWake: wake, now: () => now });
  return { store, ctx, wake, advance: (ms: number) => (now += ms) };
}

describe('attrs.proxy in the kafka-monitor', () => {
  it('queues a crawl naming a registered group or "none", with the group in its settings', async () => {
    const { store, ctx } = setup();
    await store.register(['residential'], 1);
    const result = await handleIncoming(
      ctx,
      recordsOf('demo.incoming', [crawl('residential', 'a'), crawl('none', 'b')]),
    );
    expect(result.crawl.queued).toBe(2);
    const settings = ctx.frontier.enqueueCalls[0]?.items.map((i) => i.crawl.settings?.attrs);
    expect(settings).toEqual([
      { proxy: 'residential', other: 1 },
      { proxy: 'none', other: 1 },
    ]);
  });

  it('rejects a group no crawler registered, naming the known ones', async () => {
    const { store, ctx } = setup();
    await store.register(['residential', 'datacenter'], 1);
    const result = await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('mobile')]));
    expect(result.rejected).toBe(1);
    expect(result.crawl.queued).toBe(0);
    expect(ctx.sink.values('demo.rejected')).toMatchObject([
      {
        error: 'unknown_proxy_group',
        crawlid: 'c1',
        details: [
          {
            path: '/attrs/proxy',
            message:
              'must name a proxy group of this cluster\'s crawlers (CRAWLER_PROXY_GROUPS: one of residential, datacenter or "none" for direct), not "mobile"; a group is known once a crawler that has it has started (with none running, this request starts one: send it again in a few minutes)',
          },
        ],
      },
    ]);
  });

  it('calls for a crawler task when it rejects an unregistered group, and not for a registered one', async () => {
    const { store, ctx, wake } = setup();
    await store.register(['residential'], 1);
    await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('residential'), crawl('none', 'c2')]));
    expect(wake.wants).toEqual([]);
    await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('mobile', 'c3')]));
    expect(wake.wants).toEqual([1_000_000]);
  });

  it('says so when no crawler registered any group, and refuses a value that is not a name', async () => {
    const { ctx } = setup();
    const result = await handleIncoming(
      ctx,
      recordsOf('demo.incoming', [crawl('residential', 'a'), crawl({ url: 'http://proxy:3128' }, 'b')]),
    );
    expect(result.rejected).toBe(2);
    const messages = ctx.sink.values('demo.rejected').map((r) => (r as { details: { message: string }[] }).details[0]);
    expect(messages[0]?.message).toContain('no group is registered, only "none" for direct), not "residential"');
    expect(messages[1]?.message).toContain('not {"url":"http://proxy:3128"}');
  });

  it('reads the registry again, once per batch, for a group registered since its last read', async () => {
    const { store, ctx, advance } = setup();
    await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('none')]));
    expect(store.reads).toBe(1);
    await store.register(['fresh'], 2);
    advance(1000);
    const result = await handleIncoming(
      ctx,
      recordsOf('demo.incoming', [crawl('fresh', 'a'), crawl('fresh', 'b'), crawl('stale', 'c'), crawl('nope', 'd')]),
    );
    expect(result.crawl.queued).toBe(2);
    expect(result.rejected).toBe(2);
    expect(store.reads).toBe(2);
  });

  it('leaves attrs.proxy to the kafka-monitor where no registry is given (clients, the CLI)', () => {
    expect(parseRequest(JSON.stringify(crawl('anything')))).toMatchObject({ type: 'crawl' });
    expect(() => parseRequest(JSON.stringify(crawl('x')), { proxyGroups: new Set(['y']) })).toThrow(
      /unknown_proxy_group: \/attrs\/proxy must name a proxy group/,
    );
  });
});
