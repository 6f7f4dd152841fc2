/**
 * Frontier state lost mid-crawl, as when the cache node holding it is replaced empty: every key of the test's own
 * Redis prefix is deleted while `crawl-cluster crawl` follows a crawl (the shared Redis is never flushed; the prefix
 * is the unit of detection, docs/design.md §12). The cluster must say so: an ERROR log line with the reason, health
 * RED with it until `crawl-cluster ack-lost`, `info` answering "frontier state lost", and the waiting CLI ending with
 * that message and exit code 1. A prefix that is new is never reported as lost, nor a crawl fed after the loss.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRestDeps, type RestDeps } from '../../functions/rest/deps.ts';
import type { PartitionRef } from '../../lib/frontier-model.ts';
import { infoReply } from '../../lib/monitor/info.ts';
import type { Log } from '../../lib/ports.ts';
import type { RedisClient } from '../../lib/redis/client.ts';
import { partitionTag, spiderPartitions } from '../../lib/redis/keys.ts';
import { createRestRouter, type RestRouter } from '../../lib/rest/router.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { clusterEnv, runCli, startCli } from '../helpers/cli.ts';
import { crawlPages, type E2eCluster, startE2eCluster } from '../helpers/cluster.ts';
import { clusterRedis, waitUntil } from '../helpers/services.ts';

const APPID = 'lost-e2e';

function recordingLog(): Log & { errors: string[] } {
  const errors: string[] = [];
  return { errors, info() {}, warn() {}, error: (message) => errors.push(message) };
}

/** Deletes every key of the prefix (what a replaced, empty node holds of it: nothing), on every master. */
async function deletePrefix(redis: RedisClient, prefix: string): Promise<number> {
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  let deleted = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) deleted += await redis.del(key);
    } while (cursor !== '0');
  }
  return deleted;
}

describe('frontier state lost mid-crawl (the prefix emptied under a running crawl)', () => {
  const log = recordingLog();
  let site: FixtureSite;
  let t: E2eCluster;
  let rest: RestDeps;
  let router: RestRouter;
  let redis: RedisClient;

  beforeAll(async () => {
    site = await startSite({ pages: 400, links: 4 });
    // 3 hosts at 4 fetches/s each: the crawl of ~400 pages takes about 30 s, long enough to lose it half way.
    t = await startE2eCluster({ QUEUE_HITS: 4, QUEUE_WINDOW: 1, QUEUE_MODERATED: true }, { site, monitorLog: log });
    rest = createRestDeps('rest-e2e', log, t.vars);
    router = createRestRouter(rest.ctx);
    redis = clusterRedis();
  });
  afterAll(async () => {
    redis?.disconnect();
    await rest?.close();
    await t?.stop();
    await site?.close();
  });

  const health = async () =>
    JSON.parse((await router({ method: 'GET', path: '/', headers: {}, body: new Uint8Array() })).body) as Record<
      string,
      unknown
    >;

  test('ERROR log, health RED until acknowledged, info and the waiting crawl CLI answer "frontier state lost"; a fresh prefix is GREEN', async () => {
    const env = clusterEnv(t.vars);
    const crawlid = 'lost-mid-crawl';
    const run = startCli(['crawl', site.url(0), '--depth', '3', '--appid', APPID, '--crawlid', crawlid], env, 120_000);

    await waitUntil('some pages of the crawl', () => crawlPages(t.pages, crawlid).length >= 10, 30_000);
    // The redis-monitor answered the CLI's info for the running crawl: it has read the partition's marker.
    await waitUntil(
      'an info reply for the running crawl',
      () =>
        t.outbound.messages.find(
          (m) => m.crawlid === crawlid && typeof m.total_pending === 'number' && m.total_pending > 0,
        ),
      15_000,
    );
    // A prefix whose Redis state is new (first crawl, markers just created) is not lost.
    expect(log.errors).toEqual([]);
    expect(await health()).toMatchObject({ node_health: 'GREEN' });
    expect((await health()).state_lost).toBeUndefined();
    const delivered = crawlPages(t.pages, crawlid).length;

    expect(await deletePrefix(redis, t.vars.REDIS_KEY_PREFIX)).toBeGreaterThan(0);

    // The CLI stops waiting for a `complete` that will never come.
    const ended = await Promise.race([
      run.exited,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 40_000).unref()),
    ]);
    if (ended === undefined) run.child.kill('SIGKILL');
    expect(
      ended,
      `crawl CLI still waiting 40 s after the state was lost; stderr: ${run.stderr().slice(-500)}`,
    ).toBeDefined();
    expect(ended?.code).toBe(1);
    expect(run.stderr()).toContain('frontier state lost: the cluster no longer has this crawl');
    expect(run.stderr()).toContain('feed it again');
    expect(run.stdout()).toContain(`crawl ${crawlid} not complete (frontier state lost)`);
    expect(crawlPages(t.pages, crawlid).length).toBeLessThan(site.reachable(0, 3).size);
    expect(delivered).toBeGreaterThan(0);

    // The info reply the CLI got.
    const reply = t.outbound.messages.find((m) => m.crawlid === crawlid && m.error === 'frontier state lost');
    expect(reply).toMatchObject({ appid: APPID, total_pending: 0, error: 'frontier state lost' });
    const [partition] = spiderPartitions(t.vars.REDIS_KEY_PREFIX, 'link', t.vars.SCHEDULER_TYPE_ENABLED);
    const tag = partitionTag(partition as PartitionRef);
    expect(String(reply?.reason)).toContain(`frontier partition ${tag} was emptied`);

    // The monitors' log: an ERROR with the reason.
    expect(log.errors.some((e) => e.startsWith(`frontier state lost: frontier partition ${tag} was emptied`))).toBe(
      true,
    );

    // Health: RED with the reason, and it stays so.
    const red = await health();
    expect(red).toMatchObject({ node_health: 'RED', redis_connected: true, kafka_connected: true });
    expect(String(red.reason)).toContain('frontier state lost (not acknowledged)');
    expect(red.state_lost).toEqual(expect.arrayContaining([expect.objectContaining({ tag })]));

    // The operator acknowledges: GREEN again; info still says why the crawl is gone.
    const ack = await runCli(['ack-lost'], env);
    expect(ack.code).toBe(0);
    expect(ack.stdout).toMatch(/acknowledged \d+ frontier state loss\(es\):/);
    expect(ack.stdout).toContain(tag);
    const green = await health();
    expect(green).toMatchObject({ node_health: 'GREEN' });
    expect(green.state_lost).toBeUndefined();
    const again = await infoReply(t.deps.ctx, {
      action: 'info',
      appid: APPID,
      crawlid,
      spiderid: 'link',
      uuid: 'u-after-ack',
    });
    expect(again).toMatchObject({ error: 'frontier state lost', total_pending: 0 });

    // A new crawl in the partition used again, fed while the old loss is on record: followed to its end, never lost.
    const next = await runCli(['crawl', site.url(7), '--depth', '1', '--appid', APPID, '--crawlid', 'after-loss'], env);
    expect(next.stderr).not.toContain('frontier state lost');
    expect(next.code).toBe(0);
    expect(next.stdout).toContain('crawl after-loss complete:');
    expect((await health()).node_health).toBe('GREEN');
  });
});
