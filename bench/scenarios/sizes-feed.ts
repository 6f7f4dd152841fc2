/**
 * Sizes: `crawl-cluster feed -f` of a file of BENCH_FEED_LINES (1,000,000) crawl requests (issue 48 item 1), the CLI
 * as a user runs it, in a child process, against the local broker: lines/s, the feed process's peak RSS, and the
 * topic's end offsets, which must sum to the lines fed (every request stored, none twice).
 *
 * - The file is generated in a temp dir (about 70 bytes a line: 1,000 crawls over 1,000 domains, 7 appids) and
 *   deleted after; the topic `<unique prefix>.incoming` (KAFKA_TOPIC_PARTITIONS partitions) too.
 * - The same feed runs first at a tenth of the size: a peak RSS that does not grow with the input is the bound.
 * - Peak RSS is the child's VmHWM in /proc (Linux), read every 100 ms until it exits.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKafka, kafkaSettings } from '../../lib/kafka/client.ts';
import { clusterTopics } from '../../lib/kafka/topics.ts';
import { REPO_ROOT } from '../../localstack/repo-root.ts';
import { envInt } from '../lib/env.ts';
import { benchKafka } from '../lib/kafka.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';

export const description = 'feed -f of 1,000,000 crawl requests: lines/s, peak RSS of the feed, all stored once';

export const targets: Target[] = [
  { metric: 'missing_or_extra', op: '<=', value: 0, label: 'stored - fed' },
  { metric: 'peak_rss_mb', op: '<=', value: 512, label: 'peak RSS MB' },
  { metric: 'lines_per_s', op: '>=', value: 10_000, label: 'lines/s' },
];

export const headline: [string, string][] = [
  ['lines', 'lines'],
  ['lines_per_s', 'lines/s'],
  ['seconds', 'feed s (wall, with startup)'],
  ['peak_rss_mb', 'peak RSS MB'],
  ['peak_rss_mb_tenth', 'peak RSS MB (a tenth of the lines)'],
  ['stored', 'stored (end offsets)'],
  ['missing_or_extra', 'stored - fed'],
];

async function writeRequests(file: string, lines: number): Promise<void> {
  const out = createWriteStream(file);
  let chunk = '';
  for (let i = 1; i <= lines; i++) {
    chunk += `${JSON.stringify({ appid: `bench${i % 7}`, crawlid: `c${i % 1000}`, url: `http://d${i % 1000}.example/p/${i}` })}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
}

/** The high-water mark of a process's resident set (kB), or undefined once it is gone. */
async function peakRssKb(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

interface FeedRun {
  code: number | null;
  seconds: number;
  peakRssMb: number;
  stdout: string;
  stderr: string;
}

async function runFeed(file: string, prefix: string, brokers: string): Promise<FeedRun> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ['bin/crawl-cluster.ts', 'feed', '--prefix', prefix, '--wait', '0', '-f', file],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, KAFKA_BROKERS: brokers },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  let peak = 0;
  const pid = child.pid ?? 0;
  const poll = setInterval(() => {
    void peakRssKb(pid).then((kb) => {
      if (kb !== undefined) peak = Math.max(peak, kb);
    });
  }, 100);
  const [code] = (await once(child, 'close')) as [number | null];
  clearInterval(poll);
  return { code, seconds: (performance.now() - started) / 1000, peakRssMb: Math.round(peak / 1024), stdout, stderr };
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const lines = envInt('BENCH_FEED_LINES', 1_000_000);
  const tenth = Math.max(1, Math.floor(lines / 10));
  ctx.input('lines', lines);
  const { vars } = await benchKafka(ctx);
  ctx.input('partitions', vars.KAFKA_TOPIC_PARTITIONS);
  const kafka = createKafka(kafkaSettings(vars));
  const admin = kafka.admin();
  await admin.connect();
  const dir = await mkdtemp(join(tmpdir(), 'bench-feed-'));
  const prefixes = [`benchfeed${Date.now().toString(36)}a`, `benchfeed${Date.now().toString(36)}b`];
  const topics = prefixes.map((p) => clusterTopics(p).incoming);
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: topics.map((topic) => ({ topic, numPartitions: vars.KAFKA_TOPIC_PARTITIONS })),
    });
    const file = join(dir, 'requests.jsonl');
    const small = join(dir, 'tenth.jsonl');
    ctx.progress(`writing ${lines} requests`);
    await writeRequests(file, lines);
    await writeRequests(small, tenth);

    ctx.progress(`feeding ${tenth} lines`);
    const first = await runFeed(small, prefixes[0] as string, vars.KAFKA_BROKERS);
    if (first.code !== 0) throw new Error(`feed of ${tenth} lines exited ${first.code}: ${first.stderr.slice(-2000)}`);
    ctx.progress(`feeding ${lines} lines`);
    const full = await runFeed(file, prefixes[1] as string, vars.KAFKA_BROKERS);
    if (full.code !== 0) throw new Error(`feed of ${lines} lines exited ${full.code}: ${full.stderr.slice(-2000)}`);
    ctx.progress(full.stdout.trim());

    const offsets = await admin.fetchTopicOffsets(topics[1] as string);
    const stored = offsets.reduce((sum, p) => sum + Number(p.high), 0);
    const feedSeconds = Number(/ in ([\d.]+) s/.exec(full.stdout)?.[1] ?? Number.NaN);
    ctx.note('seconds is the child process from spawn to exit (node startup included); feed_s is its own count line.');
    ctx.note('peak RSS: the feed process VmHWM from /proc, sampled every 100 ms.');
    return {
      lines,
      seconds: Math.round(full.seconds * 10) / 10,
      feed_s: feedSeconds,
      lines_per_s: Math.round(lines / feedSeconds),
      peak_rss_mb: full.peakRssMb,
      peak_rss_mb_tenth: first.peakRssMb,
      stored,
      missing_or_extra: Math.abs(stored - lines),
    };
  } finally {
    await admin.deleteTopics({ topics }).catch(() => undefined);
    await admin.disconnect();
    await rm(dir, { recursive: true, force: true });
  }
}
