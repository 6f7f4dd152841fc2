/**
 * The sink end to end, checked by tools nobody here wrote: `crawl-cluster local` (a child process, as a user runs it)
 * crawls the fixture site with SINK_FORMATS=warc,jsonl to a file:// URI, is killed with SIGKILL the moment its sink has
 * written a WARC file (mid-flush: before the JSONL and the offset commit), and is started again. Then every message on
 * crawled_firehose is in the output exactly once (one response record and one JSON line per page), Python warcio checks
 * and indexes every file, and pywb replays a page with the body the site served.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { watch } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { config } from '../../lib/config/index.ts';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import { type FixtureSite, startSite } from '../../localstack/site/site.ts';
import { type CliRun, startCli } from '../helpers/cli.ts';
import { testKafka, uniqueName, waitUntil } from '../helpers/services.ts';
import { filesUnder, fromSite, readJsonl, readWarc } from '../helpers/warc.ts';
import { warcToolsBin } from '../helpers/warc-tools.ts';

const DEPTH = 2;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

describe('the sink in local: WARC and JSONL of a crawl, a SIGKILL mid-flush, checked by warcio and pywb', () => {
  let site: FixtureSite;
  let out: string;
  let env: Record<string, string>;
  let topics: ReturnType<typeof clusterTopics>;
  let bin: string;
  const runs: CliRun[] = [];
  /** Crawler workers of a `local` killed with SIGKILL drain and exit on their own; any still running at the end are killed. */
  const orphans: number[] = [];

  const startLocal = async (): Promise<CliRun> => {
    const run = startCli(['local', '--no-localstack', '--rest-port', '0', '--frontier-port', '0'], env, 180_000);
    runs.push(run);
    await waitUntil(
      'local to start',
      () => {
        if (run.child.exitCode !== null) throw new Error(`local exited ${run.child.exitCode}: ${run.stderr()}`);
        return run.stderr().includes('press Ctrl-C to stop');
      },
      90_000,
    );
    return run;
  };

  beforeAll(async () => {
    bin = warcToolsBin();
    site = await startSite({ pages: 40, links: 4 });
    out = await mkdtemp(join(tmpdir(), 'sink-e2e-'));
    const base = config();
    const prefix = uniqueName('sink');
    topics = clusterTopics(prefix);
    env = {
      KAFKA_BROKERS: `127.0.0.1:${base.CRAWL_KAFKA_PORT}`,
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_TOPIC_PARTITIONS: '2',
      REDIS_HOST: '127.0.0.1',
      REDIS_PORT: String(base.CRAWL_REDIS_CLUSTER_PORT),
      REDIS_CLUSTER: 'true',
      REDIS_KEY_PREFIX: uniqueName('k'),
      CRAWLER_WORKERS: '1',
      ALLOW_PRIVATE_NETWORKS: 'true',
      CRAWLER_HOST_MAP: site.hostMap,
      // Slow enough that the sink writes several times while the crawl runs.
      QUEUE_HITS: '8',
      QUEUE_WINDOW: '1',
      SINK_FORMATS: 'warc,jsonl',
      SINK_URI: pathToFileURL(out).href,
      SINK_FLUSH_S: '1',
      LOG_LEVEL: 'WARN',
    };
  }, 900_000);

  afterAll(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    for (const pid of orphans) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await site?.close();
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('loses and duplicates nothing across a SIGKILL mid-flush, and the files pass warcio and replay in pywb', async () => {
    const expected = [...site.reachable(0, DEPTH)].map((n) => site.url(n)).sort();
    const first = await startLocal();
    const ps = spawnSync('ps', ['-o', 'pid=', '--ppid', String(first.child.pid)], { encoding: 'utf8' });
    orphans.push(
      ...ps.stdout
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map(Number),
    );
    // Kill the moment a WARC file lands: its JSONL, its index or the offset commit are still to come.
    const killed = new Promise<void>((resolve) => {
      const watcher = watch(out, { recursive: true }, (_event, name) => {
        if (typeof name === 'string' && name.endsWith('.warc.gz')) {
          first.child.kill('SIGKILL');
          watcher.close();
          resolve();
        }
      });
    });
    const kafka = testKafka();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: topics.incoming,
      messages: [{ value: JSON.stringify({ url: site.url(0), appid: 'sink-e2e', crawlid: 'c1', maxdepth: DEPTH }) }],
    });
    await producer.disconnect();
    await killed;
    await first.exited;

    const second = await startLocal();
    const firehose = await readTopic(kafka, topics.crawledFirehose, expected.length);
    // Every firehose message reaches the output: wait for the JSON lines to catch up, then stop (flush on stop).
    await waitUntil('the sink to write every page', () => jsonLines(out).length >= firehose.length, 90_000);
    second.child.kill('SIGINT');
    expect((await second.exited).code).toBe(0);

    const files = filesUnder(out);
    const warcs = files.filter((f) => f.endsWith('.warc.gz'));
    const sources: string[] = [];
    const responses: string[] = [];
    for (const file of warcs) {
      const records = await readWarc(await readFile(join(out, file)));
      for (const r of records) {
        if (r.type === 'response') responses.push(r.url as string);
        if (r.type === 'metadata') sources.push(/kafka-source: (\S+)/.exec(r.content.toString())?.[1] ?? '?');
      }
      expect(files).toContain(file.replace(/\.warc\.gz$/, '.cdxj'));
    }
    // Exactly the firehose's messages, each once: none lost to the kill, none written twice by the redelivery.
    expect(sources.sort()).toEqual(firehose.map((m) => `${topics.crawledFirehose}/${m.partition}/${m.offset}`).sort());
    expect(jsonLines(out)).toHaveLength(firehose.length);
    // One response record and one JSON line per page (the crawler publishes each page once here).
    const pageUrls = firehose.map((m) => m.url).sort();
    expect(pageUrls).toEqual(expected);
    expect(responses.sort()).toEqual(expected);
    expect(
      jsonLines(out)
        .map((l) => l.url as string)
        .sort(),
    ).toEqual(expected);

    // warcio (Python) accepts every file and its index lists one response per page.
    const check = spawnSync(join(bin, 'warcio'), ['check', ...warcs], { cwd: out, encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    const index = spawnSync(join(bin, 'warcio'), ['index', '-f', 'warc-type,warc-target-uri', ...warcs], {
      cwd: out,
      encoding: 'utf8',
    });
    expect(index.status, index.stderr).toBe(0);
    const indexed = index.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, string>)
      .filter((e) => e['warc-type'] === 'response')
      .map((e) => e['warc-target-uri'] as string);
    expect(indexed.sort()).toEqual(expected);

    // pywb replays a crawled page from these files with the body the site serves (`id_`: the payload unchanged).
    const body = await fromSite(site, expected[0] as string);
    const replayed = await replay(
      bin,
      warcs.map((f) => join(out, f)),
      expected[0] as string,
    );
    expect(replayed).toBe(body);
  }, 300_000);
});

