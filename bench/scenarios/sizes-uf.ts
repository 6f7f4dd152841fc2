/**
 * URL Frontier API at production size: many crawls (issue 48, items 2 and 9). C crawls (default 100,000,
 * `BENCH_UF_CRAWLS`) of one queue and one URL each, over gRPC:
 *
 * 1. PutURLs of the C URLs (one per crawl, discovered) on one bidi stream, at most 2,000 unacked;
 * 2. GetURLs over every crawl (`anyCrawlID`, max_queues 0, max_urls_per_queue 100, delay_requestable 300) until
 *    every URL was served: URLs/s end to end;
 * 3. with every URL held, `BENCH_UF_EMPTY_CALLS` (default 5) GetURLs over every crawl that find nothing: ms each;
 * 4. ours only: the stats run's URL Frontier read (UrlFrontierStore.backlogTotal, one command) in ms, and the walk
 *    that indexes a frontier stored by an older version (lib/redis/url-frontier/index-walk.ts), forced over the same crawls by clearing the
 *    frontier's `indexed` mark: seconds for the C crawls.
 *
 * Ours runs as its own process (`crawl-cluster frontier serve`) over the benchmark Redis (bench/lib/redis.ts; the
 * private one by default, whose keys go with it). With `BENCH_FRONTIER_REFERENCE_JAR` (see frontier.ts) the
 * crawler-commons reference service runs the same steps 1–3 on a fresh RocksDB, and `get_vs_reference` and
 * `empty_vs_reference` compare.
 */
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { urlFrontierGlobalKeys } from '../../lib/redis/url-frontier/keys.ts';
import { UrlFrontierStore } from '../../lib/redis/url-frontier/store.ts';
import { urlFrontierClientConstructor } from '../../lib/url-frontier/definition.ts';
import { envInt } from '../lib/env.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';
import { msSince, nowNs, round } from '../lib/timing.ts';
import { type Client, serveAsProcess, startReference, streamPutUrls } from '../lib/uf-servers.ts';

export const description =
  'URL Frontier API over many crawls of one URL each: GetURLs over every crawl, URLs/s and empty-call ms; the stats read';

export const targets: Target[] = [
  { metric: 'empty_get_ms', op: '<=', value: 50, label: 'empty any-crawl GetURLs ms' },
  { metric: 'backlog_total_ms', op: '<=', value: 50, label: 'stats read ms' },
  // Measured only with BENCH_FRONTIER_REFERENCE_JAR (else not met: not measured).
  { metric: 'get_vs_reference', op: '>=', value: 1, label: 'GetURLs vs reference' },
];

export const headline: [string, string][] = [
  ['crawls', 'crawls'],
  ['put_urls_per_s', 'PutURLs URLs/s'],
  ['get_urls_per_s', 'GetURLs URLs/s'],
  ['empty_get_ms', 'empty GetURLs ms'],
  ['reference_get_urls_per_s', 'reference GetURLs URLs/s'],
  ['reference_empty_get_ms', 'reference empty GetURLs ms'],
  ['backlog_total_ms', 'stats read ms'],
  ['walk_s', 'index walk s'],
];

const urlOf = (i: number) => `https://site${i}.example.com/`;

/** PutURLs of one URL into each of `crawls` crawls on one stream, at most `window` unacked: the ack tally. */
function putCrawls(
  client: Client,
  run: string,
  crawls: number,
  window: number,
  progress: (m: string) => void,
): Promise<Record<string, number>> {
  const item = (i: number) => ({
    discovered: { info: { url: urlOf(i), key: '', crawlID: `${run}-${i}`, metadata: {} } },
  });
  return streamPutUrls(client, crawls, item, window, progress);
}

