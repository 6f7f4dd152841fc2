/**
 * spiderid validation follows the fleet (lib/monitor/spider-types.ts, lib/monitor/fleet-registry.ts): crawlers
 * register the types they serve, the monitors accept the built-ins and every registered type, read from the registry
 * at most once per TTL (never per record) plus one forced read per batch for a type the cache does not know.
 */
import { describe, expect, it } from 'vitest';
import { BUILT_IN_SPIDERS } from '../../lib/crawl/spiders/index.ts';
import { FleetNames } from '../../lib/monitor/fleet-registry.ts';
import { handleIncoming } from '../../lib/monitor/kafka-monitor.ts';
import { handleActions } from '../../lib/monitor/redis-monitor.ts';
import { recordsOf } from '../helpers/events.ts';
import { MemoryFleetWake, MemoryRegistry } from '../helpers/fake-stores.ts';
import { testContext } from '../helpers/fakes.ts';

const crawl = (spiderid: string, crawlid = 'c1') => ({
  appid: 'testapp',
  crawlid,
  url: 'http://example.com/',
  spiderid,
});

function setup() {
  let now = 1_000_000;
  const store = new MemoryRegistry();
  const fleet = new FleetNames(BUILT_IN_SPIDERS, store, { ttlMs: 5000, minForceMs: 250, now: () => now });
  const wake = new MemoryFleetWake();
  const ctx = testContext({ spiderTypes: fleet, fleetWake: wake, now: () => now });
  return { store, fleet, ctx, wake, advance: (ms: number) => (now += ms) };
}

describe('FleetNames over the spider types', () => {
  it('knows the built-ins and every type ever registered, and reads the registry once per TTL', async () => {
    const { store, fleet, advance } = setup();
    await store.register(['products'], 1);
    expect([...(await fleet.known())].sort()).toEqual(['browser', 'link', 'products', 'sitemap', 'wandering']);
    await store.register(['catalog'], 2);
    expect((await fleet.known()).has('catalog')).toBe(false);
    expect(store.reads).toBe(1);
    advance(5000);
    expect((await fleet.known()).has('catalog')).toBe(true);
    expect(store.reads).toBe(2);
  });

  it('re-reads at once when forced, but not more than once per minForceMs', async () => {
    const { store, fleet, advance } = setup();
    await fleet.known();
    advance(300);
    await fleet.known({ force: true });
    await fleet.known({ force: true });
    expect(store.reads).toBe(2);
  });

  it('keeps serving the last known types when Redis fails, and fails when it never read them', async () => {
    const { store, fleet, advance } = setup();
    store.failing = true;
    await expect(fleet.known()).rejects.toThrow('Connection is closed.');
    store.failing = false;
    await store.register(['products'], 1);
    await fleet.known();
    store.failing = true;
    advance(6000);
    expect((await fleet.known()).has('products')).toBe(true);
  });
});

describe('the kafka-monitor with the fleet’s spider types', () => {
  it('accepts and queues a type a crawler registered, even when no crawler serves it now', async () => {
    const { store, ctx } = setup();
    await store.register(['products'], 1);
    const result = await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('products')]));
    expect(result.crawl.queued).toBe(1);
    expect(ctx.frontier.enqueueCalls[0]?.spider).toBe('products');
  });

  it('rejects a type never registered, naming the known ones', async () => {
    const { ctx } = setup();
    const result = await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('nope')]));
    expect(result.rejected).toBe(1);
    expect(ctx.sink.values('demo.rejected')).toMatchObject([
      {
        error: 'unknown_spider',
        details: [
          {
            path: '/spiderid',
            message:
              'must be a spider type this cluster runs (link, wandering, sitemap, browser), not "nope"; a type is known once a crawler serving it has started (with none running, this request starts one: send it again in a few minutes)',
          },
        ],
      },
    ]);
  });

  it('calls for a crawler task when it rejects an unregistered type: once per batch, never for a known type', async () => {
    const { store, ctx, wake, advance } = setup();
    await store.register(['products'], 1);
    await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('products'), crawl('link', 'c2')]));
    expect(wake.wants).toEqual([]);
    advance(1000);
    const result = await handleIncoming(
      ctx,
      recordsOf('demo.incoming', [crawl('nope', 'a'), crawl('products', 'b'), crawl('other', 'c')]),
    );
    expect(result.rejected).toBe(2);
    expect(result.crawl.queued).toBe(1);
    expect(wake.wants).toEqual([1_001_000]);
    expect(await wake.wanted(1_001_000 + 60_000)).toBe(true);
  });

  it('still rejects, with a warning, when the call for a task cannot be recorded', async () => {
    const { ctx, wake } = setup();
    wake.failing = true;
    const result = await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('nope')]));
    expect(result.rejected).toBe(1);
    expect(ctx.sink.values('demo.rejected')).toMatchObject([{ error: 'unknown_spider' }]);
    expect(ctx.log.at('warn').map((l) => l.message)).toContain(
      'a request named an unregistered spider type or proxy group; the fleet was not woken',
    );
  });

  it('always accepts the built-ins, and reads the registry once for a whole batch, not per record', async () => {
    const { store, ctx } = setup();
    const records = recordsOf(
      'demo.incoming',
      Array.from({ length: 50 }, (_, i) => crawl(i % 2 ? 'link' : 'sitemap', `c${i}`)),
    );
    const result = await handleIncoming(ctx, records);
    expect(result.crawl.queued).toBe(50);
    expect(store.reads).toBe(1);
  });

  it('reads the registry again, once per batch, for a type registered since its last read', async () => {
    const { store, ctx, advance } = setup();
    await handleIncoming(ctx, recordsOf('demo.incoming', [crawl('link')]));
    await store.register(['fresh'], 2);
    advance(1000);
    const result = await handleIncoming(
      ctx,
      recordsOf('demo.incoming', [crawl('fresh', 'a'), crawl('fresh', 'b'), crawl('nope', 'c')]),
    );
    expect(result.crawl.queued).toBe(2);
    expect(result.rejected).toBe(1);
    expect(store.reads).toBe(2);
  });

  it('lets the redis-monitor answer info for a registered type', async () => {
    const { store, ctx } = setup();
    await store.register(['products'], 1);
    const result = await handleActions(
      ctx,
      recordsOf('demo.actions', [
        { action: 'info', appid: 'testapp', uuid: 'u1', spiderid: 'products', crawlid: 'c1' },
      ]),
    );
    expect(result.replies).toMatchObject([{ uuid: 'u1', spiderid: 'products' }]);
  });
});
