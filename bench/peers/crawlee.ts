/**
 * Crawlee peer child (bench/lib/peers.ts protocol): Crawlee's CheerioCrawler (bench/lib/crawlee.ts) in a
 * process of its own, so /proc gives its CPU time and peak RSS apart from the bench's. stdin: the JSON
 * options; stdout: `ready` after the warm-up crawl, `done <json>` after the measured one, progress otherwise.
 */
import { createInterface } from 'node:readline';
import { crawleeCrawl } from '../lib/crawlee.ts';
import type { PeerOptions } from '../lib/peers.ts';

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async (): Promise<string> => {
  const r = await lines.next();
  if (r.done) throw new Error('stdin closed');
  return r.value;
};
const say = (line: string) => process.stdout.write(`${line}\n`);

const o = JSON.parse(await next()) as PeerOptions;
let result: Record<string, unknown>;
try {
  await crawleeCrawl({
    seeds: o.warmSeeds,
    maxdepth: o.warmMaxdepth,
    concurrency: o.concurrency,
    hostMap: o.hostMap,
    progress: () => {},
  });
  say('ready');
  if ((await next()) !== 'go') throw new Error('expected go');
  const times: number[] = [];
  const r = await crawleeCrawl({
    seeds: o.seeds,
    maxdepth: o.maxdepth,
    concurrency: o.concurrency,
    hostMap: o.hostMap,
    progress: say,
    times,
  });
  result = { ...r, ok: r.pages, ...(o.keepTimes ? { times } : {}) };
} catch (error) {
  result = { error: (error as Error).stack ?? String(error) };
}
say(`done ${JSON.stringify(result)}`);
await next().catch(() => undefined);
process.exit(0);
