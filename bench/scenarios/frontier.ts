/**
 * URL Frontier API benchmark (crawler-commons URL Frontier 2.6 over gRPC, lib/url-frontier/):
 *
 * 1. start our server (`crawl-cluster frontier serve`, any free port) as its own process over the benchmark Redis
 *    with a fresh key prefix, as it runs in production and as an external server is measured
 *    (`BENCH_FRONTIER_SERVER=inprocess` runs it in the bench's own event loop instead); or, with
 *    `BENCH_FRONTIER_TARGET=host:port`, use any running URL Frontier server (then nothing is started and Redis
 *    memory is not measured);
 * 2. SetDelay 0 (default politeness delay of the crawl, so politeness does not throttle the drain);
 * 3. PutURLs of N discovered URLs (default 100,000) over Q hosts (default 1,000, one queue per host: the key is
 *    left empty and derived from the URL by the server) on one bidi stream with at most W unacked items in flight:
 *    URLs/s end to end, until the last ack;
 * 4. Redis bytes per known URL: INFO memory used_memory before/after the puts divided by N, plus MEMORY USAGE of
 *    the store's keys;
 * 5. GetURLs calls (max_queues 0, max_urls_per_queue 100, delay_requestable 30) until every URL was served:
 *    URLs/s end to end;
 * 6. cleanup: DeleteCrawl on an external target; otherwise also UNLINK of the keys the prefix's store created
 *    (UrlFrontierStore.knownKeys: no KEYS, no SCAN, no FLUSHDB).
 *
 * Per phase it also reports CPU microseconds per URL from /proc, split into the server process, Redis and the bench
 * client (an external server's CPU is counted when `BENCH_FRONTIER_TARGET_PID` names its process).
 *
 * With `BENCH_FRONTIER_REFERENCE_JAR` (the crawler-commons reference service's jar, built from a clone outside this
 * repository), the reference runs too, as its own process with RocksDB in a temporary directory, rounds alternated
 * with ours: its numbers are prefixed `reference_`, and `put_vs_reference` / `get_vs_reference` are the ratios.
 *
 * Steps 2–5 run BENCH_FRONTIER_ROUNDS times (default 3), each on a fresh crawl deleted afterwards (DeleteCrawl);
 * every rate is the median over the rounds, with each round's value in `<metric>_rounds`. Redis memory is
 * measured in the first round.
 *
 * Sizes: BENCH_FRONTIER_URLS, BENCH_FRONTIER_QUEUES, BENCH_FRONTIER_WINDOW. Redis: bench/lib/redis.ts (`BENCH_REDIS`).
 */
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { startUrlFrontierServer, type UrlFrontierServer } from '../../functions/url-frontier/server.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { urlFrontierClientConstructor } from '../../lib/url-frontier/definition.ts';
import { CpuMeter } from '../lib/cpu.ts';
import { memoryUsage, type ScriptStats, scriptStats, usedMemory } from '../lib/redis.ts';
import { mergeRounds } from '../lib/rounds.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { msSince, nowNs, round } from '../lib/timing.ts';
import { type Client, serveAsProcess, startReference, streamPutUrls, unaryCall } from '../lib/uf-servers.ts';

export const description = 'URL Frontier API (gRPC): PutURLs and GetURLs URLs/s end to end, Redis bytes per known URL';

export const targets: Target[] = [
  { metric: 'bytes_per_url', op: '<=', value: 250, label: 'bytes/known URL' },
  // Measured only with BENCH_FRONTIER_REFERENCE_JAR (else not met: not measured).
  { metric: 'put_vs_reference', op: '>=', value: 1, label: 'PutURLs vs reference' },
  { metric: 'get_vs_reference', op: '>=', value: 1, label: 'GetURLs vs reference' },
];

export const headline: [string, string][] = [
  ['urls', 'URLs'],
  ['queues', 'queues'],
  ['put_urls_per_s', 'PutURLs URLs/s'],
  ['get_urls_per_s', 'GetURLs URLs/s'],
  ['reference_put_urls_per_s', 'reference PutURLs URLs/s'],
  ['reference_get_urls_per_s', 'reference GetURLs URLs/s'],
  ['bytes_per_url', 'bytes/known URL'],
];

