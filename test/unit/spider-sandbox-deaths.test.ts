/**
 * The spider sandbox when its worker thread dies on its own (issue 48 item 7): real worker threads running the
 * fixture plugins of test/fixtures/plugins/thread-killers.ts and dying-thread.ts. Only the page whose parse was in
 * progress is charged, with the real cause (the heap, an uncaught exception, an exit code), never the time budget;
 * pages queued behind it run again once, uncharged; a thread that keeps dying still ends every page.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { MAX_UNBLAMED_DEATHS, SpiderBudgetError, SpiderSandbox } from '../../lib/crawl/spiders/sandbox.ts';
import type { SpiderRequest } from '../../lib/crawl/types.ts';
import { RecordingLog } from '../helpers/fake-stores.ts';
import { htmlResponse } from '../helpers/fakes.ts';

const KILLERS = 'test/fixtures/plugins/thread-killers.ts';
const DYING = 'test/fixtures/plugins/dying-thread.ts';

let sandbox: SpiderSandbox | undefined;
let dir: string;
let parseLog: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sandbox-deaths-'));
  parseLog = join(dir, 'parses.log');
  // Threads copy the environment when they start: every thread of the test appends to this file.
  process.env.CC_PARSE_LOG = parseLog;
});
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
  delete process.env.CC_PARSE_LOG;
  rmSync(dir, { recursive: true, force: true });
});

function start(plugin: string) {
  const log = new RecordingLog();
  sandbox = new SpiderSandbox({ plugins: [plugin], budgetMs: 20_000, memoryMb: 64, log });
  return { sandbox, log };
}

function request(spider: string, url: string): SpiderRequest {
  return {
    url,
    depth: 0,
    priority: 1,
    retries: 0,
    crawl: { appid: 'a', crawlid: 'c', spiderid: spider, priority: 1, maxdepth: 3, expires: 0 },
  };
}

/** Runs `urls` at once (in that order) and says how each ended: 'ok', or the error's name and message. */
async function runAll(s: SpiderSandbox, spider: string, urls: string[]): Promise<string[]> {
  return Promise.all(
    urls.map((url) =>
      s
        .run(
          spider,
          request(spider, url),
          htmlResponse(url, 'plain', { headers: { 'content-type': ['text/plain'] } }),
          [],
        )
        .then(
          () => 'ok',
          (e: Error) => `${e instanceof SpiderBudgetError ? 'SpiderBudgetError' : e.name}: ${e.message}`,
        ),
    ),
  );
}

/** Parses per URL, across every thread the test started. */
function parses(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const url of readFileSync(parseLog, 'utf8').split('\n').filter(Boolean)) {
    counts.set(url, (counts.get(url) ?? 0) + 1);
  }
  return counts;
}

const KILL = 'http://a.example/kill';
const others = (n: number) => Array.from({ length: n }, (_, i) => `http://a.example/t${i}`);
const HEAP = 'ran out of memory (its heap limit, CRAWLER_PLUGIN_MEMORY_MB=64; ERR_WORKER_OUT_OF_MEMORY)';

