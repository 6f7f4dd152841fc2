/**
 * Compression bombs at once under a real memory limit (issue 48 item 8), shared by the poison test (a CI size) and
 * bench/scenarios/sizes-bombs.ts (60 at once): a crawler worker PROCESS runs inside a memory cgroup of its own
 * (test/helpers/memory-cgroup.ts), with as many fetch slots as there are bombs, and crawls that many bomb URLs of the
 * hostile site (each 20 MiB of NULs, gzipped to ~20 KB) through the real local cluster, bodies over the message limit
 * going to a body store directory. It reports what the kernel saw (OOM kills, peak memory) and what every page said.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { crawlPages, startTestCluster } from './cluster.ts';
import { type CrawlerProcess, startCrawlerProcess } from './crawler-process.ts';
import { bombPath, startHostileSite } from './hostile-site.ts';
import { createMemoryCgroup } from './memory-cgroup.ts';
import { uniqueName, waitUntil } from './services.ts';

export interface BombRunOptions {
  /** Bomb pages crawled at once. */
  bombs: number;
  /** The worker's cgroup memory limit. */
  limitBytes: number;
  /** How long to wait for every page. @default 300000 */
  timeoutMs?: number;
  progress?: (message: string) => void;
}

/** One page message, as far as the run checks it. */
interface BombPage {
  success: boolean;
  body_truncated?: boolean;
  body_cut?: string;
  body_cut_bytes?: number;
  body_message_cut?: boolean;
  body_ref?: string;
  /** Bytes of the stored body (`body_ref`'s file), when there is one. */
  storedBytes?: number;
}

export interface BombRun {
  /** Page messages of the bomb crawl (one per bomb when every page ended with a message). */
  pages: BombPage[];
  /** Processes the kernel killed in the worker's cgroup for lack of memory. */
  oomKills: number;
  /** The most memory the cgroup held. */
  peakBytes: number | undefined;
  cgroupVersion: 1 | 2;
  /** Whether the worker was still running when the last page arrived (or the wait gave up). */
  workerAlive: boolean;
  /** Its exit, when it was not. */
  workerExit?: string;
  /** Milliseconds from the feed to the last page (or to giving up). */
  elapsedMs: number;
  /** The worker's last output, for failure messages. */
  output: string;
}

export async function runBombs(options: BombRunOptions): Promise<BombRun> {
  const say = options.progress ?? (() => {});
  const site = await startHostileSite('bombs.test');
  const store = mkdtempSync(join(tmpdir(), 'bomb-bodies-'));
  const cgroup = createMemoryCgroup(uniqueName('crawl-bombs'), options.limitBytes);
  const t = await startTestCluster({
    ALLOW_PRIVATE_NETWORKS: true,
    QUEUE_HITS: 10_000,
    QUEUE_WINDOW: 1,
    ROBOTSTXT_OBEY: false,
    LOG_LEVEL: 'ERROR',
  });
  let worker: CrawlerProcess | undefined;
  try {
    const pages = await t.collect(t.topics.crawledFirehose);
    worker = startCrawlerProcess(
      t.vars,
      {
        CRAWLER_HOST_MAP: site.hostMap,
        CRAWLER_CONCURRENCY: options.bombs,
        CRAWLER_DOMAIN_CONCURRENCY: options.bombs,
        BODY_STORE_DIR: store,
        LOCAL_BODY_STORE: 'dir',
        // Bombs are cut, not failed: no retry should be needed; a slow one is not retried either.
        RETRY_TIMES: 0,
      },
      cgroup.wrap,
    );
    const crawlid = 'bombs';
    say(`worker ${worker.pid} in cgroup v${cgroup.version} ${cgroup.path}, limit ${options.limitBytes} bytes`);
    const started = Date.now();
    await t.feed(
      Array.from({ length: options.bombs }, (_, i) => ({
        url: site.url(bombPath(i)),
        appid: 'bombs',
        crawlid,
        maxdepth: 0,
      })),
    );
    let exited: string | undefined;
    void worker.exited.then((e: { code: number | null; signal: string | null }) => {
      exited = `code ${e.code}, signal ${e.signal}`;
    });
    await waitUntil(
      `${options.bombs} bomb pages`,
      () => crawlPages(pages, crawlid).length >= options.bombs || exited !== undefined,
      options.timeoutMs ?? 300_000,
    ).catch(() => undefined);
    const elapsedMs = Date.now() - started;
    const workerAlive = exited === undefined;
    say(`${crawlPages(pages, crawlid).length} pages in ${elapsedMs} ms; worker ${workerAlive ? 'alive' : exited}`);
    const got = crawlPages(pages, crawlid).map((m): BombPage => {
      const page: BombPage = { success: m.success === true };
      for (const key of ['body_truncated', 'body_cut', 'body_cut_bytes', 'body_message_cut', 'body_ref'] as const)
        if (key in m) Object.assign(page, { [key]: m[key] });
      if (typeof page.body_ref === 'string' && page.body_ref.startsWith('file:'))
        page.storedBytes = statSync(fileURLToPath(page.body_ref), { throwIfNoEntry: false })?.size;
      return page;
    });
    const output = worker.output();
    await worker.stop();
    const run: BombRun = {
      pages: got,
      oomKills: cgroup.oomKills(),
      peakBytes: cgroup.peakBytes(),
      cgroupVersion: cgroup.version,
      workerAlive,
      elapsedMs,
      output,
    };
    if (exited !== undefined) run.workerExit = exited;
    return run;
  } finally {
    await worker?.stop('SIGKILL');
    await t.stop();
    await site.close();
    rmSync(store, { recursive: true, force: true });
    cgroup.remove();
  }
}
