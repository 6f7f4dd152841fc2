/**
 * LocalStack as the local runtime uses it (localstack/runtime/local-aws.ts), against the real LocalStack that
 * `services up` runs (CRAWL_LOCALSTACK_PORT): bodies stored in S3 come back byte for byte, the stats metrics reach
 * CloudWatch with the autoscaling policy's names and dimensions, the Redis password comes from Secrets Manager, and a
 * LocalStack that does not answer is reported as such. Skipped with CRAWL_LOCALSTACK=false (no LocalStack here).
 */
import { randomBytes } from 'node:crypto';
import { CloudWatchClient, GetMetricDataCommand, ListMetricsCommand, type Metric } from '@aws-sdk/client-cloudwatch';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { CreateSecretCommand, DeleteSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, describe, expect, test } from 'vitest';
import { s3ClientSettings } from '../../functions/shared/aws.ts';
import { config } from '../../lib/config/index.ts';
import { s3BodyStore } from '../../lib/crawl/fetch/body-store.ts';
import { ConfigError, InfrastructureError } from '../../lib/errors.ts';
import type { FleetMetrics } from '../../lib/monitor/fleet-metrics.ts';
import { cloudWatchStatsPublisher } from '../../localstack/runtime/cloudwatch-stats.ts';
import { localAwsOf, startLocalAws, withLocalSecrets } from '../../localstack/runtime/local-aws.ts';
import { localstackHealth } from '../../localstack/services/localstack-service.ts';
import { localstackClientSettings, localstackEndpoint, uniqueName, waitUntil } from '../helpers/services.ts';

const vars = config();
const settings = localstackClientSettings();
const s3 = new S3Client(s3ClientSettings({ AWS_REGION: vars.AWS_REGION, AWS_ENDPOINT_URL: localstackEndpoint() }));
const cloudwatch = new CloudWatchClient(settings);
const secrets = new SecretsManagerClient(settings);
afterAll(() => {
  s3.destroy();
  cloudwatch.destroy();
  secrets.destroy();
});

/** A bucket name of its own for a test (S3 names: lower case, no underscore). */
function uniqueBucket(): string {
  return uniqueName('it-bodies-');
}

async function emptyAndDelete(bucket: string, keys: string[]): Promise<void> {
  for (const key of keys) await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
  await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
}

describe.skipIf(!vars.CRAWL_LOCALSTACK)('LocalStack of services up', () => {
  test('its health reports S3, CloudWatch, CloudWatch Logs and Secrets Manager running', async () => {
    const health = await localstackHealth(vars.CRAWL_LOCALSTACK_PORT);
    for (const service of ['s3', 'cloudwatch', 'logs', 'secretsmanager']) {
      expect(health.services[service], service).toMatch(/^(running|available)$/);
    }
    expect(health.version).toBe('4.9.2');
  });
});

describe.skipIf(!vars.CRAWL_LOCALSTACK)('S3 body store in LocalStack', () => {
  test('a stored body comes back from GetObject with the same bytes and content type, under its s3:// reference', async () => {
    const bucket = uniqueBucket();
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const store = s3BodyStore(s3, bucket, 'pages/');
    // Every byte value, and more than one chunk of a stream.
    const body = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(3 * 1024 * 1024)]);
    const key = 'crawl-1/4f1c%2Fx.html';
    try {
      const ref = await store.put(key, body, 'text/html; charset=utf-8');
      expect(ref).toBe(`s3://${bucket}/pages/${key}`);
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: `pages/${key}` }));
      expect(got.ContentType).toBe('text/html; charset=utf-8');
      expect(got.ContentLength).toBe(body.length);
      const bytes = Buffer.from((await got.Body?.transformToByteArray()) ?? []);
      expect(bytes.equals(body)).toBe(true);
    } finally {
      await emptyAndDelete(bucket, [`pages/${key}`]);
    }
  });

  test('a body stored without a content type is application/octet-stream', async () => {
    const bucket = uniqueBucket();
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    try {
      await s3BodyStore(s3, bucket).put('k', Buffer.from('plain'));
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'k' }));
      expect(got.ContentType).toBe('application/octet-stream');
      expect(await got.Body?.transformToString()).toBe('plain');
    } finally {
      await emptyAndDelete(bucket, ['k']);
    }
  });

  test('the local runtime creates its body bucket when it is missing, and starts again over an existing one', async () => {
    const bucket = uniqueBucket();
    const aws = localAwsOf({ ...vars, CRAWL_LOCALSTACK: true, LOCAL_BODY_STORE: 's3', BODY_STORE_BUCKET: bucket });
    if (aws === undefined) throw new Error('LocalStack is on');
    const first = await startLocalAws(aws);
    first.close();
    try {
      await s3.send(new HeadBucketCommand({ Bucket: bucket }));
      const second = await startLocalAws(aws);
      second.close();
    } finally {
      await emptyAndDelete(bucket, []);
    }
  });
});

/** Every metric of a namespace, once at least `count` are listed. */
async function metricsOf(namespace: string, count: number): Promise<Metric[]> {
  return waitUntil(
    `${count} metrics in ${namespace}`,
    async () => {
      const listed = (await cloudwatch.send(new ListMetricsCommand({ Namespace: namespace }))).Metrics ?? [];
      return listed.length >= count ? listed : undefined;
    },
    15_000,
  );
}

/** A metric as `name{dim=value,...}`, dimensions sorted. */
function describeMetric(m: Metric): string {
  const dims = (m.Dimensions ?? [])
    .map((d) => `${d.Name}=${d.Value}`)
    .sort()
    .join(',');
  return `${m.MetricName}{${dims}}`;
}