describe('spider sandbox: a thread that dies charges only the page whose parse was in progress', () => {
  test.each([
    ['heap-now', 'synchronously'],
    ['heap-async', 'between awaits'],
  ])(
    'a %s page that runs out of heap (%s) with 20 pages queued: only it is charged, naming the heap; the 20 succeed with one parse each',
    async (spider) => {
      const { sandbox, log } = start(KILLERS);
      await sandbox.start();
      const queued = others(20);
      const [killed, ...rest] = await runAll(sandbox, spider, [KILL, ...queued]);
      expect(killed).toBe(
        `SpiderBudgetError: spider "${spider}": the spider thread ${HEAP} while this page's parse was in progress; the thread was replaced`,
      );
      expect(killed).not.toContain('CRAWLER_PARSE_TIMEOUT_MS');
      expect(rest).toEqual(queued.map(() => 'ok'));
      const counts = parses();
      expect(counts.get(KILL)).toBe(1);
      expect(queued.map((u) => counts.get(u))).toEqual(queued.map(() => 1));
      expect(sandbox.replaced).toBe(1);
      expect(log.at('error').map((l) => [l.message, l.fields?.url, l.fields?.reason])).toEqual([
        ['spider thread died', KILL, HEAP],
      ]);
    },
    30_000,
  );

  test('several async parses in progress when the heap runs out: each runs again alone, and only the one that kills a thread is charged', async () => {
    const { sandbox } = start(KILLERS);
    await sandbox.start();
    const pages = others(5);
    const [killed, ...rest] = await runAll(sandbox, 'heap-later', [KILL, ...pages]);
    expect(killed).toContain(`the spider thread ${HEAP} while this page's parse was in progress`);
    expect(rest).toEqual(pages.map(() => 'ok'));
    // Once on the thread that died with all six in progress, once alone on the next.
    const counts = parses();
    expect([KILL, ...pages].map((u) => counts.get(u))).toEqual([2, 2, 2, 2, 2, 2]);
    expect(sandbox.replaced).toBe(2);
    // Back to pages side by side: a page sent now runs at once.
    expect(await runAll(sandbox, 'heap-later', ['http://a.example/after'])).toEqual(['ok']);
  }, 30_000);

  test('a page sent while suspects run alone waits for them, then runs once, uncharged', async () => {
    const { sandbox } = start(KILLERS);
    await sandbox.start();
    const first = runAll(sandbox, 'heap-later', [KILL, 'http://a.example/a', 'http://a.example/b']);
    await expect.poll(() => sandbox.replaced, { timeout: 10_000, interval: 10 }).toBe(1);
    const late = await runAll(sandbox, 'heap-later', ['http://a.example/late']);
    expect(late).toEqual(['ok']);
    expect((await first).slice(1)).toEqual(['ok', 'ok']);
    expect(parses().get('http://a.example/late')).toBe(1);
  }, 30_000);

  test.each([
    ['stray-throw', 'TypeError: a plugin timer failed'],
    ['stray-string', 'a plugin timer threw a string'],
  ])(
    'an uncaught exception in the thread (%s) fails the page in progress with what was thrown; queued pages succeed',
    async (spider, thrown) => {
      const { sandbox } = start(KILLERS);
      await sandbox.start();
      const [killed, ...rest] = await runAll(sandbox, spider, [KILL, ...others(5)]);
      expect(killed).toBe(
        `SpiderBudgetError: spider "${spider}": the spider thread died of an uncaught exception (${thrown}) while this page's parse was in progress; the thread was replaced`,
      );
      expect(rest).toEqual(others(5).map(() => 'ok'));
    },
    30_000,
  );

  test('a plugin that exits its thread fails the page in progress with the exit code, not the time budget', async () => {
    const { sandbox } = start(KILLERS);
    await sandbox.start();
    const [killed, ...rest] = await runAll(sandbox, 'exits', [KILL, ...others(5)]);
    expect(killed).toBe(
      `SpiderBudgetError: spider "exits": the spider thread exited with code 7 while this page's parse was in progress; the thread was replaced`,
    );
    expect(rest).toEqual(others(5).map(() => 'ok'));
    expect(parses().get(KILL)).toBe(1);
  }, 30_000);
});

describe('spider sandbox: a thread that keeps dying ends every page in bounded time', () => {
  test('a plugin that runs out of heap on every page: each page is charged once, after at most two parses, and no thread more is started', async () => {
    const { sandbox } = start(KILLERS);
    await sandbox.start();
    const pages = others(4);
    const ends = await runAll(sandbox, 'heap-always', pages);
    expect(ends).toEqual(pages.map(() => expect.stringContaining(`the spider thread ${HEAP}`)));
    const counts = parses();
    expect(pages.map((u) => counts.get(u))).toEqual(pages.map(() => 2));
    // The thread with all four in progress, then one per page run alone: bounded, whatever the machine's speed.
    expect(sandbox.replaced).toBe(5);
  }, 60_000);

  test(`a thread that dies with no page in progress: its queued pages fail after ${MAX_UNBLAMED_DEATHS} such deaths, never parsed, saying so`, async () => {
    const { sandbox } = start(DYING);
    await sandbox.start();
    const pages = others(4);
    const ends = await runAll(sandbox, 'dying', pages);
    expect(ends).toEqual(
      pages.map(
        () =>
          `SpiderBudgetError: spider "dying": ${MAX_UNBLAMED_DEATHS} spider threads died while this page waited on them, the last one exited with code 3; the page was not parsed`,
      ),
    );
    expect(sandbox.replaced).toBe(MAX_UNBLAMED_DEATHS);
  }, 30_000);
});
