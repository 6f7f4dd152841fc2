/**
 * `crawl-cluster feed` and `dump` as a user runs them: the real CLI in a child process against the real
 * Kafka, with a topic prefix of its own for this file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Admin, Consumer, KafkaMessage, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Follower } from '../../cli/kafka-session.ts';
import { config } from '../../lib/config/index.ts';
import { ensureTopics } from '../../lib/kafka/client.ts';
import { clusterTopicList, clusterTopics } from '../../lib/kafka/topics.ts';
import { testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const prefix = uniqueName('clifd');
const topics = clusterTopics(prefix);
const brokers = `127.0.0.1:${config().CRAWL_KAFKA_PORT}`;
const kafka = testKafka();
/** The bound the brief sets for an unreachable Kafka. */
const UNREACHABLE_BOUND_MS = 15_000;

interface CliRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; ms: number }>;
}

/** Starts `node bin/crawl-cluster.ts ...args` with this file's prefix; killed after `killAfterMs` so a hang fails the test. */
function startCli(
  args: string[],
  options: { env?: Record<string, string>; input?: string; killAfterMs?: number } = {},
): CliRun {
  const started = Date.now();
  const child = spawn(process.execPath, ['bin/crawl-cluster.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, KAFKA_BROKERS: brokers, KAFKA_TOPIC_PREFIX: prefix, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  child.stdin?.end(options.input ?? '');
  const killer = setTimeout(() => child.kill('SIGKILL'), options.killAfterMs ?? 60_000);
  const exited = new Promise<{ code: number | null; ms: number }>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, ms: Date.now() - started });
    });
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

async function runCli(
  args: string[],
  options: { env?: Record<string, string>; input?: string } = {},
): Promise<{ code: number | null; ms: number; stdout: string; stderr: string }> {
  const run = startCli(args, options);
  const { code, ms } = await run.exited;
  return { code, ms, stdout: run.stdout(), stderr: run.stderr() };
}

function jsonLines(stdout: string): unknown[] {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l));
}

let admin: Admin;
let producer: Producer;
/**
 * Topics the tests create besides the contract ones, deleted after all tests: deleting one while the shared
 * producer knows it would fail the producer's later metadata refreshes.
 */
const extraTopics: string[] = [];

/** Creates a topic of this file's prefix, deleted after all tests. */
async function createTopic(name: string, numPartitions: number): Promise<string> {
  const topic = `${prefix}.${name}`;
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions }] });
  extraTopics.push(topic);
  return topic;
}

/** The number of messages ever written to a topic (its partitions' high watermarks). */
async function endOffset(topic: string): Promise<number> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.reduce((sum, p) => sum + Number(p.high), 0);
}

/** Reads `topic` from the beginning with a group of its own until `found` holds for the messages read. */
async function readUntil(topic: string, found: (messages: KafkaMessage[]) => boolean): Promise<KafkaMessage[]> {
  const groupId = uniqueName('clifd-reader');
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
  const messages: KafkaMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        messages.push(message);
      },
    });
    await waitUntil(`messages on ${topic}`, () => found(messages));
    return messages;
  } finally {
    await consumer.disconnect();
    await admin.deleteGroups([groupId]).catch(() => {});
  }
}

/**
 * Forces the follower in consumer group `groupId` to give up partitions and take them back later, as a
 * rebalance does: another member joins the group (taking half the partitions of each topic, as kafkajs's
 * round-robin assignor splits them) until {@link Intruder.leave}. It commits nothing, so the follower cannot
 * resume from committed offsets.
 */
interface Intruder {
  /** The partitions the intruder holds, by topic. */
  assignment: Record<string, number[]>;
  /** Leaves the group and waits until the follower alone holds every partition again. */
  leave(): Promise<void>;
}

async function intrude(groupId: string, topicsOfGroup: string[]): Promise<Intruder> {
  const consumer: Consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
  let assignment: Record<string, number[]> | undefined;
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    assignment = event.payload.memberAssignment;
  });
  await consumer.connect();
  await consumer.subscribe({ topics: topicsOfGroup });
  await consumer.run({ autoCommit: false, eachMessage: async () => {} });
  const held = await waitUntil('the intruder to get its partitions', () => assignment);
  return {
    assignment: held,
    leave: async () => {
      await consumer.disconnect();
      await waitUntil('the follower to rejoin alone', async () => {
        const [group] = (await admin.describeGroups([groupId])).groups;
        return group?.state === 'Stable' && group.members.length === 1;
      });
    },
  };
}

/** The one live consumer group whose id starts with `start`. */
async function groupStartingWith(start: string): Promise<string> {
  return waitUntil(`a group ${start}*`, async () => {
    const { groups } = await admin.listGroups();
    return groups.map((g) => g.groupId).find((g) => g.startsWith(start));
  });
}