describe.skipIf(!vars.CRAWL_LOCALSTACK)('stats metrics in LocalStack CloudWatch', () => {
  test('one stats run lists the autoscaling metrics with the service=stats dimension, and their values come back', async () => {
    // A namespace of its own: the real one (CrawlCluster) gets the metrics of every local cluster running.
    const namespace = uniqueName('CrawlClusterTest');
    const publisher = cloudWatchStatsPublisher(cloudwatch, namespace);
    const m: FleetMetrics = {
      backlog: { link: 7, wandering: 2 },
      totalBacklog: 9,
      liveCrawlers: 2,
      backlogPerTask: 4.5,
      urlFrontierBacklog: 3,
      liveTasks: 2,
      pagesPerSecond: 612.5,
      slotUtilization: 0.8,
      saturatedShare: 0.75,
      taskPagesPerSecond: 300,
      tasksNeeded: 3,
    };
    const before = Date.now();
    await publisher.publish(m);

    const listed = await metricsOf(namespace, 12);
    expect(listed.map(describeMetric).sort()).toEqual([
      'BacklogPerTask{service=stats}',
      'Backlog{service=stats}',
      'LiveCrawlers{service=stats}',
      'LiveTasks{service=stats}',
      'PagesPerSecond{service=stats}',
      'SaturatedShare{service=stats}',
      'SlotUtilization{service=stats}',
      'SpiderBacklog{service=stats,spider=link}',
      'SpiderBacklog{service=stats,spider=wandering}',
      'TaskPagesPerSecond{service=stats}',
      'TasksNeeded{service=stats}',
      'UrlFrontierBacklog{service=stats}',
    ]);

    // As the scaling policy reads them (cdk/constructs/fleet.ts statsMetric): Maximum over one minute.
    const stat = (id: string, name: string, extra: { Name: string; Value: string }[] = []) => ({
      Id: id,
      MetricStat: {
        Metric: { Namespace: namespace, MetricName: name, Dimensions: [{ Name: 'service', Value: 'stats' }, ...extra] },
        Period: 60,
        Stat: 'Maximum',
      },
    });
    const data = await cloudwatch.send(
      new GetMetricDataCommand({
        StartTime: new Date(before - 5 * 60_000),
        EndTime: new Date(Date.now() + 60_000),
        MetricDataQueries: [
          stat('bpt', 'BacklogPerTask'),
          stat('needed', 'TasksNeeded'),
          stat('tasks', 'LiveTasks'),
          stat('pps', 'PagesPerSecond'),
          stat('backlog', 'Backlog'),
          stat('live', 'LiveCrawlers'),
          stat('uf', 'UrlFrontierBacklog'),
          stat('link', 'SpiderBacklog', [{ Name: 'spider', Value: 'link' }]),
        ],
      }),
    );
    const values = Object.fromEntries((data.MetricDataResults ?? []).map((r) => [r.Id, r.Values]));
    expect(values).toEqual({
      bpt: [4.5],
      needed: [3],
      tasks: [2],
      pps: [612.5],
      backlog: [9],
      live: [2],
      uf: [3],
      link: [7],
    });
  });
});

describe.skipIf(!vars.CRAWL_LOCALSTACK)('Redis password from LocalStack Secrets Manager', () => {
  const base = { ...vars, CRAWL_LOCALSTACK: true };

  test('LOCAL_REDIS_PASSWORD_SECRET names a secret: its value becomes REDIS_PASSWORD', async () => {
    const name = uniqueName('crawl-cluster/redis-');
    await secrets.send(new CreateSecretCommand({ Name: name, SecretString: 's3cr3t pass' }));
    try {
      const resolved = await withLocalSecrets({ ...base, LOCAL_REDIS_PASSWORD_SECRET: name, REDIS_PASSWORD: '' });
      expect(resolved.REDIS_PASSWORD).toBe('s3cr3t pass');
    } finally {
      await secrets.send(new DeleteSecretCommand({ SecretId: name, ForceDeleteWithoutRecovery: true }));
    }
  });

  test('without LOCAL_REDIS_PASSWORD_SECRET the variables are left as they are', async () => {
    const same = { ...base, LOCAL_REDIS_PASSWORD_SECRET: '', REDIS_PASSWORD: 'kept' };
    expect(await withLocalSecrets(same)).toBe(same);
  });

  test('a secret that does not exist fails with the variable and the secret named', async () => {
    const name = uniqueName('missing-');
    const failure = withLocalSecrets({ ...base, LOCAL_REDIS_PASSWORD_SECRET: name });
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    await expect(failure).rejects.toThrow(`LOCAL_REDIS_PASSWORD_SECRET: no secret "${name}" in LocalStack at`);
  });
});

describe('a LocalStack that does not answer', () => {
  test('the local runtime refuses to start, naming the endpoint and the ways out', async () => {
    // Port 9 (discard) on loopback: nothing listens there.
    const aws = localAwsOf({ ...vars, CRAWL_LOCALSTACK: true, AWS_ENDPOINT_URL: '', CRAWL_LOCALSTACK_PORT: 9 });
    if (aws === undefined) throw new Error('LocalStack is on');
    const started = Date.now();
    const failure = startLocalAws(aws);
    await expect(failure).rejects.toBeInstanceOf(InfrastructureError);
    await expect(failure).rejects.toThrow(
      /^LocalStack does not answer at http:\/\/127\.0\.0\.1:9 \(.+\)\. Start it with `crawl-cluster services up`.*`--no-localstack` or CRAWL_LOCALSTACK=false/,
    );
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