/** The page messages of `topic` (url, partition, offset), read from the beginning until `atLeast` came and 3 s passed quiet. */
async function readTopic(kafka: ReturnType<typeof testKafka>, topic: string, atLeast: number) {
  const consumer = kafka.consumer({ groupId: uniqueName('reader') });
  const seen: { url: string; partition: number; offset: string }[] = [];
  let last = Date.now();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const page = JSON.parse(message.value?.toString() ?? '{}') as { url: string };
      seen.push({ url: page.url, partition, offset: message.offset });
      last = Date.now();
    },
  });
  try {
    await waitUntil(
      'the crawl to publish its pages',
      () => seen.length >= atLeast && Date.now() - last > 3000,
      120_000,
    );
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

function jsonLines(dir: string): Record<string, unknown>[] {
  return filesUnder(dir)
    .filter((f) => f.endsWith('.jsonl.gz'))
    .flatMap((f) => readJsonl(join(dir, f)));
}

/** Adds `warcs` to a new pywb collection, serves it, and fetches `url` from it unchanged (`id_`). */
async function replay(bin: string, warcs: string[], url: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'pywb-'));
  let server: ChildProcess | undefined;
  try {
    for (const args of [
      ['init', 'sink'],
      ['add', 'sink', ...warcs],
    ]) {
      const run = spawnSync(join(bin, 'wb-manager'), args, { cwd: root, encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
    }
    const port = await freePort();
    server = spawn(join(bin, 'wayback'), ['-p', String(port), '-b', '127.0.0.1'], { cwd: root, stdio: 'ignore' });
    return await waitUntil(
      'pywb to replay the page',
      async () => {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/sink/2030id_/${url}`);
          return res.status === 200 ? await res.text() : undefined;
        } catch {
          return undefined;
        }
      },
      60_000,
    );
  } finally {
    server?.kill('SIGTERM');
    await rm(root, { recursive: true, force: true });
  }
}
