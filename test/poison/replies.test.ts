/**
 * Poison tier, replies (issue 30, defects 5-8), on the real local cluster with KAFKA_APPID_TOPICS=true: a missing
 * per-app topic holds up nobody (replies, expiry, pages), many crawls expiring at once get one notice each, REST
 * `/feed` never answers with another request's reply, and a re-fed finished crawl is told why nothing comes.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRestDeps, type RestDeps } from '../../functions/rest/deps.ts';
import { createMonitorDeps } from '../../functions/shared/deps.ts';
import { crawledAppTopic, outboundAppTopic } from '../../lib/kafka/topics.ts';
import { expireCrawls } from '../../lib/monitor/expire-crawls.ts';
import { silentLog } from '../../lib/ports.ts';
import { type RestServer, startRestServer } from '../../localstack/runtime/rest-server.ts';
import { type Collector, completeNotice, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { startCrawlerProcess } from '../helpers/crawler-process.ts';
import { type HostileSite, startHostileSite } from '../helpers/hostile-site.ts';
import { createTestTopics, waitUntil } from '../helpers/services.ts';

/** Has its per-app topics. */
const OK_APP = 'okapp';
/** Has none: every copy to `outbound_ghostapp` / `crawled_ghostapp` meets a missing topic. */
const GHOST_APP = 'ghostapp';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

