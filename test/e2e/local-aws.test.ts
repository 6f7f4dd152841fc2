/**
 * The local cluster with LocalStack (localstack/runtime/local-aws.ts): each stats run's metrics reach LocalStack's
 * CloudWatch under the names and dimensions the autoscaling policy reads; `crawl-cluster local` says clearly when
 * LocalStack does not answer (and leaves nothing running), and runs without it on `--no-localstack`.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CloudWatchClient, GetMetricDataCommand, ListMetricsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, describe, expect, it } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { freePort } from '../../localstack/services/processes.ts';
import { startTestCluster } from '../helpers/cluster.ts';
import { localstackClientSettings, uniqueName, waitUntil } from '../helpers/services.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const cloudwatch = new CloudWatchClient(localstackClientSettings());
afterAll(() => cloudwatch.destroy());

describe.skipIf(!config().CRAWL_LOCALSTACK)('local cluster: stats metrics in LocalStack CloudWatch', () => {
  it('a queued crawl shows up as Backlog, SpiderBacklog{spider=link} and TasksNeeded 1 (no crawler) in CloudWatch', async () => {
    // A namespace of its own, so that no other cluster's metrics mix in; names and dimensions are the real ones.
    const namespace = uniqueName('CrawlClusterE2e');
    const t = await startTestCluster({}, { metricsNamespace: namespace, scheduleEveryMs: 500 });
    try {
      // No crawler workers: the request stays queued, a backlog of 1 for the link spider.
      await t.feed([{ url: 'http://metrics.test/', appid: 'metrics', crawlid: 'm1' }]);
      const names = await waitUntil(
        'the stats metrics in LocalStack',
        async () => {
          const listed = (await cloudwatch.send(new ListMetricsCommand({ Namespace: namespace }))).Metrics ?? [];
          const names = listed.map(
            (m) =>
              `${m.MetricName}{${(m.Dimensions ?? [])
                .map((d) => `${d.Name}=${d.Value}`)
                .sort()
                .join(',')}}`,
          );
          return names.includes('SpiderBacklog{service=stats,spider=link}') ? names.sort() : undefined;
        },
        30_000,
      );
      expect(names).toEqual([
        'BacklogPerTask{service=stats}',
        'Backlog{service=stats}',
        'LiveCrawlers{service=stats}',
        'LiveTasks{service=stats}',
        'PagesPerSecond{service=stats}',
        'SaturatedShare{service=stats}',
        'SlotUtilization{service=stats}',
        'SpiderBacklog{service=stats,spider=link}',
        'TaskPagesPerSecond{service=stats}',
        'TasksNeeded{service=stats}',
        'UrlFrontierBacklog{service=stats}',
      ]);
      // The scaling policy's read: Maximum over a minute, dimension service=stats.
      const backlog = await waitUntil(
        'Backlog 1',
        async () => {
          const data = await cloudwatch.send(
            new GetMetricDataCommand({
              StartTime: new Date(Date.now() - 5 * 60_000),
              EndTime: new Date(Date.now() + 60_000),
              MetricDataQueries: ['Backlog', 'TasksNeeded'].map((name) => ({
                Id: name.toLowerCase(),
                MetricStat: {
                  Metric: {
                    Namespace: namespace,
                    MetricName: name,
                    Dimensions: [{ Name: 'service', Value: 'stats' }],
                  },
                  Period: 60,
                  Stat: 'Maximum',
                },
              })),
            }),
          );
          const values = data.MetricDataResults?.map((r) => r.Values ?? []) ?? [];
          return values.every((v) => v.some((x) => x >= 1)) ? values : undefined;
        },
        30_000,
      );
      // Requests queued and no crawler reporting: the fleet needs one (it starts and measures).
      expect(backlog.map((v) => Math.max(...v))).toEqual([1, 1]);
    } finally {
      await t.stop();
    }
  });
});

/** `node bin/crawl-cluster.ts local ...` with fresh prefixes; killed after `killAfterMs` so a hang fails the test. */
function runLocal(args: string[], env: Record<string, string>, killAfterMs: number) {
  const base = config();
  const child = spawn(
    process.execPath,
    ['bin/crawl-cluster.ts', 'local', '--rest-port', '0', '--frontier-port', '0', ...args],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}`,
        KAFKA_TOPIC_PREFIX: uniqueName('e2e'),
        KAFKA_TOPIC_PARTITIONS: '1',
        REDIS_HOST: '127.0.0.1',
        REDIS_PORT: String(base.CRAWL_REDIS_CLUSTER_PORT),
        REDIS_CLUSTER: 'true',
        REDIS_KEY_PREFIX: uniqueName('k'),
        CRAWLER_WORKERS: '0',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve(code);
    }),
  );
  return { child, exited, stderr: () => stderr };
}

describe('crawl-cluster local without LocalStack', () => {
  it('exits 1 at once when LocalStack does not answer, saying where it looked and how to start or skip it', async () => {
    const port = await freePort();
    const run = runLocal([], { CRAWL_LOCALSTACK: 'true', CRAWL_LOCALSTACK_PORT: String(port) }, 60_000);
    const started = Date.now();
    expect(await run.exited).toBe(1);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(run.stderr()).toContain(`error: LocalStack does not answer at http://127.0.0.1:${port} (`);
    expect(run.stderr()).toContain('Start it with `crawl-cluster services up`');
    expect(run.stderr()).toContain('`--no-localstack` or CRAWL_LOCALSTACK=false');
  });

  it('with --no-localstack runs with bodies in a directory and metrics off, and stops on SIGINT', async () => {
    const port = await freePort();
    const run = runLocal(['--no-localstack'], { CRAWL_LOCALSTACK_PORT: String(port) }, 90_000);
    try {
      await waitUntil('local to start', () => run.stderr().includes('press Ctrl-C to stop'), 60_000);
      expect(run.stderr()).toMatch(/local cluster running .*"bodies":"directory [^"]+\/bodies"/);
      expect(run.stderr()).toContain('"metrics":"off (no LocalStack)"');
      run.child.kill('SIGINT');
      expect(await run.exited).toBe(0);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  });
});