const pages = [
  {
    appid: 'app-a',
    crawlid: 'crawl-1',
    url: 'http://a.example/',
    status_code: 200,
    body: '<html>héllo wörld</html>',
    success: true,
  },
  { appid: 'app-b', crawlid: 'crawl-2', url: 'http://b.example/', status_code: 200, body: '<p>two</p>', success: true },
  { appid: 'app-a', crawlid: 'crawl-1', url: 'http://a.example/x', status_code: 200, body: 'x', success: true },
];
const stopReply = { action: 'stop', server_time: 1, uuid: 'u1', appid: 'app-a', crawlid: 'crawl-1', spiderid: 'link' };

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  // One partition per topic, so the order of messages is the order they were produced.
  await ensureTopics(admin, clusterTopicList(prefix), 1);
  producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: topics.crawledFirehose,
    messages: pages.map((p) => ({ key: p.appid, value: JSON.stringify(p) })),
  });
  await producer.send({
    topic: topics.outboundFirehose,
    messages: [{ value: 'not json at all' }, { value: JSON.stringify(stopReply) }],
  });
});

afterAll(async () => {
  await producer?.disconnect();
  if (admin) {
    await admin.deleteTopics({ topics: [...clusterTopicList(prefix), ...extraTopics] }).catch(() => {});
    await admin.disconnect();
  }
});

describe('crawl-cluster feed', () => {
  it('produces a valid crawl request to <prefix>.incoming unchanged, keyed by appid', async () => {
    const request = { appid: 'app-feed', crawlid: 'feed-ok', url: 'http://example.com/', priority: 50 };
    const before = await endOffset(topics.incoming);

    const run = await runCli(['feed', JSON.stringify(request)]);

    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`sent 1 crawl request to ${topics.incoming}`);
    expect(run.stdout).toContain('crawlid=feed-ok');
    expect(await endOffset(topics.incoming)).toBe(before + 1);
    const messages = await readUntil(topics.incoming, (ms) =>
      ms.some((m) => m.value?.toString().includes('"feed-ok"')),
    );
    const sent = messages.filter((m) => m.value?.toString().includes('"feed-ok"'));
    expect(sent).toHaveLength(1);
    expect(sent[0]?.key?.toString()).toBe('app-feed');
    expect(JSON.parse(sent[0]?.value?.toString() ?? '')).toEqual(request);
  });

  it('rejects priority 101 with exit code 2, names /priority and produces nothing', async () => {
    const before = await endOffset(topics.incoming);

    const run = await runCli([
      'feed',
      '{"appid":"app-feed","crawlid":"bad","url":"http://example.com/","priority":101}',
    ]);

    expect(run.code).toBe(2);
    expect(run.stderr).toContain('/priority must be <= 100');
    expect(run.stderr).toContain('nothing was sent');
    expect(await endOffset(topics.incoming)).toBe(before);
  });

  it('with --json prints the rejections as a JSON list on stdout', async () => {
    const run = await runCli([
      'feed',
      '--json',
      '{"appid":"app-feed","crawlid":"bad","url":"http://x.example/","priority":101}',
    ]);

    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual([
      { error: 'schema', details: [{ path: '/priority', message: 'must be <= 100' }] },
    ]);
  });

  it('sends the valid lines of a file with one bad line, names the line it skipped, and exits 2', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'clifd-'));
    try {
      const file = join(dir, 'requests.jsonl');
      await writeFile(
        file,
        [
          '{"appid":"app-feed","crawlid":"file-1","url":"http://example.com/1"}',
          '{"appid":"app-feed","crawlid":"file-2","url":"http://example.com/2","maxdepth":9}',
          '{"appid":"app-feed","crawlid":"file-3","url":"http://example.com/3"}',
        ].join('\n'),
      );
      const before = await endOffset(topics.incoming);

      const run = await runCli(['feed', '--wait', '0', '--file', file]);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain('line 2: /maxdepth must be <= 3 (schema)');
      expect(run.stderr).toContain('1 of 3 requests invalid; the other 2 requests were sent');
      expect(run.stdout).toMatch(/sent 2 requests to \S+ \(2 crawl\) \(1 invalid line skipped\) in [\d.]+ s/);
      expect(await endOffset(topics.incoming)).toBe(before + 2);
      const messages = await readUntil(topics.incoming, (ms) =>
        ms.some((m) => m.value?.toString().includes('"file-3"')),
      );
      const crawlids = messages.map((m) => JSON.parse(m.value?.toString() ?? '{}').crawlid);
      expect(crawlids).toContain('file-1');
      expect(crawlids).not.toContain('file-2');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sends every line of stdin (-), skipping blank lines', async () => {
    const before = await endOffset(topics.incoming);
    const input = [
      '{"appid":"app-feed","crawlid":"stdin-1","url":"http://example.com/1"}',
      '',
      '{"appid":"app-feed","uuid":"stats-1","stats":"queue"}',
      '',
    ].join('\n');

    const run = await runCli(['feed', '-'], { input });

    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`sent 2 requests to ${topics.incoming} (1 crawl, 1 stats)`);
    expect(await endOffset(topics.incoming)).toBe(before + 2);
  });

  it('exits 1 naming `topics create` when the prefix has no incoming topic', async () => {
    const run = await runCli([
      'feed',
      '--prefix',
      uniqueName('nothere'),
      '{"appid":"app","crawlid":"c","url":"a.example"}',
    ]);

    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /topic nothere\w+\.incoming does not exist; create the topics with: crawl-cluster topics create/,
    );
  });

  it('exits 1 with a clear message within 15 s when Kafka is unreachable', async () => {
    const run = await runCli(['feed', '{"appid":"app","crawlid":"c","url":"a.example"}'], {
      env: { KAFKA_BROKERS: '127.0.0.1:1' },
    });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot reach Kafka at 127.0.0.1:1 (KAFKA_BROKERS)');
    expect(run.ms).toBeLessThan(UNREACHABLE_BOUND_MS);
  });

  it('describes every option in --help', async () => {
    const run = await runCli(['feed', '--help']);

    expect(run.code).toBe(0);
    for (const option of ['--file <path>', '--prefix <prefix>', '[request]']) expect(run.stdout).toContain(option);
  });
});

