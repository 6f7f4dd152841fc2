/**
 * The crawl bench's compressed passes (bench/lib/crawl-codecs.ts) and the firehose bytes they read off the broker's
 * data dir (bench/lib/kafka.ts topicLogBytes), on a directory laid out as the broker lays out its partitions.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { codecNumbers, codecRows, codecWithinRound, crawlCodecs } from '../../bench/lib/crawl-codecs.ts';
import type { CrawlPassResult } from '../../bench/lib/crawl-pass.ts';
import { topicLogBytes } from '../../bench/lib/kafka.ts';
import { AWS_FLEET_DEFAULTS } from '../../cdk/runtime-env.ts';

const saved = process.env.BENCH_CRAWL_COMPRESSION;
afterEach(() => {
  if (saved === undefined) delete process.env.BENCH_CRAWL_COMPRESSION;
  else process.env.BENCH_CRAWL_COMPRESSION = saved;
});

function pass(over: Partial<CrawlPassResult>): CrawlPassResult {
  return {
    pages: 1000,
    failed: 0,
    messages: 1000,
    seconds: 4,
    pagesPerS: 250,
    meanMessageBytes: 30_000,
    firehoseBytes: 3_700_000,
    compression: 'gzip',
    feedToDoneS: 5,
    timedOut: false,
    cpu: { worker: 2.5, redis: 0.2, kafka: 0.3, site: 1, bench: 0.1 },
    redisServerUsPerPage: 40,
    redisBreakdown: '',
    throttle: '',
    workerPeakRssMb: 150,
    ...over,
  };
}

describe('crawl bench codecs', () => {
  it("crawls the AWS fleet's codec beside none by default, and any list of KAFKA_COMPRESSION values", () => {
    delete process.env.BENCH_CRAWL_COMPRESSION;
    expect(crawlCodecs()).toEqual([AWS_FLEET_DEFAULTS.KAFKA_COMPRESSION]);
    expect(crawlCodecs()).toEqual(['gzip']);
    process.env.BENCH_CRAWL_COMPRESSION = 'none,zstd,gzip,zstd';
    expect(crawlCodecs()).toEqual(['zstd', 'gzip']);
    process.env.BENCH_CRAWL_COMPRESSION = 'none';
    expect(crawlCodecs()).toEqual([]);
    process.env.BENCH_CRAWL_COMPRESSION = 'off';
    expect(crawlCodecs()).toEqual([]);
    process.env.BENCH_CRAWL_COMPRESSION = 'gzip,lz4';
    expect(() => crawlCodecs()).toThrow(/BENCH_CRAWL_COMPRESSION.*lz4/);
  });

  it('reports a codec pass as <codec>_ numbers: bytes on the wire, CPU per process kind and their sum', () => {
    const n = codecNumbers('gzip', pass({}), 500);
    expect(n).toMatchObject({
      gzip_pages: 1000,
      gzip_pages_per_s: 250,
      gzip_vs_raw: 0.5,
      gzip_message_bytes: 30_000,
      gzip_bytes_per_page: 3700,
      gzip_worker_cpu_ms_per_page: 2.5,
      gzip_redis_cpu_ms_per_page: 0.2,
      gzip_kafka_cpu_ms_per_page: 0.3,
      gzip_cpu_ms_per_page: 3,
    });
    // No data dir for the broker: no bytes, rather than NaN in the results.
    expect(codecNumbers('gzip', pass({ firehoseBytes: Number.NaN }), 500)).not.toHaveProperty('gzip_bytes_per_page');
  });

  it('takes the ratio and the extra CPU against the none pass of the same round', () => {
    const round = {
      bytes_per_page_1w: 30_080,
      message_bytes_1w: 30_000,
      worker_cpu_ms_per_page_1w: 2,
      cpu_ms_per_page_1w: 2.6,
      ...codecNumbers('gzip', pass({}), 500),
    };
    expect(codecWithinRound(round, ['gzip'])).toEqual({
      gzip_compression_ratio: 8.11,
      gzip_cpu_ms_extra_per_page: 0.4,
      gzip_worker_cpu_ms_extra_per_page: 0.5,
    });
    expect(codecWithinRound({}, ['gzip'])).toEqual({});
    const rows = codecRows(round, ['gzip']);
    expect(rows).toHaveLength(3);
    expect(rows[1]).toMatch(/^none \(1 worker\)\s+–\s+30080\s+1\.00\s+2\.00/);
    expect(rows[2]).toMatch(/^gzip \(1 worker\)\s+250\s+3700\s+–\s+2\.50\s+0\.20\s+0\.30\s+3\.00$/);
  });

  describe('topicLogBytes', () => {
    let dir: string | undefined;
    afterEach(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("sums the log segments of every partition of the topic, and only that topic's", () => {
      dir = mkdtempSync(join(tmpdir(), 'bench-kafka-data-'));
      const file = (path: string, bytes: number) => {
        mkdirSync(join(dir as string, path, '..'), { recursive: true });
        writeFileSync(join(dir as string, path), Buffer.alloc(bytes));
      };
      file('p.crawled_firehose-0/00000000000000000000.log', 1000);
      file('p.crawled_firehose-0/00000000000000000000.index', 10_485_760);
      file('p.crawled_firehose-0/00000000000000000042.log', 200);
      file('p.crawled_firehose-2/00000000000000000000.log', 30);
      // Another topic whose name starts with this one's, and a partition being deleted.
      file('p.crawled_firehose-x-0/00000000000000000000.log', 7);
      file('p.crawled_firehose-1.abc-delete/00000000000000000000.log', 9);
      expect(topicLogBytes(dir, 'p.crawled_firehose')).toBe(1230);
      expect(topicLogBytes(dir, 'p.incoming')).toBeNaN();
      expect(topicLogBytes(undefined, 'p.crawled_firehose')).toBeNaN();
      expect(topicLogBytes(join(dir, 'missing'), 'p.crawled_firehose')).toBeNaN();
    });
  });
});
