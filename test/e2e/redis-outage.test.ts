/**
 * Redis going away under the local runtime: what was accepted is kept (append-only file), what arrives
 * while Redis is down is not committed, and it is processed once Redis is back. Nothing is lost.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, test } from 'vitest';
import { freePort, portOpen } from '../../localstack/services/processes.ts';
import { startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { waitUntil } from '../helpers/services.ts';

function startRedis(port: number, dir: string): ChildProcess {
  return spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
    ],
    { stdio: 'ignore' },
  );
}

async function stopRedis(redis: ChildProcess): Promise<void> {
  if (redis.exitCode !== null) return;
  const exited = new Promise((resolve) => redis.once('exit', resolve));
  redis.kill('SIGTERM');
  await exited;
}

describe('Redis outage under the local runtime', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cc-redis-outage-'));
  let redis: ChildProcess | undefined;
  let t: TestCluster | undefined;

  afterAll(async () => {
    await t?.stop();
    if (redis) await stopRedis(redis);
    rmSync(dir, { recursive: true, force: true });
  });

  test('records that arrive while Redis is down are not committed and are queued once it is back', async () => {
    const port = await freePort();
    redis = startRedis(port, dir);
    await waitUntil('the private Redis', () => portOpen(port));
    t = await startTestCluster({ REDIS_PORT: port, REDIS_CLUSTER: false });
    const group = `${t.vars.KAFKA_TOPIC_PREFIX}.kafka-monitor`;
    const admin = t.kafka.admin();
    await admin.connect();
    const committed = async () => {
      const [topic] = await admin.fetchOffsets({ groupId: group, topics: [t?.topics.incoming as string] });
      return (topic?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
    };
    try {
      await t.feed([{ url: 'http://before.example.com/', appid: 'outage', crawlid: 'before' }]);
      await waitUntil('the first crawl to be queued', () => t?.deps.ctx.frontier.crawlInfo('link', 'outage', 'before'));
      await waitUntil('its offset to be committed', async () => (await committed()) === 1);

      await stopRedis(redis);
      await t.feed([{ url: 'http://during.example.com/', appid: 'outage', crawlid: 'during' }]);
      // Several redelivery rounds happen meanwhile (backoff from 200 ms); none may commit.
      await sleep(4000);
      expect(await committed()).toBe(1);

      redis = startRedis(port, dir);
      await waitUntil('Redis to be back', () => portOpen(port));
      const during = await waitUntil(
        'the record from the outage to be queued',
        () => t?.deps.ctx.frontier.crawlInfo('link', 'outage', 'during'),
        30_000,
      );
      expect(during.queued).toBe(1);
      // What was accepted before the outage survived the restart (append-only file).
      expect((await t.deps.ctx.frontier.crawlInfo('link', 'outage', 'before'))?.queued).toBe(1);
      await waitUntil('both offsets committed', async () => (await committed()) === 2);
    } finally {
      await admin.disconnect();
    }
  });
});