describe('crawl-cluster dump', () => {
  it('with --from-beginning --max 2 prints exactly the first 2 messages as JSON lines', async () => {
    const run = await runCli(['dump', 'crawled_firehose', '--from-beginning', '--max', '2']);

    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)).toEqual(pages.slice(0, 2));
    expect(run.stderr).toContain(`2 messages printed from ${topics.crawledFirehose}`);
  });

  it('with --no-body replaces body by body_length in UTF-8 bytes', async () => {
    const run = await runCli(['dump', 'crawled_firehose', '--from-beginning', '--max', '1', '--no-body']);

    expect(run.code).toBe(0);
    const { body, ...rest } = pages[0] as (typeof pages)[0];
    expect(jsonLines(run.stdout)).toEqual([{ ...rest, body_length: Buffer.byteLength(body) }]);
  });

  it('with --crawlid prints only that crawl and counts the others as skipped', async () => {
    const run = await runCli(['dump', 'crawled_firehose', '--from-beginning', '--max', '2', '--crawlid', 'crawl-1']);

    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)).toEqual([pages[0], pages[2]]);
    expect(run.stderr).toContain('2 messages printed');
    expect(run.stderr).toContain('1 skipped by filter');
  });

  it('with --appid prints only that app', async () => {
    const run = await runCli(['dump', 'crawled_firehose', '--from-beginning', '--max', '1', '--appid', 'app-b']);

    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)).toEqual([pages[1]]);
  });

  it('takes a full topic name with a dot as it is, and indents with --pretty', async () => {
    const run = await runCli([
      'dump',
      topics.crawledFirehose,
      '--prefix',
      'ignored',
      '--from-beginning',
      '--max',
      '1',
      '--pretty',
    ]);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('\n  "appid": "app-a",\n');
    expect(JSON.parse(run.stdout)).toEqual(pages[0]);
  });

  it('prints a message that is not JSON as a JSON string, with a warning on stderr', async () => {
    const run = await runCli(['dump', 'outbound_firehose', '--from-beginning', '--max', '2']);

    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)).toEqual(['not json at all', stopReply]);
    expect(run.stderr).toContain('offset 0 is not JSON; printed as a JSON string');
    expect(run.stderr).toContain('2 messages printed');
  });

  it('with --timeout ends on an idle topic with exit code 0', async () => {
    const run = await runCli(['dump', 'actions', '--timeout', '1']);

    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`0 messages printed from ${topics.actions}; stopped: idle timeout`);
  });

  it('stops cleanly on SIGTERM with exit code 0 and deletes its throwaway group', async () => {
    const run = startCli(['dump', 'crawled_firehose', '--from-beginning']);
    await waitUntil('3 lines printed', () => jsonLines(run.stdout()).length === 3);

    run.child.kill('SIGTERM');
    const { code } = await run.exited;

    expect(code).toBe(0);
    expect(run.stderr()).toContain('3 messages printed');
    expect(run.stderr()).toContain('stopped: interrupted');
    const { groups } = await admin.listGroups();
    expect(groups.map((g) => g.groupId).filter((g) => g.includes(`${prefix}.`))).toEqual([]);
  });

  it('prints every message produced after it started exactly once, also while its consumer gives up partitions and rejoins', async () => {
    const topic = await createTopic('follow', 2);
    const produce = async (from: number, to: number) => {
      for (let n = from; n < to; n += 1) {
        await producer.send({ topic, messages: [{ partition: n % 2, value: JSON.stringify({ n }) }] });
      }
    };
    await producer.send({ topic, messages: [{ partition: 0, value: '{"n":"before the start"}' }] });
    const run = startCli(['dump', topic]);
    try {
      await waitUntil('the dump to join', () => run.stderr().includes(`reading ${topic}`));
      const groupId = await groupStartingWith(`crawl-cluster-dump.${topic}.`);
      await produce(0, 4);

      const intruder = await intrude(groupId, [topic]);
      expect(Object.values(intruder.assignment).flat()).toHaveLength(1);
      await produce(4, 12);
      await intruder.leave();
      await produce(12, 16);

      const printed = () => jsonLines(run.stdout()).map((m) => (m as { n: number }).n);
      await waitUntil('16 messages printed', () => printed().length >= 16);
      // Time for a duplicate to show, were there one.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      run.child.kill('SIGTERM');
      expect((await run.exited).code).toBe(0);
      expect(printed().sort((a, b) => a - b)).toEqual([...Array(16).keys()]);
      // Joining again is not starting again: the start is announced once.
      expect(run.stderr().match(/reading /g)).toHaveLength(1);
    } finally {
      run.child.kill('SIGKILL');
    }
  });

  it('exits 1 on an unknown topic, listing the contract topics that exist', async () => {
    const run = await runCli(['dump', 'nope']);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`topic ${prefix}.nope does not exist`);
    for (const topic of clusterTopicList(prefix)) expect(run.stderr).toContain(topic);
  });

  it('exits 1 with a clear message within 15 s when Kafka is unreachable', async () => {
    const run = await runCli(['dump', 'crawled_firehose'], { env: { KAFKA_BROKERS: '127.0.0.1:1' } });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot reach Kafka at 127.0.0.1:1 (KAFKA_BROKERS)');
    expect(run.ms).toBeLessThan(UNREACHABLE_BOUND_MS);
  });

  it("exits 2 with commander's usage error for a --max that is not an integer >= 1, before touching Kafka", async () => {
    for (const max of ['abc', '0', '1.5']) {
      const run = await runCli(['dump', 'crawled_firehose', '--max', max], { env: { KAFKA_BROKERS: '127.0.0.1:1' } });

      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`error: option '--max <n>' argument '${max}' is invalid. must be an integer >= 1`);
      expect(run.stdout).toBe('');
    }
  });

  it('describes every option in --help', async () => {
    const run = await runCli(['dump', '--help']);

    expect(run.code).toBe(0);
    for (const option of [
      '<topic>',
      '--prefix <prefix>',
      '--from-beginning',
      '--max <n>',
      '--timeout <seconds>',
      '--no-body',
      '--pretty',
      '--crawlid <crawlid>',
      '--appid <appid>',
    ]) {
      expect(run.stdout).toContain(option);
    }
  });
});

