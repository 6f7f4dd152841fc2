/**
 * `crawl-cluster feed` and `dump` as a user runs them: the real CLI in a child process against the real
 * Kafka, with a topic prefix of its own for this file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Admin, KafkaMessage, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    await admin.deleteTopics({ topics: clusterTopicList(prefix) }).catch(() => {});
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

  it('sends nothing from a file with one bad line, and names the line', async () => {
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

      const run = await runCli(['feed', '--file', file]);

      expect(run.code).toBe(2);
      expect(run.stderr).toContain('line 2: /maxdepth must be <= 3 (schema)');
      expect(run.stderr).toContain('1 of 3 requests invalid; nothing was sent');
      expect(await endOffset(topics.incoming)).toBe(before);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('sends every line of stdin (-) in one go, skipping blank lines', async () => {
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
