/**
 * The crawl bench with the page messages compressed (issue 33): the workers' KAFKA_COMPRESSION, `none` locally
 * (lib/config/variables.ts) and gzip on AWS (cdk/runtime-env.ts AWS_FLEET_DEFAULTS, docs/cost.md "Bytes: compression
 * and partitions"). The crawl scenario's 1- and 2-worker passes keep `none` (their metric names and history
 * unchanged); every other codec of BENCH_CRAWL_COMPRESSION gets one more 1-worker pass per round, with the same site,
 * seeds and concurrency, reported as `<codec>_<metric>`:
 *
 * - `<codec>_bytes_per_page`: the firehose's bytes on the wire (= on disk: the broker keeps the producer's record
 *   batches as sent) per page, from the growth of `<p>.crawled_firehose`'s log segments over the measured crawl
 *   (bench/lib/kafka.ts `topicLogBytes`); `bytes_per_page_1w` is the same for the `none` pass.
 * - `<codec>_compression_ratio`: the page message's bytes (`<codec>_message_bytes`, the value before compression) over
 *   `<codec>_bytes_per_page`: the ratio `npm run cost` divides a page by (cdk/prices.ts COMPRESSION_RATIO).
 * - `<codec>_worker_cpu_ms_per_page`, `<codec>_kafka_cpu_ms_per_page` (the broker), `<codec>_redis_cpu_ms_per_page`
 *   and their sum `<codec>_cpu_ms_per_page`, as `*_1w` are for `none`; `<codec>_cpu_ms_extra_per_page` and
 *   `<codec>_worker_cpu_ms_extra_per_page` are the codec's cost over the `none` pass of the same round.
 */
import { AWS_FLEET_DEFAULTS } from '../../cdk/runtime-env.ts';
import { KAFKA_COMPRESSIONS, type KafkaCompression } from '../../lib/kafka/codecs.ts';
import { type CrawlPassResult, passNumbers } from './crawl-pass.ts';
import type { Numbers } from './scenario.ts';
import { round } from './timing.ts';

/** The AWS fleet's codec (cdk/runtime-env.ts), which the crawl bench measures beside `none` by default. */
const AWS_COMPRESSION = (AWS_FLEET_DEFAULTS.KAFKA_COMPRESSION ?? 'none') as KafkaCompression;

/**
 * BENCH_CRAWL_COMPRESSION (`none,<the AWS default>`, i.e. `none,gzip`): the codecs crawled; `none` is the 1- and
 * 2-worker passes, which always run. Returns the others, each one more 1-worker pass (`none`/`false`/`off` for none).
 */
export function crawlCodecs(): KafkaCompression[] {
  const raw = process.env.BENCH_CRAWL_COMPRESSION?.trim().toLowerCase() || `none,${AWS_COMPRESSION}`;
  if (['0', 'false', 'no', 'off'].includes(raw)) return [];
  const list = raw.split(',').map((s) => s.trim());
  for (const c of list)
    if (!(KAFKA_COMPRESSIONS as readonly string[]).includes(c))
      throw new Error(`BENCH_CRAWL_COMPRESSION: a list of ${KAFKA_COMPRESSIONS.join(', ')} (got ${c})`);
  return [...new Set(list as KafkaCompression[])].filter((c) => c !== 'none');
}

/** The numbers of a codec's 1-worker pass, `<codec>_` prefixed. */
export function codecNumbers(codec: KafkaCompression, r: CrawlPassResult, rawPagesPerS: number): Numbers {
  const n = passNumbers(r, '1w', rawPagesPerS);
  const keep: [string, string][] = [
    ['pages_1w', 'pages'],
    ['pages_per_s_1w', 'pages_per_s'],
    ['ratio_1w', 'vs_raw'],
    ['message_bytes_1w', 'message_bytes'],
    ['bytes_per_page_1w', 'bytes_per_page'],
    ['worker_cpu_ms_per_page_1w', 'worker_cpu_ms_per_page'],
    ['kafka_cpu_ms_per_page_1w', 'kafka_cpu_ms_per_page'],
    ['redis_cpu_ms_per_page_1w', 'redis_cpu_ms_per_page'],
    ['cpu_ms_per_page_1w', 'cpu_ms_per_page'],
    ['worker_peak_rss_mb_1w', 'worker_peak_rss_mb'],
  ];
  const out: Numbers = {};
  for (const [from, to] of keep) if (n[from] !== undefined) out[`${codec}_${to}`] = n[from];
  return out;
}