describe('replies with per-app topics on, some of them missing', () => {
  let t: TestCluster;
  let site: HostileSite;
  let outbound: Collector;
  let okOutbound: Collector;
  let rest: RestServer;
  let restDeps: RestDeps;
  let appTopics: string[];

  beforeAll(async () => {
    site = await startHostileSite();
    t = await startTestCluster(
      { KAFKA_APPID_TOPICS: true, ALLOW_PRIVATE_NETWORKS: true, QUEUE_HITS: 1000, QUEUE_WINDOW: 1, LOG_LEVEL: 'ERROR' },
      { scheduleEveryMs: 500 },
    );
    const prefix = t.vars.KAFKA_TOPIC_PREFIX;
    appTopics = [outboundAppTopic(prefix, OK_APP), crawledAppTopic(prefix, OK_APP)];
    const admin = t.kafka.admin();
    await admin.connect();
    await createTestTopics(admin, appTopics);
    await admin.disconnect();
    outbound = await t.collect(t.topics.outboundFirehose);
    okOutbound = await t.collect(outboundAppTopic(prefix, OK_APP));
    restDeps = createRestDeps('rest-poison', silentLog, t.vars);
    rest = await startRestServer({ context: restDeps.ctx, port: 0 });
  });
  afterAll(async () => {
    await rest?.close();
    await restDeps?.close();
    await t?.stop();
    const admin = t?.kafka.admin();
    await admin?.connect();
    await admin?.deleteTopics({ topics: appTopics }).catch(() => undefined);
    await admin?.disconnect();
    await site?.close();
  });

  /** Feeds an info request and resolves with the ms until its reply is on the firehose. */
  async function infoLatency(appid: string, uuid: string): Promise<number> {
    const started = Date.now();
    await t.feed([{ action: 'info', appid, uuid, spiderid: 'link' }]);
    await outbound.waitFor((m) => m.uuid === uuid, `the reply to ${uuid}`, 30_000);
    return Date.now() - started;
  }

  test("a reply to an app whose per-app topic is missing does not hold up another app's reply", async () => {
    await infoLatency(GHOST_APP, 'ghost-0');
    // The redis-monitor spent kafkajs's 5-7 s of metadata retries on the copy above before it read the next batch.
    const other = await infoLatency(OK_APP, 'ok-0');
    expect(other).toBeLessThan(1500);
    await okOutbound.waitFor((m) => m.uuid === 'ok-0', 'the per-app copy of ok-0', 5000);
  });

  test('twenty replies to the app without a topic, one after the other, take well under a second each', async () => {
    const started = Date.now();
    for (let i = 1; i <= 20; i++) expect(await infoLatency(GHOST_APP, `ghost-${i}`)).toBeLessThan(1500);
    // 20 × 5-7 s before.
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  test("pages of an app without per-app topics are delivered at the crawler's pace, not one per Kafka timeout", async () => {
    const worker = startCrawlerProcess(t.vars, { CRAWLER_HOST_MAP: site.hostMap, CRAWLER_CONCURRENCY: 4 });
    try {
      // Warm: the worker is up and has met the missing topics once.
      await t.feed([{ url: site.url('/ok?warm'), appid: GHOST_APP, crawlid: 'pages-warm' }]);
      await completeNotice(outbound, 'pages-warm', 60_000);
      // One crawl after the other: each page's per-app copy is awaited before its ack, and the complete notice's
      // after that; each crawl took ~2.9 s of kafkajs metadata retries on them before, ~0.2 s now.
      for (let i = 0; i < 5; i++) {
        const started = Date.now();
        await t.feed([{ url: site.url(`/ok?n=${i}`), appid: GHOST_APP, crawlid: `pages-${i}` }]);
        await completeNotice(outbound, `pages-${i}`, 60_000);
        expect(Date.now() - started).toBeLessThan(1200);
      }
    } finally {
      await worker.stop();
    }
  });

  test('2,000 crawls expiring at once with a missing per-app topic get exactly one expired notice each', async () => {
    const n = 2000;
    const expires = Math.floor(Date.now() / 1000) + 4;
    const crawlids = Array.from({ length: n }, (_, i) => `exp-${i}`);
    for (let i = 0; i < n; i += 500) {
      await t.feed(
        crawlids
          .slice(i, i + 500)
          .map((crawlid, k) => ({ url: site.url(`/ok?e=${i + k}`), appid: GHOST_APP, crawlid, expires })),
      );
    }
    const expired = () =>
      outbound.messages.filter((m) => m.action === 'expired' && String(m.crawlid).startsWith('exp-'));
    await waitUntil(`${n} expired notices`, () => expired().length >= n, 60_000);
    // Later runs (every 500 ms) find nothing more to announce.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const notices = expired();
    expect(notices).toHaveLength(n);
    expect(new Set(notices.map((m) => m.crawlid)).size).toBe(n);
  }, 120_000);

  test('an expiry run aborted midway stops at once, and with the scheduled runs each crawl still gets one notice', async () => {
    const n = 1000;
    const expires = Math.floor(Date.now() / 1000) + 3;
    const crawlids = Array.from({ length: n }, (_, i) => `abort-${i}`);
    await t.feed(crawlids.map((crawlid, i) => ({ url: site.url(`/ok?a=${i}`), appid: GHOST_APP, crawlid, expires })));
    // A second process's expiry (its own connections), racing the cluster's scheduled runs for the same crawls.
    const other = await createMonitorDeps('expire-poison', silentLog, t.vars);
    try {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expires * 1000 - Date.now()) + 50));
      const abort = new AbortController();
      let abortedAt: number | undefined;
      setTimeout(() => {
        abortedAt = Date.now();
        abort.abort();
      }, 20);
      const result = await expireCrawls(other.ctx, { signal: abort.signal });
      // It ends before its next crawl once aborted (or earlier, when the scheduled runs claimed the rest first).
      expect(Date.now() - (abortedAt ?? Date.now())).toBeLessThan(500);
      expect(result.expired).toBeLessThan(n);
      const mine = () =>
        outbound.messages.filter((m) => m.action === 'expired' && String(m.crawlid).startsWith('abort-'));
      await waitUntil(`${n} expired notices`, () => mine().length >= n, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(mine()).toHaveLength(n);
      expect(new Set(mine().map((m) => m.crawlid)).size).toBe(n);
    } finally {
      await other.close();
    }
  }, 120_000);

  test("REST /feed answers with its own app's fresh reply, never an older reply stored under the same uuid", async () => {
    await t.feed([{ uuid: 'dup1', appid: 'testapp', stats: 'queue' }]);
    await outbound.waitFor((m) => m.uuid === 'dup1' && m.appid === 'testapp', "testapp's stats reply", 30_000);
    const response = await fetch(`${rest.url}/feed`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ uuid: 'dup1', appid: 'myapp', action: 'info', spiderid: 'link' }),
    });
    const body = (await response.json()) as { status: string; data: Record<string, unknown> };
    expect(body.status).toBe('SUCCESS');
    expect(body.data).toMatchObject({ uuid: 'dup1', appid: 'myapp', spiderid: 'link' });
    expect(body.data.stats).toBeUndefined();
  });

  test('a finished crawl fed again is refused as duplicate, and `crawl --crawlid` stops waiting and says why', async () => {
    const worker = startCrawlerProcess(t.vars, { CRAWLER_HOST_MAP: site.hostMap, CRAWLER_CONCURRENCY: 2 });
    try {
      const seed = { url: site.url('/ok?again'), appid: OK_APP, crawlid: 'again' };
      await t.feed([seed]);
      await completeNotice(outbound, 'again', 60_000);
      await t.feed([seed]);
      const refused = await outbound.waitFor(
        (m) => m.error === 'duplicate' && m.crawlid === 'again',
        'the duplicate rejection',
        15_000,
      );
      expect(refused).toMatchObject({ appid: OK_APP, details: [{ path: '/url' }] });
      expect(String((refused.details as { message: string }[])[0]?.message)).toContain('dupefilter');
      await okOutbound.waitFor((m) => m.error === 'duplicate' && m.crawlid === 'again', 'its per-app copy', 5000);

      const cli = await runCrawlCli(['crawl', seed.url, '--appid', OK_APP, '--crawlid', 'again', '--timeout', '60']);
      expect(cli.code).toBe(1);
      expect(cli.ms).toBeLessThan(20_000);
      expect(cli.stderr).toContain('dupefilter');
    } finally {
      await worker.stop();
    }
  }, 120_000);

  /** Runs the real CLI against the test cluster; killed after 90 s so a hang fails the test. */
  function runCrawlCli(args: string[]): Promise<{ code: number | null; ms: number; stderr: string }> {
    const started = Date.now();
    const child = spawn(process.execPath, ['bin/crawl-cluster.ts', ...args], {
      cwd: repoRoot,
      env: {
        ...process.env,
        KAFKA_BROKERS: t.vars.KAFKA_BROKERS,
        KAFKA_TOPIC_PREFIX: t.vars.KAFKA_TOPIC_PREFIX,
        REDIS_HOST: t.vars.REDIS_HOST,
        REDIS_PORT: String(t.vars.REDIS_PORT),
        REDIS_CLUSTER: String(t.vars.REDIS_CLUSTER),
        REDIS_KEY_PREFIX: t.vars.REDIS_KEY_PREFIX,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.stdout?.resume();
    child.stdin?.end();
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    return new Promise((resolve) => {
      child.on('close', (code) => {
        clearTimeout(killer);
        resolve({ code, ms: Date.now() - started, stderr });
      });
    });
  }
});