/** One GetURLs over every crawl: the number of URLs served. */
function getAnyCrawl(client: Client, hold: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = (client.GetURLs as (req: object) => grpc.ClientReadableStream<object>).call(client, {
      max_urls_per_queue: 100,
      max_queues: 0,
      delay_requestable: hold,
      anyCrawlID: {},
    });
    let n = 0;
    call.on('data', () => {
      n++;
    });
    call.on('error', reject);
    call.on('end', () => resolve(n));
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** Steps 1–3 against the server at `address`: numbers with `prefix`. */
async function measure(
  ctx: ScenarioContext,
  label: string,
  address: string,
  prefix: string,
  crawls: number,
  emptyCalls: number,
): Promise<Numbers> {
  const Ctor = urlFrontierClientConstructor();
  const client = new Ctor(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
  }) as unknown as Client;
  const hold = 300;
  const run = `bench-${randomBytes(3).toString('hex')}`;
  const out: Numbers = {};
  try {
    ctx.progress(`${label}: PutURLs, one URL into each of ${crawls.toLocaleString('en-US')} crawls`);
    let t = nowNs();
    const tally = await putCrawls(client, run, crawls, 2000, ctx.progress);
    const putS = msSince(t) / 1000;
    out[`${prefix}put_urls_per_s`] = Math.round(crawls / putS);
    out[`${prefix}put_acks`] = JSON.stringify(tally);
    ctx.progress(`  ${out[`${prefix}put_urls_per_s`]} URLs/s (${putS.toFixed(1)} s)`);

    ctx.progress(`${label}: GetURLs over every crawl until every URL is served`);
    t = nowNs();
    let served = 0;
    let calls = 0;
    let empty = 0;
    while (served < crawls && empty < 3) {
      const got = await getAnyCrawl(client, hold);
      calls++;
      served += got;
      empty = got === 0 ? empty + 1 : 0;
    }
    const getS = msSince(t) / 1000;
    Object.assign(out, {
      [`${prefix}get_s`]: round(getS, 2),
      [`${prefix}get_calls`]: calls,
      [`${prefix}get_served`]: served,
      [`${prefix}get_urls_per_s`]: Math.round(served / getS),
    });
    ctx.progress(`  ${served} URLs in ${calls} calls, ${out[`${prefix}get_urls_per_s`]} URLs/s (${getS.toFixed(1)} s)`);
    if (served !== crawls) ctx.note(`${label}: GetURLs served ${served} of ${crawls} URLs`);

    ctx.progress(`${label}: ${emptyCalls} GetURLs over every crawl with every URL held`);
    const times: number[] = [];
    for (let i = 0; i < emptyCalls; i++) {
      t = nowNs();
      const got = await getAnyCrawl(client, hold);
      times.push(msSince(t));
      if (got !== 0) ctx.note(`${label}: an empty GetURLs served ${got} URLs`);
    }
    out[`${prefix}empty_get_ms`] = round(median(times), 2);
    out[`${prefix}empty_get_ms_max`] = round(Math.max(...times), 2);
    out[`${prefix}empty_get_ms_all`] = times.map((x) => round(x, 2)).join(', ');
    ctx.progress(`  ${out[`${prefix}empty_get_ms_all`]} ms`);
  } finally {
    client.close();
  }
  return out;
}

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const crawls = envInt('BENCH_UF_CRAWLS', 100_000);
  const emptyCalls = envInt('BENCH_UF_EMPTY_CALLS', 5);
  ctx.input('crawls', crawls);
  ctx.input('urls_per_crawl', 1);
  ctx.input('get_max_urls_per_queue', 100);
  ctx.input('get_delay_requestable_s', 300);
  ctx.input('empty_calls', emptyCalls);
  const out: Numbers = { crawls };

  const bench = await ctx.redis();
  const store = new UrlFrontierStore(bench.client, `bench-ufc-${randomBytes(4).toString('hex')}`);
  ctx.input('key_prefix', store.prefix);
  ctx.note('ours: crawl-cluster frontier serve as its own process over ioredis');
  const server = await serveAsProcess(bench.address, store.prefix);
  try {
    Object.assign(out, await measure(ctx, 'ours', server.address, '', crawls, emptyCalls));
  } finally {
    await server.close();
  }

  ctx.progress('ours: the stats read (backlog total), then the walk of an older frontier over the same crawls');
  const reads: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = nowNs();
    const total = await store.backlogTotal();
    reads.push(msSince(t));
    if (total !== crawls) ctx.note(`backlog total ${total}, expected ${crawls}`);
  }
  out.backlog_total_ms = round(median(reads), 2);
  await bench.client.hdel(urlFrontierGlobalKeys(store.partitions[0]).state, 'indexed');
  const fresh = new UrlFrontierStore(bench.client, store.prefix);
  const t = nowNs();
  let steps = 0;
  while (!(await fresh.index.step())) steps++;
  out.walk_s = round(msSince(t) / 1000, 2);
  out.walk_steps = steps + 1;
  ctx.progress(`  stats read ${out.backlog_total_ms} ms; walk ${out.walk_s} s in ${out.walk_steps} steps`);
  if (bench.mode === 'shared') {
    ctx.progress('cleanup: the store keys (shared Redis)');
    const keys = await store.knownKeys();
    for (let i = 0; i < keys.length; i += 1000) await bench.client.unlink(...keys.slice(i, i + 1000));
  }

  const jar = process.env.BENCH_FRONTIER_REFERENCE_JAR;
  if (jar) {
    ctx.input('reference_jar', jar);
    ctx.note(
      'reference: crawler-commons URL Frontier service (RocksDB, fresh directory) from BENCH_FRONTIER_REFERENCE_JAR',
    );
    ctx.progress(`starting the reference service (${jar})`);
    const reference = await startReference(jar);
    try {
      Object.assign(out, await measure(ctx, 'reference', reference.address, 'reference_', crawls, emptyCalls));
    } finally {
      await reference.close();
    }
    const ours = out.get_urls_per_s;
    const ref = out.reference_get_urls_per_s;
    if (typeof ours === 'number' && typeof ref === 'number' && ref > 0) out.get_vs_reference = round(ours / ref, 2);
    const ourEmpty = out.empty_get_ms;
    const refEmpty = out.reference_empty_get_ms;
    if (typeof ourEmpty === 'number' && typeof refEmpty === 'number' && ourEmpty > 0)
      out.empty_vs_reference = round(refEmpty / ourEmpty, 2);
  }
  return out;
}
