/**
 * `crawl-cluster crawl`, `info`, `stop` and `stats` as a user runs them: the real CLI in a child process,
 * talking over Kafka to a local cluster started in this process (the real handlers, fresh prefixes) that
 * crawls the fixture site on loopback.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { ensureTopics } from '../../lib/kafka/client.ts';
import { clusterTopicList, clusterTopics } from '../../lib/kafka/topics.ts';
import { cliCluster, clusterEnv, runCli, startCli } from '../helpers/cli.ts';
import { startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

const APPID = 'cli-e2e';

describe('crawl-cluster crawl against a running cluster with one crawler worker', () => {
  const c = cliCluster('cli-crawl-');

  const urlsOf = (pages: Set<number>) => [...pages].map((n) => c.site.url(n)).sort();

  it('--depth 1 exits 0 once the crawl completes; --out holds exactly the pages within one hop and the summary counts them', async () => {
    const out = join(c.dir, 'pages.jsonl');
    const expected = urlsOf(c.site.reachable(0, 1));

    const run = await runCli(
      ['crawl', c.site.url(0), '--depth', '1', '--appid', APPID, '--crawlid', 'depth1', '--out', out],
      c.env,
    );

    expect(run.code).toBe(0);
    const pages = (await readFile(out, 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(pages.map((p) => p.url as string).sort()).toEqual(expected);
    for (const p of pages) expect(p).toMatchObject({ appid: APPID, crawlid: 'depth1', success: true });
    expect(run.stdout).toContain(`crawl depth1 complete: ${expected.length} pages, 0 failed in `);
    expect(run.stdout).toMatch(/\(\d+(\.\d)? pages\/s\)/);
    expect(run.stdout).toContain(`pages written to ${out}`);
    expect(run.stderr).toContain(`crawling ${c.site.url(0)} to depth 1 (appid ${APPID}, crawlid depth1`);
  });

  it('--json prints one summary document whose counts match the complete notice', async () => {
    const expected = c.site.reachable(5, 1).size;

    const run = await runCli(['crawl', c.site.url(5), '--depth', '1', '--appid', APPID, '--json'], c.env);

    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({
      status: 'complete',
      appid: APPID,
      url: c.site.url(5),
      prefix: c.cluster.vars.KAFKA_TOPIC_PREFIX,
      pages: expected,
      failed: 0,
      pending: 0,
      notice: { action: 'complete', appid: APPID, total_pages: expected, total_failed: 0 },
    });
    // A crawlid was generated, and the notice is for it.
    expect(summary.crawlid).toMatch(/^cli-[0-9a-z]+-[0-9a-f]{6}$/);
    expect((summary.notice as Record<string, unknown>).crawlid).toBe(summary.crawlid);
    expect(summary.seconds).toBeGreaterThan(0);
    expect(summary.pages_per_second).toBeGreaterThan(0);
  });

  it('--allowed-domain keeps the crawl on that host', async () => {
    const host = c.site.hosts[0] as string;
    const out = join(c.dir, 'allowed.jsonl');
    const expected = urlsOf(c.site.reachable(0, 2, (h) => h === host));

    const run = await runCli(
      ['crawl', c.site.url(0), '--depth', '2', '--allowed-domain', host, '--appid', APPID, '--out', out],
      c.env,
    );

    expect(run.code).toBe(0);
    const urls = (await readFile(out, 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { url: string }).url);
    expect(urls.sort()).toEqual(expected);
    expect(run.stdout).toContain(`complete: ${expected.length} pages, 0 failed`);
  });
});

describe('info, stop, stats and an unfinished crawl against a running cluster without crawler workers', () => {
  let t: TestCluster;
  let env: Record<string, string>;

  /** Waits until the kafka-monitor has queued `n` requests of the crawl. */
  const queued = (crawlid: string, n: number) =>
    waitUntil(`${n} requests of ${crawlid} queued`, async () => {
      const info = await t.deps.ctx.frontier.crawlInfo('link', APPID, crawlid);
      return (info?.queued ?? 0) === n;
    });

  beforeAll(async () => {
    t = await startTestCluster({ LOG_LEVEL: 'WARN' }, { crawlerWorkers: 0 });
    env = clusterEnv(t.vars);
    // Nothing crawls these: without workers they stay queued.
    await t.feed([
      { url: 'http://a.example.com/1', appid: APPID, crawlid: 'queued', priority: 5 },
      { url: 'http://a.example.com/2', appid: APPID, crawlid: 'queued' },
      { url: 'http://b.example.org/', appid: APPID, crawlid: 'queued', priority: 3 },
    ]);
    await queued('queued', 3);
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('info --crawlid prints the pending count and a table of domains with their priorities', async () => {
    const run = await runCli(['info', '--appid', APPID, '--crawlid', 'queued'], env);

    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe(`crawl queued of app ${APPID} (spider link): 3 requests pending in 2 domains`);
    expect(lines[1]).toMatch(/^DOMAIN\s+PENDING\s+LOW PRIORITY\s+HIGH PRIORITY$/);
    expect(lines[2]).toMatch(/^example\.com\s+2\s+1\s+5$/);
    expect(lines[3]).toMatch(/^example\.org\s+1\s+3\s+3$/);
  });

  it('info without --crawlid lists every crawl of the app', async () => {
    const run = await runCli(['info', '--appid', APPID], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`app ${APPID} (spider link): 3 requests pending in 1 crawl, 2 domains`);
    expect(run.stdout).toMatch(/^queued\s+example\.com\s+2\s+1\s+5$/m);
  });

  it('info --json prints the reply as it came, with the uuid it sent', async () => {
    const run = await runCli(['info', '--appid', APPID, '--crawlid', 'queued', '--json'], env);

    expect(run.code).toBe(0);
    const reply = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(reply).toMatchObject({ appid: APPID, crawlid: 'queued', spiderid: 'link', total_pending: 3 });
    expect(reply.uuid).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('stats queue shows the total backlog and the backlog per domain', async () => {
    const run = await runCli(['stats', 'queue', '--appid', APPID], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^stats queue for app ${APPID} at \\d{4}-`));
    expect(run.stdout).toContain('queues: total backlog 3');
    expect(run.stdout).toMatch(/^queue_link\s+\(2 domains\)\s+3$/m);
    // The queue is named on its total row only.
    expect(run.stdout).toMatch(/^\s+example\.com\s+2$/m);
    expect(run.stdout).toMatch(/^\s+example\.org\s+1$/m);
    expect(run.stdout.match(/queue_link/g)).toHaveLength(1);
  });

  it('stats (all) prints a section per component with the windows as columns', async () => {
    const run = await runCli(['stats', '--appid', APPID], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^COUNTER\s+15m\s+1h\s+6h\s+12h\s+1d\s+7d\s+lifetime$/m);
    expect(run.stdout).toMatch(/^kafka-monitor: \d+ live nodes?$/m);
    expect(run.stdout).toMatch(/^redis-monitor: \d+ live nodes?$/m);
    // The kafka-monitor has handled at least the three crawl requests fed above.
    expect(run.stdout).toMatch(/^plugin ScraperHandler(\s+\d+){6}\s+([3-9]|\d\d+)$/m);
    expect(run.stdout).toContain('queues: total backlog 3');
  });

  it('crawl --timeout exits 1 with what it saw so far when no crawler takes the work', async () => {
    const run = await runCli(
      ['crawl', 'http://c.example.net/', '--appid', APPID, '--crawlid', 'slow', '--timeout', '4'],
      env,
    );

    expect(run.code).toBe(1);
    expect(run.stdout).toContain('crawl slow not complete (timed out): 0 pages, 0 failed');
    expect(run.stdout).toContain('pending when last asked: 1');
    expect(run.stderr).toContain('did not complete within 4 s; it goes on in the cluster');
    expect(run.stderr).toContain(`crawl-cluster stop --appid ${APPID} --crawlid slow`);
    await t.feed([{ uuid: 'cleanup-slow', appid: APPID, crawlid: 'slow', spiderid: 'link', action: 'stop' }]);
    await queued('slow', 0);
  });

  it('Ctrl-C with stdin not a terminal stops the crawl in the cluster and exits 130', async () => {
    const run = startCli(['crawl', 'http://d.example.net/', '--appid', APPID, '--crawlid', 'ctrl-c'], env);
    await waitUntil('the crawl to be fed', () => run.stderr().includes('Ctrl-C to stop'), 30_000);
    await queued('ctrl-c', 1);

    run.child.kill('SIGINT');
    const { code } = await run.exited;

    expect(code).toBe(130);
    expect(run.stderr()).toContain('stopped crawl ctrl-c: purged 1 pending request');
    expect(run.stdout()).toContain('crawl ctrl-c interrupted: 0 pages, 0 failed');
    expect((await t.deps.ctx.frontier.crawlInfo('link', APPID, 'ctrl-c'))?.queued ?? 0).toBe(0);
  });

  it('stop prints the purged count, after which nothing of the crawl is pending', async () => {
    await t.feed([
      { url: 'http://e.example.com/1', appid: APPID, crawlid: 'to-stop' },
      { url: 'http://e.example.com/2', appid: APPID, crawlid: 'to-stop' },
    ]);
    await queued('to-stop', 2);

    const run = await runCli(['stop', '--appid', APPID, '--crawlid', 'to-stop'], env);

    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`purged 2 pending requests of crawl to-stop (app ${APPID}, spider link)\n`);
    expect((await t.deps.ctx.frontier.crawlInfo('link', APPID, 'to-stop'))?.queued ?? 0).toBe(0);
  });

  it('crawl with priority 101 exits 2 naming /priority, and sends nothing', async () => {
    const admin = t.kafka.admin();
    await admin.connect();
    const sent = async () =>
      (await admin.fetchTopicOffsets(t.topics.incoming)).reduce((sum, p) => sum + Number(p.high), 0);
    try {
      const before = await sent();

      const run = await runCli(['crawl', 'http://f.example.com/', '--appid', APPID, '--priority', '101'], env);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain('/priority must be <= 100 (schema)');
      expect(run.stderr).toContain('nothing was sent');
      expect(await sent()).toBe(before);
    } finally {
      await admin.disconnect();
    }
  });
});

describe('info, stop, stats and crawl without a running cluster', () => {
  const kafka = testKafka();
  const prefix = uniqueName('clinone');
  const env = { KAFKA_BROKERS: `127.0.0.1:${config().CRAWL_KAFKA_PORT}`, KAFKA_TOPIC_PREFIX: prefix };

  beforeAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      // The topics exist, as after an earlier `crawl-cluster local`, but no monitor reads them.
      await ensureTopics(admin, clusterTopicList(prefix), 1);
    } finally {
      await admin.disconnect();
    }
  });
  afterAll(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: clusterTopicList(prefix) }).catch(() => {});
    await admin.disconnect();
  });

  it('info exits 1 soon after its --timeout, with the hint to start crawl-cluster local', async () => {
    const run = await runCli(['info', '--appid', APPID, '--timeout', '3'], env);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain('no reply to the info request within 3 s');
    expect(run.stderr).toContain(`is the cluster running for prefix "${prefix}"? Start it with: crawl-cluster local`);
    // The wait itself, plus connecting and joining a consumer group.
    expect(run.ms).toBeLessThan(3000 + 7000);
  });

  it('stats exits 1 naming `topics create` when the prefix has no topics', async () => {
    const other = uniqueName('nothere');

    const run = await runCli(['stats', 'queue', '--appid', APPID], { ...env, KAFKA_TOPIC_PREFIX: other });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`topic ${clusterTopics(other).incoming} does not exist`);
    expect(run.stderr).toContain(`crawl-cluster topics create --prefix ${other}`);
  });

  it('crawl exits 1 with a clear message within 15 s when Kafka is unreachable', async () => {
    const run = await runCli(['crawl', 'http://g.example.com/', '--appid', APPID], {
      ...env,
      KAFKA_BROKERS: '127.0.0.1:1',
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot reach Kafka at 127.0.0.1:1 (KAFKA_BROKERS)');
    expect(run.ms).toBeLessThan(15_000);
  });

  it('local exits 1 within 15 s when Kafka is unreachable, naming the brokers and what to do', async () => {
    const run = startCli(
      ['local', '--no-localstack', '--rest-port', '0', '--frontier-port', '0'],
      { ...env, KAFKA_BROKERS: '127.0.0.1:1', CRAWLER_WORKERS: '0' },
      30_000,
    );
    const { code, ms } = await run.exited;

    expect(code).toBe(1);
    expect(run.stderr()).toContain('error: local did not start: cannot reach Kafka at 127.0.0.1:1 (KAFKA_BROKERS)');
    expect(run.stderr()).toContain('crawl-cluster services up');
    expect(ms).toBeLessThan(15_000);
  });

  it('every command describes its options in --help', async () => {
    const expected: Record<string, string[]> = {
      crawl: [
        '<url>',
        '--depth <n>',
        '--allowed-domain <domain>',
        '--priority <p>',
        '--appid <appid>',
        '--crawlid <crawlid>',
        '--out <file>',
        '--timeout <seconds>',
      ],
      info: ['--appid <appid>', '--crawlid <crawlid>', '--spiderid <spiderid>', '--timeout <seconds>'],
      stop: ['--appid <appid>', '--crawlid <crawlid>', '--spiderid <spiderid>', '--timeout <seconds>'],
      stats: ['[type]', '--appid <appid>', '--timeout <seconds>'],
    };
    for (const [command, options] of Object.entries(expected)) {
      const run = await runCli([command, '--help'], env);
      expect(run.code).toBe(0);
      for (const option of options) expect(run.stdout).toContain(option);
      expect(run.stdout).toContain('Exit codes:');
    }
  });
});

describe('crawl while its consumer gives up partitions and rejoins', () => {
  const kafka = testKafka();
  const admin = kafka.admin();
  const producer = kafka.producer();
  const prefix = uniqueName('clirejoin');
  const topics = clusterTopics(prefix);
  const env = { KAFKA_BROKERS: `127.0.0.1:${config().CRAWL_KAFKA_PORT}`, KAFKA_TOPIC_PREFIX: prefix };

  beforeAll(async () => {
    await admin.connect();
    await producer.connect();
    // Two partitions a topic: another member of the group then takes one partition of each topic.
    await ensureTopics(admin, clusterTopicList(prefix), 2);
  });
  afterAll(async () => {
    await producer.disconnect();
    await admin.deleteTopics({ topics: clusterTopicList(prefix) }).catch(() => {});
    await admin.disconnect();
  });

  /**
   * Joins the crawl's throwaway group as a second member, as a rebalance would take partitions away from
   * it, and commits nothing (the crawl cannot resume from committed offsets). Resolves with what it holds
   * and a way to leave, which waits until the crawl's consumer holds every partition again.
   */
  async function intrude(groupId: string): Promise<{ assignment: Record<string, number[]>; leave(): Promise<void> }> {
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
    let assignment: Record<string, number[]> | undefined;
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      assignment = event.payload.memberAssignment;
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [topics.crawledFirehose, topics.outboundFirehose] });
    await consumer.run({ autoCommit: false, eachMessage: async () => {} });
    return {
      assignment: await waitUntil('the intruder to get its partitions', () => assignment),
      leave: async () => {
        await consumer.disconnect();
        await waitUntil('the crawl to rejoin alone', async () => {
          const [group] = (await admin.describeGroups([groupId])).groups;
          return group?.state === 'Stable' && group.members.length === 1;
        });
      },
    };
  }

  it('counts every page produced after it started, none missed (delivered at least once, counted once by URL)', async () => {
    const crawlid = 'rejoin';
    const url = (n: number) => `http://rejoin.example.com/${n}`;
    const page = (n: number) => ({ appid: APPID, crawlid, url: url(n), status_code: 200, success: true, body: 'x' });
    const run = startCli(
      ['crawl', url(0), '--appid', APPID, '--crawlid', crawlid, '--json', '--timeout', '40'],
      env,
      60_000,
    );
    try {
      await waitUntil('the crawl to be fed', () => run.stderr().includes('Ctrl-C to stop'), 30_000);
      const groupId = await waitUntil('the crawl group', async () => {
        const { groups } = await admin.listGroups();
        return groups.map((g) => g.groupId).find((g) => g.startsWith(`crawl-cluster-cli.${prefix}.`));
      });

      const intruder = await intrude(groupId);
      expect(intruder.assignment[topics.crawledFirehose]).toHaveLength(1);
      // Pages on both partitions of crawled_firehose: those of the intruder's are not the crawl's to read yet.
      for (let n = 0; n < 6; n += 1) {
        await producer.send({
          topic: topics.crawledFirehose,
          messages: [{ partition: n % 2, key: APPID, value: JSON.stringify(page(n)) }],
        });
      }
      await intruder.leave();
      await producer.send({
        topic: topics.outboundFirehose,
        messages: [
          {
            key: APPID,
            value: JSON.stringify({
              action: 'complete',
              appid: APPID,
              crawlid,
              spiderid: 'link',
              total_pages: 6,
              total_failed: 0,
            }),
          },
        ],
      });

      const { code } = await run.exited;
      expect(code).toBe(0);
      expect(JSON.parse(run.stdout())).toMatchObject({ status: 'complete', crawlid, pages: 6, failed: 0 });
    } finally {
      run.child.kill('SIGKILL');
    }
  });
});
