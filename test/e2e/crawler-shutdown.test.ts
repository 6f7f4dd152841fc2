/**
 * Graceful shutdown of a crawler worker process (functions/crawler/main.ts, as ECS stops a Fargate task):
 * SIGTERM → stop leasing, finish what is in flight until SHUTDOWN_DEADLINE_MS, release the rest back to the
 * queue, flush, exit 0. Nothing is lost: a worker started afterwards finishes the crawl.
 *
 * Leases are taken with LEASE_TIMEOUT of an hour, so no reclaim can be what rescues a request here: whatever
 * the stopped worker did not finish, it must have given back itself.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import type { Variables } from '../../lib/config/index.ts';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import { crawlerNode } from '../../localstack/runtime/crawler-node.ts';
import { envOf } from '../../localstack/runtime/crawler-workers.ts';
import { type FixtureSite, type SiteOptions, startSite } from '../../localstack/site/site.ts';
import { type Collector, crawlPages, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from '../helpers/crawler-process.ts';
import { waitUntil } from '../helpers/services.ts';

const APPID = 'shutdown';
/** Room for a loaded machine between the deadline and the exit (producer flush, connections closed). */
const EXIT_MARGIN_MS = 8000;

describe('a crawler worker given SIGTERM', () => {
  let t: TestCluster;
  let pages: Collector;
  let outbound: Collector;

  beforeAll(async () => {
    t = await startTestCluster(
      {
        ALLOW_PRIVATE_NETWORKS: true,
        QUEUE_HITS: 1000,
        QUEUE_WINDOW: 1,
        QUEUE_MODERATED: false,
        LEASE_TIMEOUT: 3600,
        LOG_LEVEL: 'WARN',
      },
      { crawlerWorkers: 0 },
    );
    pages = await t.collect(t.topics.crawledFirehose);
    outbound = await t.collect(t.topics.outboundFirehose);
  });
  afterAll(async () => {
    await t?.stop();
  });

  const pagesOf = (crawlid: string) => crawlPages(pages, crawlid);
  const info = (crawlid: string) => t.deps.ctx.frontier.crawlInfo('link', APPID, crawlid);

  async function site(options: SiteOptions): Promise<{ site: FixtureSite; pageHits: () => number }> {
    let hits = 0;
    const s = await startSite({
      ...options,
      onRequest: (path) => {
        if (path.startsWith('/p/')) hits++;
      },
    });
    onTestFinished(() => s.close());
    return { site: s, pageHits: () => hits };
  }

  function worker(overrides: Partial<Variables>): CrawlerProcess {
    const w = startCrawlerProcess(t.vars, { LEASE_TIMEOUT: 3600, LOG_LEVEL: 'INFO', ...overrides });
    onTestFinished(async () => {
      await w.stop('SIGKILL');
    });
    return w;
  }

  /** The worker's own account of its shutdown (its `stopped` log line). */
  function stoppedLine(w: CrawlerProcess): { pages: number; released: number } | undefined {
    for (const line of w.output().split('\n')) {
      if (!line.includes('"stopped"')) continue;
      const entry = JSON.parse(line) as { message?: string; pages?: number; released?: number };
      if (entry.message === 'stopped') return { pages: entry.pages ?? 0, released: entry.released ?? 0 };
    }
    return undefined;
  }

  /** Waits for the crawl's completion notice and every expected page, and checks each arrived exactly once. */
  async function expectEveryPage(crawlid: string, expected: string[]) {
    await outbound.waitFor((m) => m.action === 'complete' && m.crawlid === crawlid, `${crawlid} to complete`, 90_000);
    await waitUntil(`${expected.length} pages of ${crawlid}`, () => pagesOf(crawlid).length >= expected.length);
    const got = pagesOf(crawlid).map((m) => m.url as string);
    expect([...got].sort()).toEqual([...expected].sort());
    expect(pagesOf(crawlid).every((m) => m.success === true)).toBe(true);
  }

  test("runs on the crawler image's Node (CRAWLER_NODE, else this Node) and names it in its start line", async () => {
    const w = worker({});
    const expected = execFileSync(crawlerNode(), ['--version'], { encoding: 'utf8' }).trim();
    let started: { node?: string } | undefined;
    await waitUntil('its start line', () => {
      const line = w
        .output()
        .split('\n')
        .find((l) => l.includes('"crawler started"'));
      started = line ? (JSON.parse(line) as { node?: string }) : undefined;
      return started !== undefined;
    });
    expect(started?.node).toBe(expected);
    const exit = await w.stop('SIGTERM');
    expect(exit, w.output()).toMatchObject({ code: 0, signal: null });
  });

  test('mid-crawl, it finishes its in-flight pages, exits 0 within the deadline, and a new worker crawls the rest: nothing lost', async () => {
    const { site: s } = await site({ pages: 60, links: 4, hosts: ['term-a.test', 'term-b.test'], latencyMs: 300 });
    const expected = [...s.reachable(0, 3)].map((n) => s.url(n)); // 53 pages, ~4 s at 4 fetches at a time
    const deadlineMs = 10_000;
    const first = worker({ CRAWLER_HOST_MAP: s.hostMap, CRAWLER_CONCURRENCY: 4, SHUTDOWN_DEADLINE_MS: deadlineMs });
    await t.feed([{ url: s.url(0), appid: APPID, crawlid: 'term', maxdepth: 3 }]);
    await waitUntil('the crawl to be under way', () => pagesOf('term').length >= 5, 60_000);

    const signalledAt = Date.now();
    const exit = await first.stop('SIGTERM');
    expect(exit, first.output()).toMatchObject({ code: 0, signal: null });
    expect(exit.atMs - signalledAt).toBeLessThan(deadlineMs + EXIT_MARGIN_MS);
    // Pages take 300 ms, far inside the deadline: the in-flight ones were finished (published and acked), not
    // released, and the worker holds nothing any more.
    expect(stoppedLine(first), first.output()).toMatchObject({ released: 0 });
    const left = await info('term');
    expect(left).toMatchObject({ leased: 0 });
    expect(left?.queued).toBeGreaterThan(0);
    expect(pagesOf('term').length).toBeLessThan(expected.length);

    worker({ CRAWLER_HOST_MAP: s.hostMap, CRAWLER_CONCURRENCY: 4 });
    await expectEveryPage('term', expected);
  });

  test('with a 1 s deadline and 3 s pages, it releases its in-flight leases at the deadline, and a new worker finishes the crawl without any reclaim', async () => {
    const { site: s, pageHits } = await site({ pages: 12, links: 3, hosts: ['slow-term.test'], latencyMs: 3000 });
    const expected = [...s.reachable(0, 1)].map((n) => s.url(n)); // the seed and its 3 children
    const deadlineMs = 1000;
    const first = worker({ CRAWLER_HOST_MAP: s.hostMap, CRAWLER_CONCURRENCY: 4, SHUTDOWN_DEADLINE_MS: deadlineMs });
    await t.feed([{ url: s.url(0), appid: APPID, crawlid: 'slow-term', maxdepth: 1 }]);
    await waitUntil('the seed page', () => pagesOf('slow-term').length >= 1, 60_000);
    // The children are being fetched (3 s each) when the signal comes.
    await waitUntil('the children to be fetched', () => pageHits() >= expected.length, 30_000);

    const signalledAt = Date.now();
    const exit = await first.stop('SIGTERM');
    expect(exit, first.output()).toMatchObject({ code: 0, signal: null });
    expect(exit.atMs - signalledAt).toBeLessThan(deadlineMs + EXIT_MARGIN_MS);
    expect(stoppedLine(first), first.output()).toMatchObject({ pages: 1, released: expected.length - 1 });
    // Given back to the queue, not left leased until a reclaim after LEASE_TIMEOUT (an hour here).
    expect(await info('slow-term')).toMatchObject({ leased: 0, queued: expected.length - 1 });
    expect(pagesOf('slow-term')).toHaveLength(1);

    worker({ CRAWLER_HOST_MAP: s.hostMap, CRAWLER_CONCURRENCY: 4 });
    await expectEveryPage('slow-term', expected);
  });

  test('started by the local runtime, it drains and exits when that process is killed with SIGKILL: no orphan, nothing lost', async () => {
    const { site: s } = await site({ pages: 60, links: 4, hosts: ['orphan-a.test', 'orphan-b.test'], latencyMs: 300 });
    const expected = [...s.reachable(0, 3)].map((n) => s.url(n));
    const deadlineMs = 10_000;
    const vars = {
      ...t.vars,
      LEASE_TIMEOUT: 3600,
      LOG_LEVEL: 'INFO' as const,
      CRAWLER_HOST_MAP: s.hostMap,
      CRAWLER_CONCURRENCY: 4,
      SHUTDOWN_DEADLINE_MS: deadlineMs,
    };
    // A stand-in for `local`: a process that starts one worker with the runtime's own code
    // (localstack/runtime/crawler-workers.ts), the worker's output inherited, and logs its pid.
    const script = [
      `const { startCrawlerWorkers } = await import(${JSON.stringify(join(REPO_ROOT, 'localstack/runtime/crawler-workers.ts'))});`,
      `const { config } = await import(${JSON.stringify(join(REPO_ROOT, 'lib/config/index.ts'))});`,
      'startCrawlerWorkers(config(), 1, (level, message, fields) => console.error(JSON.stringify({ runtime: message, ...fields })), process.env);',
    ].join('\n');
    const parent = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: envOf(vars, process.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    for (const stream of [parent.stdout, parent.stderr])
      stream?.on('data', (d: Buffer) => (output += d.toString('utf8')));
    let workerPid = 0;
    onTestFinished(() => {
      for (const pid of [parent.pid, workerPid]) {
        try {
          if (pid) process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
    });
    await waitUntil('the worker to start', () => {
      const line = output.split('\n').find((l) => l.includes('"crawler worker 0 started"'));
      workerPid = line ? (JSON.parse(line) as { pid: number }).pid : 0;
      return workerPid > 0;
    });
    await t.feed([{ url: s.url(0), appid: APPID, crawlid: 'orphan', maxdepth: 3 }]);
    await waitUntil('the crawl to be under way', () => pagesOf('orphan').length >= 5, 60_000);

    const killedAt = Date.now();
    parent.kill('SIGKILL');
    // It stops as on SIGTERM, finishes its in-flight pages within the deadline, and its process ends.
    await waitUntil('the worker to stop', () => !alive(workerPid), deadlineMs + EXIT_MARGIN_MS);
    expect(Date.now() - killedAt).toBeLessThan(deadlineMs + EXIT_MARGIN_MS);
    const lines = output.split('\n').filter((l) => l.startsWith('{'));
    const stopping = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.message === 'stopping');
    expect(stopping, output).toMatchObject({ signal: 'parent-exit' });
    expect(
      lines.some((l) => l.includes('"message":"stopped"')),
      output,
    ).toBe(true);
    expect(await info('orphan')).toMatchObject({ leased: 0 });

    worker({ CRAWLER_HOST_MAP: s.hostMap, CRAWLER_CONCURRENCY: 4 });
    await expectEveryPage('orphan', expected);
  });
});

/** Whether a process is running (a zombie left for a reaper that never comes counts as ended). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
