/**
 * Sink benchmark (issue 45): how fast lib/sink/sink.ts writes pages, and how many bytes per page it stores, per
 * format: `jsonl`, `warc`, `warc,jsonl`.
 *
 * - Pages: BENCH_SINK_PAGES (1000) page messages built as the crawler builds them from distinct fixture pages of the
 *   bench's page shape (bench/lib/page-messages.ts: article pages of about 28 KB), before anything is timed.
 * - Batches of BENCH_SINK_BATCH (200) records, one partition, offsets in order: about what one MSK event of the
 *   sink function holds at 6 MB (the local sink's batches are larger, which only spreads the per-file cost wider).
 * - The output is in memory (bytes counted, nothing kept), so the numbers are the sink's own CPU: record building,
 *   digests, gzip, the CDXJ index, the JSON lines. S3 request latency is not in them.
 * - BENCH_SINK_ROUNDS (3) rounds, formats in turn within a round; the median of each metric.
 * - `BENCH_SINK_PROFILE=1`: the rounds run under the V8 profiler (node:inspector), and bench/profile/sink.md gets the
 *   ranked tables (bench/lib/cpuprofile.ts); the numbers of such a run carry the profiler's cost.
 * - bytes/page: what lands in storage per page (WARC files with their CDXJ for `warc`, the JSONL.gz for `jsonl`,
 *   both for `warc,jsonl`; in `warc,jsonl` the JSON lines carry the WARC location instead of the body).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import type { DecodedRecord } from '../../lib/kafka/record.ts';
import type { SinkOutput } from '../../lib/sink/output.ts';
import { bodyReader } from '../../lib/sink/page-body.ts';
import { parseFormats, sinkBatch } from '../../lib/sink/sink.ts';
import { profileTimes, summarizeCpuProfile, writeProfileReport } from '../lib/cpuprofile.ts';
import { envBool, envInt } from '../lib/env.ts';
import { buildPageMessages } from '../lib/page-messages.ts';
import { BENCH_DIR } from '../lib/results.ts';
import { mergeRounds } from '../lib/rounds.ts';
import type { Numbers, ScenarioContext } from '../lib/scenario.ts';
import { round } from '../lib/timing.ts';

export const description = 'the archive sink: pages/s and stored bytes/page for jsonl, warc and warc+jsonl';

const FORMATS = [
  ['jsonl', 'jsonl'],
  ['warc', 'warc'],
  ['warc_jsonl', 'warc,jsonl'],
] as const;

export const headline: [string, string][] = [
  ['pages', 'pages'],
  ['message_bytes', 'message bytes/page'],
  ...FORMATS.flatMap(([key, label]): [string, string][] => [
    [`${key}_pages_per_s`, `${label} pages/s`],
    [`${key}_bytes_per_page`, `${label} bytes/page`],
  ]),
];

/** Counts what would be stored, keeps nothing. */
function countingOutput(): SinkOutput & { bytes: number; objects: number } {
  const out = {
    uri: 'memory:///',
    bytes: 0,
    objects: 0,
    async put(_key: string, chunks: readonly Uint8Array[]) {
      out.objects += 1;
      for (const c of chunks) out.bytes += c.length;
    },
    async list() {
      return [];
    },
    async remove() {},
  };
  return out;
}

const silent = { info() {}, warn() {}, error() {} };

async function pass(records: DecodedRecord[], formats: string, batch: number) {
  const output = countingOutput();
  const options = {
    formats: parseFormats(formats),
    output,
    bodies: bodyReader(),
    warcMaxBytes: 1024 ** 3,
    log: silent,
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let pages = 0;
  for (let i = 0; i < records.length; i += batch) {
    const result = await sinkBatch(records.slice(i, i + batch), options);
    if (result.failures.length > 0) throw new Error(`sink failed a batch (${formats})`);
    pages += result.pages;
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    pagesPerS: pages / seconds,
    cpuMsPerPage: (cpu.user + cpu.system) / 1000 / pages,
    bytesPerPage: output.bytes / pages,
    objects: output.objects,
  };
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const count = envInt('BENCH_SINK_PAGES', 1000);
  const batch = envInt('BENCH_SINK_BATCH', 200);
  const rounds = envInt('BENCH_SINK_ROUNDS', 3);
  ctx.input('pages', count);
  ctx.input('batch', batch);
  ctx.input('rounds', rounds);
  ctx.note('in-memory output: the sink CPU only (records, digests, gzip, index), no S3 latency');
  ctx.note('bytes/page = stored bytes (WARC + CDXJ, JSONL.gz) / pages; message bytes = the page message on the topic');

  ctx.progress(`building ${count} page messages from fixture pages`);
  const values = await buildPageMessages(ctx, count);
  const now = Date.now();
  const records: DecodedRecord[] = values.map((value, offset) => ({
    topic: 'bench.crawled_firehose',
    partition: 0,
    offset,
    timestamp: now,
    value: Buffer.from(value),
    headers: {},
  }));
  const messageBytes = records.reduce((n, r) => n + r.value.length, 0) / records.length;

  // One untimed pass per format warms the JIT and warcio's lazy imports.
  for (const [, formats] of FORMATS) await pass(records.slice(0, batch), formats, batch);
  const profiler = envBool('BENCH_SINK_PROFILE', false) ? new Session() : undefined;
  if (profiler) {
    ctx.input('profile', true);
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const all: Numbers[] = [];
  for (let r = 0; r < rounds; r++) {
    const numbers: Numbers = {};
    for (const [key, formats] of FORMATS) {
      const p = await pass(records, formats, batch);
      numbers[`${key}_pages_per_s`] = round(p.pagesPerS, 0);
      numbers[`${key}_cpu_ms_per_page`] = round(p.cpuMsPerPage, 3);
      numbers[`${key}_bytes_per_page`] = round(p.bytesPerPage, 0);
      numbers[`${key}_objects`] = p.objects;
      ctx.progress(
        `round ${r + 1}/${rounds} ${formats}: ${round(p.pagesPerS, 0)} pages/s, ${round(p.bytesPerPage, 0)} bytes/page`,
      );
    }
    all.push(numbers);
  }
  if (profiler) await writeProfile(ctx, profiler, count, rounds);
  return { pages: count, message_bytes: Math.round(messageBytes), ...mergeRounds(all) };
}

/** Stops the profiler and writes bench/profile/sink.md (the `.cpuprofile` beside it, git-ignored). */
async function writeProfile(ctx: ScenarioContext, session: Session, pages: number, rounds: number): Promise<void> {
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  const dir = join(BENCH_DIR, 'profile');
  const file = join(dir, 'sink.cpuprofile');
  writeFileSync(file, JSON.stringify(profile));
  const s = summarizeCpuProfile(file);
  const report = join(dir, 'sink.md');
  writeProfileReport(
    report,
    'Archive sink CPU profile (generated by `BENCH_SINK_PROFILE=1 npm run bench:sink`)',
    [
      `${new Date().toISOString()}; ${rounds} rounds of ${pages} page messages through lib/sink/sink.ts, each as jsonl, warc`,
      `and warc,jsonl, output in memory. ${profileTimes(s)}`,
    ],
    s,
  );
  ctx.progress(`wrote ${report}`);
}
