/**
 * Ingest benchmark (issue 8): crawl requests through the kafka-monitor Lambda handler
 * (functions/kafka-monitor/handler.ts `kafkaMonitorHandler`, middy + Powertools included) in MSK-sized
 * events, against the benchmark Redis (bench/lib/redis.ts): requests/s.
 *
 * - BENCH_INGEST_REQUESTS (100000) crawl requests, as a feed of seeds would send them: unique URLs over
 *   BENCH_INGEST_DOMAINS (10000) domains, BENCH_INGEST_PER_CRAWL (100) requests per crawl id (so a 500-record
 *   event registers 5 new crawls), maxdepth 2, attrs, ~200-byte JSON each.
 * - BENCH_INGEST_BATCH (500) records per MSK event (Lambda's MSK batch size is up to 10,000 records / 6 MB;
 *   500 is a typical setting), spread over 3 partitions, base64 as Lambda delivers them; events are encoded
 *   before the clock starts (that is the poller's work, not the function's).
 * - Events are handled one at a time (one poller: the headline and the target), then again with
 *   BENCH_INGEST_PARALLEL (4) in flight in this one process, each pass on fresh URLs. The parallel pass shows
 *   how much of an event is spent waiting on Redis (overlapped there); Lambda would run one invocation per
 *   partition, each in its own container with its own CPU.
 * - The handler's context is the real one (functions/shared/deps.ts `createMonitorDeps`: Redis client,
 *   Kafka producer for rejections/forwards, which valid crawl requests never use).
 */
import { randomBytes } from 'node:crypto';
import type { MSKEvent as MskEvent } from 'aws-lambda';
import { encodeMskEvent } from '../../functions/shared/msk.ts';
import { quietLocalMetrics, type Variables } from '../../lib/config/index.ts';
import { crawlKey, dupefilterKey, partitionKeyList, spiderPartitions, spidersKey } from '../../lib/redis/keys.ts';
import { lambdaContext } from '../../localstack/runtime/lambda-context.ts';
import { CpuMeter } from '../lib/cpu.ts';
import { envInt } from '../lib/env.ts';
import { benchKafka } from '../lib/kafka.ts';
import { commandBreakdown, commandStats, scriptStats, usecPerCall } from '../lib/redis.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { msSince, nowNs, round, summarize } from '../lib/timing.ts';

export const description = 'kafka-monitor handler ingest: crawl requests/s in MSK-sized events into Redis';

export const targets: Target[] = [{ metric: 'requests_per_s', op: '>=', value: 20_000, label: 'requests/s' }];

export const headline: [string, string][] = [
  ['requests', 'requests'],
  ['batch', 'per event'],
  ['requests_per_s', 'requests/s (1 at a time)'],
  ['requests_per_s_parallel', 'requests/s (parallel)'],
  ['event_p50_ms', 'event p50 ms'],
  ['event_p99_ms', 'event p99 ms'],
  ['handler_cpu_us_per_request', 'handler CPU µs/req'],
  ['redis_us_per_request', 'Redis µs/req'],
];

const TLDS = ['com', 'net', 'org', 'de', 'co.uk', 'fr', 'io', 'com.au'];
const SECTIONS = ['news', 'products', 'blog', 'articles', 'category/shoes', 'help/faq', '2024/05', 'docs/api'];

interface Feed {
  events: MskEvent[];
  crawls: { appid: string; crawlid: string }[];
}

