/**
 * `crawl-cluster feed -f` of many requests as a user runs it (issue 48 item 1): the real CLI in a child process
 * against the real Kafka. The file is streamed in batches of 1,000: every request arrives exactly once and the run
 * ends with a count; when Kafka is unreachable, or its broker stops part way (a broker of the test's own), feed
 * exits 1 in bounded time and says through which line everything is stored.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import { repoRoot, runCli } from '../helpers/cli.ts';
import { type PrivateKafka, startPrivateKafka } from '../helpers/private-kafka.ts';
import { createTestTopics, testKafka, uniqueName, waitUntil } from '../helpers/services.ts';

/** More than two batches of 1,000 (cli/feed-batcher.ts), so batching and the last partial batch both show. */
const REQUESTS = 3500;
/**
 * The bound on feed's exit once its input ended while the broker is down: a send unanswered for 12 s, 2 s for the
 * connections to close, and a loaded machine.
 */
const EXIT_AFTER_FAILURE_MS = 22_000;
/** The bound for an unreachable Kafka: the topic check's connection attempts, within about 15 s. */
const UNREACHABLE_BOUND_MS = 15_000;

function requestLine(run: string, n: number): string {
  return JSON.stringify({ appid: `app-${n % 3}`, crawlid: `${run}-${n}`, url: `http://feed${n % 50}.example/${n}` });
}

/** Lines `from`..`to` (1-based) of a run's input, each ending with a newline. */
function requestLines(run: string, from: number, to: number): string {
  let text = '';
  for (let n = from; n <= to; n++) text += `${requestLine(run, n)}\n`;
  return text;
}

/** The number of messages ever written to a topic (its partitions' high watermarks). */
async function endOffset(admin: Admin, topic: string): Promise<number> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.reduce((sum, p) => sum + Number(p.high), 0);
}

/** Every message of `topic`, read from the beginning until `count` have come. */
async function readAll(kafka: Kafka, topic: string, count: number): Promise<{ key: string; value: string }[]> {
  const consumer = kafka.consumer({ groupId: uniqueName('clifeed-reader'), maxWaitTimeInMs: 200 });
  const messages: { key: string; value: string }[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        messages.push({ key: message.key?.toString() ?? '', value: message.value?.toString() ?? '' });
      },
    });
    await waitUntil(`${count} messages on ${topic}`, () => messages.length >= count, 30_000);
    return messages;
  } finally {
    await consumer.disconnect();
  }
}