/** A codec's ratio and extra CPU against the `none` pass of the same round (medians are taken of these). */
export function codecWithinRound(n: Numbers, codecs: readonly KafkaCompression[]): Numbers {
  const num = (k: string) => (typeof n[k] === 'number' && !Number.isNaN(n[k]) ? (n[k] as number) : undefined);
  const out: Numbers = {};
  for (const c of codecs) {
    const bytes = num(`${c}_bytes_per_page`);
    const value = num(`${c}_message_bytes`);
    if (bytes !== undefined && value !== undefined && bytes > 0)
      out[`${c}_compression_ratio`] = round(value / bytes, 2);
    for (const [extra, mine, none] of [
      ['cpu_ms_extra_per_page', 'cpu_ms_per_page', 'cpu_ms_per_page_1w'],
      ['worker_cpu_ms_extra_per_page', 'worker_cpu_ms_per_page', 'worker_cpu_ms_per_page_1w'],
    ] as const) {
      const a = num(`${c}_${mine}`);
      const b = num(none);
      if (a !== undefined && b !== undefined) out[`${c}_${extra}`] = round(a - b, 3);
    }
  }
  return out;
}

/** Headline rows of the codecs (`p` the shape prefix, `s` its label suffix), `none`'s first. */
export function codecHeadline(p: string, s: string, codecs: readonly KafkaCompression[]): [string, string][] {
  if (codecs.length === 0) return [];
  return [
    [`${p}bytes_per_page_1w`, `firehose bytes/page, none${s}`],
    [`${p}worker_cpu_ms_per_page_1w`, `worker CPU ms/page, none${s}`],
    [`${p}kafka_cpu_ms_per_page_1w`, `Kafka CPU ms/page, none${s}`],
    ...codecs.flatMap((c): [string, string][] => [
      [`${p}${c}_bytes_per_page`, `firehose bytes/page, ${c}${s}`],
      [`${p}${c}_compression_ratio`, `page message / bytes on the wire, ${c}${s}`],
      [`${p}${c}_pages_per_s`, `pages/s 1 worker, ${c}${s}`],
      [`${p}${c}_worker_cpu_ms_per_page`, `worker CPU ms/page, ${c}${s}`],
      [`${p}${c}_kafka_cpu_ms_per_page`, `Kafka CPU ms/page, ${c}${s}`],
      [`${p}${c}_cpu_ms_per_page`, `CPU ms/page (worker+Redis+Kafka), ${c}${s}`],
      [`${p}${c}_cpu_ms_extra_per_page`, `CPU ms/page over none, ${c}${s}`],
    ]),
  ];
}

/** Lines of the codecs for the scenario's table: bytes/page and CPU ms/page per process kind, `none` first. */
export function codecRows(n: Numbers, codecs: readonly KafkaCompression[]): string[] {
  if (codecs.length === 0) return [];
  const f = (v: unknown, d = 2) => (typeof v === 'number' && !Number.isNaN(v) ? v.toFixed(d) : '–').padStart(8);
  const columns: [string, number][] = [
    ['pages_per_s', 0],
    ['bytes_per_page', 0],
    ['compression_ratio', 2],
    ['worker_cpu_ms_per_page', 2],
    ['redis_cpu_ms_per_page', 2],
    ['kafka_cpu_ms_per_page', 2],
    ['cpu_ms_per_page', 2],
  ];
  const row = (name: string, get: (metric: string) => unknown) =>
    `${name.padEnd(18)} ${columns.map(([m, d]) => f(get(m), d)).join(' ')}`;
  const none = (m: string) =>
    m === 'compression_ratio'
      ? Number(n.message_bytes_1w) / Number(n.bytes_per_page_1w) // NaN (shown –) when either is missing
      : n[`${m}_1w`];
  const header = ['pages/s', 'B/page', 'ratio', 'worker', 'redis', 'kafka', 'total'].map((h) => h.padStart(8));
  return [
    `${'KAFKA_COMPRESSION'.padEnd(18)} ${header.join(' ')}`,
    row('none (1 worker)', none),
    ...codecs.map((c) => row(`${c} (1 worker)`, (m) => n[`${c}_${m}`])),
  ];
}