const SECTIONS = ['news', 'products', 'blog', 'articles', 'category/shoes', 'help/faq', '2024/05', 'docs/api'];
const SLUG = 'the-quick-guide-to-autumn-garden-care-and-winter-storage';

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

/** The i-th URL: host i mod Q, 60–90 characters, unique. */
function urlOf(i: number, queues: number): string {
  const host = `www.site${i % queues}.example.com`;
  const section = SECTIONS[i % SECTIONS.length] as string;
  const slug = SLUG.slice(0, 10 + ((i * 7) % 30));
  return `https://${host}/${section}/${slug}-${i.toString(36)}.html`;
}

/** PutURLs of `n` discovered URLs on one stream, at most `window` unacked; resolves with the ack tally. */
function putUrls(
  client: Client,
  crawlID: string,
  n: number,
  queues: number,
  window: number,
  progress: (m: string) => void,
): Promise<Record<string, number>> {
  const item = (i: number) => {
    const url = urlOf(i, queues);
    return { ID: url, discovered: { info: { url, key: '', crawlID, metadata: {} } } };
  };
  return streamPutUrls(client, n, item, window, progress);
}

/** One GetURLs call: the number of URLs served. */
function getUrls(client: Client, crawlID: string, perQueue: number, hold: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = (client.GetURLs as (req: object) => grpc.ClientReadableStream<object>).call(client, {
      max_urls_per_queue: perQueue,
      max_queues: 0,
      key: '',
      delay_requestable: hold,
      crawlID,
    });
    let n = 0;
    call.on('data', () => {
      n++;
    });
    call.on('error', reject);
    call.on('end', () => resolve(n));
  });
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const n = envInt('BENCH_FRONTIER_URLS', 100_000);
  const queues = envInt('BENCH_FRONTIER_QUEUES', 1_000);
  const window = envInt('BENCH_FRONTIER_WINDOW', 2_000);
  const rounds = envInt('BENCH_FRONTIER_ROUNDS', 3);
  const perQueue = 100;
  const hold = 30;
  const target = process.env.BENCH_FRONTIER_TARGET;
  const crawlID = `bench-${randomBytes(4).toString('hex')}`;

  let server: Pick<UrlFrontierServer, 'close'> | undefined;
  let store: UrlFrontierStore | undefined;
  let address = target;
  const pids: Record<string, number[]> = {};
  const targetPid = Number(process.env.BENCH_FRONTIER_TARGET_PID);
  if (target && Number.isInteger(targetPid) && targetPid > 0) pids.server = [targetPid];
  const inProcess = process.env.BENCH_FRONTIER_SERVER === 'inprocess';
  if (!address) {
    const bench = await ctx.redis();
    if (bench.pid) pids.redis = [bench.pid];
    store = new UrlFrontierStore(bench.client, `bench-uf-${randomBytes(4).toString('hex')}`);
    if (inProcess) {
      const s = await startUrlFrontierServer(store, { port: 0 });
      server = s;
      address = s.address;
    } else {
      const s = await serveAsProcess(bench.address, store.prefix);
      if (s.pid) pids.server = [s.pid];
      server = s;
      address = s.address;
    }
    ctx.input('key_prefix', store.prefix);
    ctx.note(
      bench.mode === 'private'
        ? 'private redis-server (no AOF/RDB, no other clients): used_memory delta is exact'
        : 'shared standalone Redis (other clients possible): used_memory delta is approximate',
    );
    ctx.note(
      inProcess
        ? 'our server runs in-process (same Node event loop as the bench client) over ioredis'
        : 'our server runs as its own process (crawl-cluster frontier serve) over ioredis, like an external server',
    );
  } else {
    ctx.note(`external server ${target} (BENCH_FRONTIER_TARGET): Redis memory not measured`);
  }
  for (const [k, v] of Object.entries({
    server: target ? `external ${target}` : inProcess ? 'crawl-cluster in-process' : 'crawl-cluster process',
    urls: n,
    queues,
    put_window_unacked: window,
    get_max_urls_per_queue: perQueue,
    get_max_queues: 0,
    get_delay_requestable_s: hold,
    crawl_id: crawlID,
    metadata: 'none',
  }))
    ctx.input(k, v);
  ctx.note('PutURLs: discovered items, key left empty (derived from the host), one bidi stream; rate until last ack');

  const Ctor = urlFrontierClientConstructor();
  const connect = (at: string) =>
    new Ctor(at, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': -1 }) as unknown as Client;
  /** One server under test: ours, or the reference run side by side (its numbers prefixed `reference_`). */
  interface Side {
    label: 'ours' | 'reference';
    prefix: string;
    client: Client;
    meter: CpuMeter;
    redis?: UrlFrontierStore['redis'];
    crawls: string[];
  }
  const sides: Side[] = [
    {
      label: 'ours',
      prefix: '',
      client: connect(address),
      meter: new CpuMeter(() => pids),
      redis: store?.redis,
      crawls: [],
    },
  ];
  let reference: Awaited<ReturnType<typeof startReference>> | undefined;
  const jar = process.env.BENCH_FRONTIER_REFERENCE_JAR;
  const out: Numbers = { urls: n, queues, rounds };
  try {
    if (jar) {
      ctx.progress(`starting the reference service (${jar})`);
      reference = await startReference(jar);
      const refPids: Record<string, number[]> = reference.pid ? { server: [reference.pid] } : {};
      sides.push({
        label: 'reference',
        prefix: 'reference_',
        client: connect(reference.address),
        meter: new CpuMeter(() => refPids),
        crawls: [],
      });
      ctx.input('reference_jar', jar);
      ctx.note(
        'reference: crawler-commons URL Frontier service (RocksDB) from BENCH_FRONTIER_REFERENCE_JAR, its own process, rounds alternated with ours',
      );
    }
    /** CPU µs per URL of the phase just measured, per process (`bench` is the client). */
    const cpuPerUrl = (meter: CpuMeter, phase: string): Record<string, number> => {
      const cpu = meter.stop();
      const res: Record<string, number> = {};
      for (const [name, s] of Object.entries(cpu))
        res[`${phase}_cpu_us_per_url_${name === 'bench' ? 'client' : name}`] = round((s * 1e6) / n, 1);
      return res;
    };
    /** Script calls Redis ran since `before` (private or shared bench Redis only). */
    const scriptCalls = async (redis: Side['redis'], before: ScriptStats | undefined) =>
      redis && before ? (await scriptStats(redis)).calls - before.calls : undefined;

    /** One round on a fresh crawl: PutURLs of every URL, Redis memory (first round), GetURLs until all served. */
    const runRound = async (side: Side, r: number): Promise<Numbers> => {
      const { client, meter, redis } = side;
      const crawl = `${crawlID}-${r}`;
      side.crawls.push(crawl);
      const res: Numbers = {};
      await unaryCall(client, 'SetDelay', { key: '', delay_requestable: 0, crawlID: crawl, local: false });
      const memBefore = redis && side.label === 'ours' && r === 0 ? await usedMemory(redis) : 0;
      ctx.progress(
        `${side.label} round ${r + 1}/${rounds}: PutURLs ${n.toLocaleString('en-US')} URLs over ${queues} queues`,
      );
      let scriptsBefore = redis ? await scriptStats(redis) : undefined;
      meter.start();
      let t = nowNs();
      const tally = await putUrls(client, crawl, n, queues, window, ctx.progress);
      const putS = msSince(t) / 1000;
      Object.assign(res, {
        put_s: round(putS, 2),
        put_urls_per_s: Math.round(n / putS),
        ...cpuPerUrl(meter, 'put'),
      });
      out[`${side.prefix}put_acks`] = JSON.stringify(tally);
      const putScripts = await scriptCalls(redis, scriptsBefore);
      if (putScripts !== undefined) res.put_redis_script_calls = putScripts;
      ctx.progress(`  ${res.put_urls_per_s} URLs/s (${putS.toFixed(1)} s), acks ${out[`${side.prefix}put_acks`]}`);

      if (redis && store && side.label === 'ours' && r === 0) {
        const memAfter = await usedMemory(redis);
        let keysBytes = 0;
        const byKind: Record<string, number> = {};
        for (const key of await store.knownKeys()) {
          const bytes = await memoryUsage(redis, key);
          keysBytes += bytes;
          const kind = key.slice(key.lastIndexOf(':') + 1);
          byKind[kind] = (byKind[kind] ?? 0) + bytes;
        }
        Object.assign(out, {
          used_memory_delta_bytes: memAfter - memBefore,
          bytes_per_url: round((memAfter - memBefore) / n, 1),
          bytes_per_url_memory_usage: round(keysBytes / n, 1),
          bytes_per_url_by_key: Object.entries(byKind)
            .filter(([, b]) => b / n >= 0.05)
            .sort((a, b) => b[1] - a[1])
            .map(([k, b]) => `${k} ${round(b / n, 1)}`)
            .join('; '),
        });
        ctx.progress(
          `  ${out.bytes_per_url} B/known URL (used_memory), ${out.bytes_per_url_memory_usage} (MEMORY USAGE: ${out.bytes_per_url_by_key})`,
        );
      }

      ctx.progress('  GetURLs until every URL is served');
      scriptsBefore = redis ? await scriptStats(redis) : undefined;
      meter.start();
      t = nowNs();
      let served = 0;
      let calls = 0;
      let empty = 0;
      while (served < n && empty < 3) {
        const got = await getUrls(client, crawl, perQueue, hold);
        calls++;
        served += got;
        empty = got === 0 ? empty + 1 : 0;
      }
      const getS = msSince(t) / 1000;
      Object.assign(res, {
        get_s: round(getS, 2),
        get_calls: calls,
        get_served: served,
        get_urls_per_s: Math.round(served / getS),
        ...cpuPerUrl(meter, 'get'),
      });
      const getScripts = await scriptCalls(redis, scriptsBefore);
      if (getScripts !== undefined) res.get_redis_script_calls = getScripts;
      ctx.progress(`  ${served} URLs in ${calls} calls, ${res.get_urls_per_s} URLs/s (${getS.toFixed(1)} s)`);
      ctx.progress(
        `  CPU µs/URL: ${Object.entries(res)
          .filter(([k]) => k.includes('_cpu_us_per_url_'))
          .map(([k, v]) => `${k.replace('_cpu_us_per_url_', ' ')} ${v}`)
          .join(', ')}`,
      );
      if (served !== n) ctx.note(`${side.label} round ${r + 1}: GetURLs served ${served} of ${n} URLs`);
      // Next round starts from an empty frontier on either server.
      await unaryCall(client, 'DeleteCrawl', { value: crawl, local: false });
      return res;
    };

    const results = new Map<Side, Numbers[]>(sides.map((side) => [side, []]));
    for (let r = 0; r < rounds; r++) for (const side of sides) results.get(side)?.push(await runRound(side, r));
    // Per metric: the median over the rounds, and every round's value in `<metric>_rounds`.
    for (const [side, list] of results)
      for (const [key, value] of Object.entries(mergeRounds(list))) out[`${side.prefix}${key}`] = value;
    for (const phase of ['put', 'get']) {
      const ours = out[`${phase}_urls_per_s`];
      const ref = out[`reference_${phase}_urls_per_s`];
      if (typeof ours === 'number' && typeof ref === 'number' && ref > 0)
        out[`${phase}_vs_reference`] = round(ours / ref, 2);
    }
  } finally {
    if (store) {
      const t = nowNs();
      const keys = await store.knownKeys();
      let removed = 0;
      for (let i = 0; i < keys.length; i += 1000) removed += await store.redis.unlink(...keys.slice(i, i + 1000));
      ctx.progress(`cleanup: unlinked ${removed} keys in ${msSince(t).toFixed(0)} ms`);
    }
    for (const side of sides) {
      if (side.label === 'ours' && store) continue;
      for (const crawl of side.crawls) await unaryCall(side.client, 'DeleteCrawl', { value: crawl, local: false });
    }
    for (const side of sides) side.client.close();
    await reference?.close();
    await server?.close();
  }
  return out;
}