describe('crawl-cluster feed -f on the shared Kafka', () => {
  const kafka = testKafka();
  const admin = kafka.admin();
  const prefix = uniqueName('clifeed');
  const topic = clusterTopics(prefix).incoming;
  const env = { KAFKA_BROKERS: `127.0.0.1:${config().CRAWL_KAFKA_PORT}` };
  let dir: string;

  beforeAll(async () => {
    await admin.connect();
    await createTestTopics(admin, [topic], 3);
    dir = await mkdtemp(join(tmpdir(), 'clifeed-'));
  });

  afterAll(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  it('sends every request of a 3,500-line file exactly once and ends with the count, exit 0', async () => {
    const file = join(dir, 'requests.jsonl');
    await writeFile(file, requestLines('once', 1, REQUESTS));
    const before = await endOffset(admin, topic);

    const run = await runCli(['feed', '--prefix', prefix, '--wait', '0', '-f', file], env);

    expect(run.stderr).not.toContain('error');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^sent 3,500 requests to ${topic} \\(3,500 crawl\\) in [\\d.]+ s$`, 'm'));
    expect((await endOffset(admin, topic)) - before).toBe(REQUESTS);
    const messages = (await readAll(kafka, topic, before + REQUESTS)).filter((m) => m.value.includes('"once-'));
    expect(messages).toHaveLength(REQUESTS);
    const byCrawl = new Map(messages.map((m) => [JSON.parse(m.value).crawlid as string, m]));
    expect(byCrawl.size).toBe(REQUESTS);
    for (const n of [1, 1000, 1001, 2000, 3500]) {
      const m = byCrawl.get(`once-${n}`);
      expect(m?.value).toBe(requestLine('once', n));
      expect(m?.key).toBe(`app-${n % 3}`);
    }
  });

  it('exits 1 within 15 s when Kafka is unreachable from the start, saying nothing was sent', async () => {
    const file = join(dir, 'unreachable.jsonl');
    await writeFile(file, requestLines('unreachable', 1, 2000));

    const run = await runCli(['feed', '--prefix', prefix, '-f', file], { KAFKA_BROKERS: '127.0.0.1:1' });

    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot reach Kafka at 127.0.0.1:1 (KAFKA_BROKERS)');
    expect(run.stderr).toContain('nothing was sent');
    expect(run.ms).toBeLessThan(UNREACHABLE_BOUND_MS);
  });
});

/** `feed --wait 0 -` on the private broker, its stdin held open by the test. */
interface StdinFeed {
  topic: string;
  write(text: string): void;
  /** Ends the input; resolves with the exit code and the ms from the end of the input to the exit. */
  end(text: string): Promise<{ code: number | null; ms: number }>;
  stderr(): string;
  kill(): void;
}

/** Starts a feed from stdin to a fresh topic of `broker`, and waits until lines 1-2,000 (two batches) are stored. */
async function feedTwoBatches(broker: PrivateKafka): Promise<StdinFeed> {
  const prefix = uniqueName('clifeedstop');
  const topic = clusterTopics(prefix).incoming;
  const admin = broker.kafka().admin();
  await admin.connect();
  await createTestTopics(admin, [topic], 3);
  const child = spawn(process.execPath, ['bin/crawl-cluster.ts', 'feed', '--prefix', prefix, '--wait', '0', '-'], {
    cwd: repoRoot,
    env: { ...process.env, KAFKA_BROKERS: broker.brokers },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 150_000);
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  try {
    // Lines 1-2,000 go out as two batches (the second when line 2,001 arrives); the rest waits for more input.
    child.stdin.write(requestLines(prefix, 1, 2500));
    await waitUntil('the first two batches stored', async () => (await endOffset(admin, topic)) === 2000, 30_000);
  } finally {
    await admin.disconnect();
  }
  return {
    topic,
    write: (text) => child.stdin.write(text),
    end: async (text) => {
      const ended = Date.now();
      child.stdin.end(text);
      const code = await exited;
      clearTimeout(killer);
      return { code, ms: Date.now() - ended };
    },
    stderr: () => stderr,
    kill: () => {
      clearTimeout(killer);
      child.kill('SIGKILL');
    },
  };
}

describe('crawl-cluster feed - when the broker fails part way', () => {
  let broker: PrivateKafka;

  beforeAll(async () => {
    broker = await startPrivateKafka();
  });

  afterAll(async () => {
    await broker?.remove();
  });

  it('exits 1 in bounded time when the broker stops answering, naming the last line stored', async () => {
    const feed = await feedTwoBatches(broker);
    try {
      await broker.freeze();
      const { code, ms } = await feed.end(requestLines('frozen', 2501, 4000));

      expect(code).toBe(1);
      expect(ms).toBeLessThan(EXIT_AFTER_FAILURE_MS);
      expect(feed.stderr()).toContain(`sending to ${feed.topic} failed at line 2001: no answer within 12 s`);
      expect(feed.stderr()).toContain('Kafka acknowledged every request through line 2000 (2,000 requests)');
      expect(feed.stderr()).toContain('tail -n +2001 <your input> | crawl-cluster feed -');
    } finally {
      feed.kill();
      await broker.thaw();
    }
  });

  it('exits 1 in bounded time when the broker stops, naming the last line stored and how to feed the rest', async () => {
    const feed = await feedTwoBatches(broker);
    try {
      await broker.stop();
      const { code, ms } = await feed.end(requestLines('stopped', 2501, 4000));

      expect(code).toBe(1);
      expect(ms).toBeLessThan(EXIT_AFTER_FAILURE_MS);
      expect(feed.stderr()).toContain(`sending to ${feed.topic} failed at line 2001`);
      expect(feed.stderr()).toContain('Kafka acknowledged every request through line 2000 (2,000 requests)');
      expect(feed.stderr()).toContain('tail -n +2001 <your input> | crawl-cluster feed -');
    } finally {
      feed.kill();
    }
  });
});
