/**
 * The spider sandbox (issue 30 defects 2 and 3): plugin spiders run in a real worker thread with a time and memory
 * budget enforced from outside their code. A runaway page fails alone with a SpiderBudgetError (a failed try); the
 * pages waiting on the same thread run on its replacement, uncharged; the crawler's own event loop never stops.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { SpiderBudgetError, SpiderSandbox, withBudget } from '../../lib/crawl/spiders/sandbox.ts';
import type { FetchResult, SpiderRequest } from '../../lib/crawl/types.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';
import { htmlResponse } from '../helpers/fakes.ts';

const PLUGIN = 'test/fixtures/plugins/runaway.ts';

function request(url: string, depth = 0): SpiderRequest {
  return {
    url,
    depth,
    priority: 1,
    retries: 0,
    crawl: { appid: 'a', crawlid: 'c', spiderid: 'fine', priority: 1, maxdepth: 3, expires: 0 },
  };
}

function response(url: string): FetchResult {
  return htmlResponse(url, '<html><head><title>T</title></head><body><a href="/x">x</a></body></html>');
}

const links = [{ url: 'http://a.example/x', text: 'x' }];

let sandbox: SpiderSandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

function start(budgetMs: number, extra: Partial<ConstructorParameters<typeof SpiderSandbox>[0]> = {}) {
  const log = new RecordingLog();
  sandbox = new SpiderSandbox({ plugins: [PLUGIN], budgetMs, log, ...extra });
  return { sandbox, log };
}

/** A timer on this thread that must keep firing while a plugin runs away: the crawler's event loop is free. */
function ticks(): { stop(): number } {
  let n = 0;
  const t = setInterval(() => n++, 20);
  return {
    stop() {
      clearInterval(t);
      return n;
    },
  };
}