describe('Follower, the live consumer under dump and crawl', () => {
  it('hands every message produced after its start over exactly once when kafkajs restarts its consumer after a crash', async () => {
    const topic = await createTopic('crash', 1);
    const groupId = uniqueName('clifd-follower');
    // Few and short retries: a handler that keeps failing crashes the consumer soon, and kafkajs restarts it.
    const consumer = kafka.consumer({
      groupId,
      maxWaitTimeInMs: 200,
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 500 },
    });
    const produce = async (from: number, to: number) => {
      for (let n = from; n < to; n += 1) await producer.send({ topic, messages: [{ value: JSON.stringify({ n }) }] });
    };
    const crashes: boolean[] = [];
    let joins = 0;
    consumer.on(consumer.events.CRASH, (event) => crashes.push(event.payload.restart));
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joins += 1;
    });
    await producer.send({ topic, messages: [{ value: '{"n":"before the start"}' }] });
    const follower = await Follower.start(admin, consumer, [topic], { fromBeginning: false, brokers });
    const handled: unknown[] = [];
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic] });
      await consumer.run({
        autoCommit: false,
        eachMessage: follower.eachMessage(async ({ message }) => {
          const { n } = JSON.parse(message.value?.toString() ?? '') as { n: unknown };
          if (n === 2 && crashes.length === 0) throw new Error('the handler fails until the consumer crashes');
          handled.push(n);
        }),
      });
      await produce(0, 3);
      await waitUntil('the crash', () => crashes.length > 0);
      // Produced while the consumer is down and rejoining.
      await produce(3, 8);

      await waitUntil('8 messages handled', () => handled.length >= 8);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(crashes).toEqual([true]);
      expect(joins).toBe(2);
      expect(handled).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    } finally {
      follower.stop();
      await consumer.disconnect().catch(() => {});
      await admin.deleteGroups([groupId]).catch(() => {});
    }
  });
});