function buildEvents(pass: string, n: number, domains: number, perCrawl: number, batch: number): Feed {
  const topic = 'bench.incoming';
  const records: Parameters<typeof encodeMskEvent>[0] = [];
  const crawls: Feed['crawls'] = [];
  for (let i = 0; i < n; i++) {
    const d = (i * 7919) % domains;
    const host = `www.${['acme', 'blue', 'city', 'data', 'echo'][d % 5]}${d}.${TLDS[d % TLDS.length]}`;
    const url = `https://${host}/${SECTIONS[i % SECTIONS.length]}/${pass}-item-${i.toString(36)}.html?ref=feed`;
    const crawlid = `${pass}-c${Math.floor(i / perCrawl)}`;
    if (i % perCrawl === 0) crawls.push({ appid: 'bench-ingest', crawlid });
    const request = {
      url,
      appid: 'bench-ingest',
      crawlid,
      spiderid: 'link',
      maxdepth: 2,
      priority: 50,
      attrs: { source: 'bench', batch: Math.floor(i / batch) },
    };
    records.push({
      topic,
      partition: i % 3,
      offset: Math.floor(i / 3),
      timestamp: Date.now(),
      value: Buffer.from(JSON.stringify(request)),
    });
  }
  const events: MskEvent[] = [];
  for (let i = 0; i < records.length; i += batch) events.push(encodeMskEvent(records.slice(i, i + batch)));
  return { events, crawls };
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const n = envInt('BENCH_INGEST_REQUESTS', 100_000);
  const domains = envInt('BENCH_INGEST_DOMAINS', 10_000);
  const perCrawl = envInt('BENCH_INGEST_PER_CRAWL', 100);
  const batch = envInt('BENCH_INGEST_BATCH', 500);
  const parallel = envInt('BENCH_INGEST_PARALLEL', 4);
  for (const [k, v] of Object.entries({ requests: n, domains, per_crawl: perCrawl, batch, parallel })) ctx.input(k, v);

  // Powertools would print an EMF document per invocation; must precede the handler module's import.
  quietLocalMetrics();
  const { kafkaMonitorHandler } = await import('../../functions/kafka-monitor/handler.ts');
  const { createMonitorDeps } = await import('../../functions/shared/deps.ts');
  const { vars: base } = await benchKafka(ctx);
  const bench = await ctx.redis();
  const [host, port] = bench.address.split(':') as [string, string];
  const prefix = `bench-in-${randomBytes(4).toString('hex')}`;
  const vars: Variables = {
    ...base,
    KAFKA_TOPIC_PREFIX: prefix,
    REDIS_HOST: host,
    REDIS_PORT: Number(port),
    REDIS_CLUSTER: false,
    REDIS_KEY_PREFIX: prefix,
  };
  ctx.input('key_prefix', prefix);
  ctx.note('one process: handler and encoding here, Redis private (bench/lib/redis.ts)');
  const deps = await createMonitorDeps('bench-ingest', { info() {}, warn() {}, error() {} }, vars);
  const handler = kafkaMonitorHandler(() => Promise.resolve(deps.ctx));
  const allCrawls: Feed['crawls'] = [];
  const out: Numbers = { requests: n, batch };
  try {
    const runPass = async (pass: string, inFlight: number) => {
      ctx.progress(`${pass}: encoding ${n} requests into ${Math.ceil(n / batch)} MSK events of ${batch}`);
      const feed = buildEvents(pass, n, domains, perCrawl, batch);
      allCrawls.push(...feed.crawls);
      const eventMs: number[] = [];
      let failed = 0;
      const meter = new CpuMeter(() => ({ redis: bench.pid ? [bench.pid] : [] }));
      const s0 = await scriptStats(bench.client);
      const c0 = await commandStats(bench.client);
      ctx.progress(`${pass}: invoking the handler, ${inFlight} event(s) in flight`);
      meter.start();
      const start = nowNs();
      let next = 0;
      let lastReport = Date.now();
      const invoker = async () => {
        for (;;) {
          const i = next++;
          const event = feed.events[i];
          if (!event) return;
          const t = nowNs();
          const r = await handler(event, lambdaContext('kafka-monitor') as never);
          eventMs.push(msSince(t));
          failed += r.batchItemFailures.length;
          if (Date.now() - lastReport > 5000) {
            lastReport = Date.now();
            const done = eventMs.length * batch;
            ctx.progress(`  ${done} requests, ${Math.round(done / (msSince(start) / 1000))}/s`);
          }
        }
      };
      // In-flight invocations share this process's module-scope Powertools Metrics (Lambda never runs two
      // invocations in one container): one flush empties the other's store, which then prints "No
      // application metrics to publish" to stderr on every event. Those lines are dropped here, nothing else.
      const write = process.stderr.write;
      if (inFlight > 1) {
        process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) =>
          String(chunk).startsWith('No application metrics to publish')
            ? true
            : (write as (...a: unknown[]) => boolean).call(process.stderr, chunk, ...rest)) as typeof write;
      }
      try {
        await Promise.all(Array.from({ length: inFlight }, invoker));
      } finally {
        process.stderr.write = write;
      }
      const seconds = msSince(start) / 1000;
      const cpu = meter.stop();
      const s1 = await scriptStats(bench.client);
      const breakdown = commandBreakdown(c0, await commandStats(bench.client), 5);
      const ev = summarize(eventMs);
      ctx.progress(
        `${pass}: ${n} requests in ${seconds.toFixed(2)} s = ${Math.round(n / seconds)}/s, event p50 ${ev.p50.toFixed(1)} ms, failed ${failed}, cpu ${JSON.stringify(cpu)}`,
      );
      return {
        perS: n / seconds,
        ev,
        failed,
        cpu,
        redisUs: (s1.usec - s0.usec) / n,
        scriptUsPerEvent: usecPerCall(s0, s1),
        breakdown,
      };
    };
    const one = await runPass('seq', 1);
    const par = await runPass('par', parallel);
    Object.assign(out, {
      requests_per_s: Math.round(one.perS),
      event_p50_ms: round(one.ev.p50, 2),
      event_p99_ms: round(one.ev.p99, 2),
      failed_records: one.failed + par.failed,
      handler_cpu_us_per_request: round(((one.cpu.bench ?? 0) * 1e6) / n, 1),
      redis_us_per_request: round(one.redisUs, 2),
      redis_cpu_us_per_request: round(((one.cpu.redis ?? 0) * 1e6) / n, 1),
      redis_breakdown: one.breakdown,
      requests_per_s_parallel: Math.round(par.perS),
      parallel_event_p50_ms: round(par.ev.p50, 2),
      parallel_handler_cpu_us_per_request: round(((par.cpu.bench ?? 0) * 1e6) / n, 1),
    });
  } finally {
    const t = nowNs();
    const keys = new Set<string>([spidersKey(prefix)]);
    for (const p of spiderPartitions(prefix, 'link', true)) {
      for (const k of partitionKeyList(p)) keys.add(k);
      for (const c of allCrawls) keys.add(dupefilterKey(p, crawlKey(c.appid, c.crawlid, 'link')));
    }
    const list = [...keys];
    for (let i = 0; i < list.length; i += 500) await bench.client.unlink(...list.slice(i, i + 500));
    ctx.progress(`cleanup: unlinked ${list.length} keys in ${msSince(t).toFixed(0)} ms (stats counters remain)`);
    await deps.close();
  }
  return out;
}