describe('spider sandbox', () => {
  test('a well-behaved plugin: its data, follow entries, attrs and wantsLinks come back as plain data', async () => {
    const { sandbox } = start(5000);
    await sandbox.start();
    const r = await sandbox.run('fine', request('http://a.example/'), response('http://a.example/'), links);
    expect(r).toMatchObject({
      wantsLinks: true,
      follow: [{ url: 'http://a.example/x', attrs: { from: 'http://a.example/' } }],
      followDropped: 0,
      attrs: { seen: 0 },
    });
    expect(JSON.parse(r.dataJson as string)).toEqual({ title: 'T', links: 1 });
    const deep = await sandbox.run('fine', request('http://a.example/', 2), response('http://a.example/'), links);
    expect(deep.wantsLinks).toBe(false);
    expect(JSON.parse(deep.dataJson as string).links).toBe(0);
  });

  test('data that is not JSON comes back truncated; a throw is the plugin error itself, not a budget error', async () => {
    const { sandbox } = start(5000);
    const odd = await sandbox.run('odd', request('http://a.example/'), response('http://a.example/'), links);
    expect(odd.dataTruncated).toBe(true);
    const thrown = await sandbox
      .run('throws-in-thread', request('http://a.example/'), response('http://a.example/'), links)
      .catch((e: Error) => e);
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(SpiderBudgetError);
    // As thrown: its own name and message, so the page's exception reads 'Error: plugin bug'.
    expect([(thrown as Error).name, (thrown as Error).message]).toEqual(['Error', 'plugin bug']);
    expect(sandbox.replaced).toBe(0);
  });

  test('an endless synchronous loop fails its page at the budget; the thread is replaced and the event loop never stops', async () => {
    const { sandbox, log } = start(400);
    await sandbox.start();
    const clock = ticks();
    const started = Date.now();
    const error = await sandbox
      .run('loops', request('http://a.example/loop'), response('http://a.example/loop'), links)
      .catch((e: Error) => e);
    const took = Date.now() - started;
    expect(clock.stop()).toBeGreaterThan(5);
    expect(error).toBeInstanceOf(SpiderBudgetError);
    expect((error as Error).message).toMatch(/spider "loops": parse ran for more than 400 ms/);
    expect(took).toBeLessThan(5000);
    expect(sandbox.replaced).toBe(1);
    expect(log.lines.some((l) => l.message === 'spider thread replaced')).toBe(true);
    // The replacement serves the next page.
    const ok = await sandbox.run('fine', request('http://a.example/'), response('http://a.example/'), links);
    expect(ok.follow).toHaveLength(1);
  });

  test('pages waiting behind a runaway page run on the new thread, uncharged', async () => {
    const { sandbox } = start(600);
    await sandbox.start();
    const stuck = sandbox
      .run('loops', request('http://a.example/loop'), response('http://a.example/loop'), links)
      .catch((e: Error) => e);
    const waiting = Array.from({ length: 5 }, (_, i) =>
      sandbox.run('fine', request(`http://a.example/${i}`), response(`http://a.example/${i}`), links),
    );
    expect(await stuck).toBeInstanceOf(SpiderBudgetError);
    const results = await Promise.all(waiting);
    expect(results.map((r) => r.follow.length)).toEqual([1, 1, 1, 1, 1]);
    expect(sandbox.replaced).toBe(1);
  });

  test('a page busy within its budget is not charged, nor are those waiting behind it', async () => {
    const { sandbox } = start(1000);
    await sandbox.start();
    const all = await Promise.all([
      sandbox.run('slow', request('http://a.example/s1'), response('http://a.example/s1'), links),
      sandbox.run('slow', request('http://a.example/s2'), response('http://a.example/s2'), links),
      sandbox.run('slow', request('http://a.example/s3'), response('http://a.example/s3'), links),
      sandbox.run('slow', request('http://a.example/s4'), response('http://a.example/s4'), links),
    ]);
    // 4 × 300 ms on one thread: the last waited past one budget behind the others, and still succeeded.
    expect(all.map((r) => JSON.parse(r.dataJson as string).slow)).toHaveLength(4);
    expect(sandbox.replaced).toBe(0);
  });

  test('a promise that never settles fails its page at the budget and frees it; the thread is replaced after maxAbandoned', async () => {
    const { sandbox } = start(200, { maxAbandoned: 3 });
    await sandbox.start();
    for (let i = 0; i < 3; i++) {
      const e = await sandbox
        .run('hangs', request(`http://a.example/h${i}`), response('http://a.example/'), links)
        .catch((x: Error) => x);
      expect(e).toBeInstanceOf(SpiderBudgetError);
      expect((e as Error).message).toContain('did not finish within 200 ms');
    }
    expect(sandbox.replaced).toBe(1);
    const ok = await sandbox.run('fine', request('http://a.example/'), response('http://a.example/'), links);
    expect(ok.wantsLinks).toBe(true);
  });

  test('a thread blocked after an await (outside the synchronous call) is found by its heartbeat and replaced', async () => {
    const { sandbox } = start(500, { staleBeatMs: 300 });
    await sandbox.start();
    const clock = ticks();
    const e = await sandbox
      .run('loops-later', request('http://a.example/l'), response('http://a.example/l'), links)
      .catch((x: Error) => x);
    expect(clock.stop()).toBeGreaterThan(5);
    expect(e).toBeInstanceOf(SpiderBudgetError);
    expect((e as Error).message).toContain('blocked its thread');
    expect(sandbox.replaced).toBe(1);
    const ok = await sandbox.run('fine', request('http://a.example/'), response('http://a.example/'), links);
    expect(ok.follow).toHaveLength(1);
  });

  test('a plugin that allocates without end kills its thread, not the process; its page fails with the reason', async () => {
    const { sandbox } = start(20_000, { memoryMb: 64 });
    await sandbox.start();
    const before = process.memoryUsage().heapUsed;
    const e = await sandbox
      .run('hog', request('http://a.example/hog'), response('http://a.example/hog'), links)
      .catch((x: Error) => x);
    expect(e).toBeInstanceOf(SpiderBudgetError);
    expect((e as Error).message).toContain('ran out of memory');
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(64 * 1024 * 1024);
    const ok = await sandbox.run('fine', request('http://a.example/'), response('http://a.example/'), links);
    expect(ok.follow).toHaveLength(1);
  }, 30_000);
});

describe('withBudget (built-in spiders on the crawler event loop)', () => {
  test('a value is returned as it is, with no timer', () => {
    expect(withBudget(5, 10, () => 'x')).toBe(5);
  });

  test('a promise that never settles is a SpiderBudgetError at the budget', async () => {
    const e = await Promise.resolve(withBudget(new Promise(() => undefined), 50, () => 'too slow')).catch(
      (x: Error) => x,
    );
    expect(e).toBeInstanceOf(SpiderBudgetError);
    expect((e as Error).message).toBe('too slow');
  });

  test('a promise that settles in time is its value', async () => {
    expect(await withBudget(Promise.resolve(7), 1000, () => 'x')).toBe(7);
  });
});
