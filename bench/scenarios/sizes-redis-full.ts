/**
 * Redis full mid-crawl (issue 48 item 4, `npm run bench:sizes`): the drill of bench/lib/drill-redis-full.ts at
 * production size. A crawl of BENCH_FULL_PAGES (5000) pages over BENCH_FULL_HOSTS (20) hosts with 2 workers; once
 * BENCH_FULL_AFTER (1000) pages are done the bench's private Redis refuses every write (maxmemory, noeviction) for
 * BENCH_FULL_S (30) seconds. Targets: the crawl completes with every page, at most 1 % duplicate page messages, no
 * page fetched more than twice. CI runs the same drill smaller (test/e2e/redis-full.test.ts).
 */
import { redisFullDrill } from '../lib/drill-redis-full.ts';
import { envInt } from '../lib/env.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';

export const description =
  'Redis full (maxmemory, noeviction) for 30 s mid-crawl: every page, duplicate messages, fetches per page';

export const targets: Target[] = [
  { metric: 'missing_pages', op: '<=', value: 0, label: 'pages missing' },
  { metric: 'duplicate_share', op: '<=', value: 0.01, label: 'duplicate messages' },
  { metric: 'max_fetches_per_page', op: '<=', value: 2, label: 'fetches of one page' },
];

export const headline: [string, string][] = [
  ['pages', 'pages'],
  ['page_messages', 'page messages'],
  ['duplicate_share', 'duplicate share'],
  ['max_fetches_per_page', 'max fetches/page'],
  ['full_s', 'Redis full (s)'],
  ['seconds', 'crawl (s)'],
];

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  const o = {
    pages: envInt('BENCH_FULL_PAGES', 5000),
    hosts: envInt('BENCH_FULL_HOSTS', 20),
    workers: envInt('BENCH_FULL_WORKERS', 2),
    fullAfterPages: envInt('BENCH_FULL_AFTER', 1000),
    fullForS: envInt('BENCH_FULL_S', 30),
    timeoutS: envInt('BENCH_FULL_TIMEOUT_S', 900),
  };
  for (const [k, v] of Object.entries(o)) ctx.input(k, v);
  const r = await redisFullDrill(ctx, o);
  return {
    pages: r.pages,
    completed: r.completed,
    failed: r.failed,
    missing_pages: r.pages - r.completed,
    page_messages: r.pageMessages,
    urls: r.urls,
    duplicate_share: Number(r.duplicateShare.toFixed(4)),
    max_messages_per_url: r.maxMessagesPerUrl,
    max_fetches_per_page: r.maxFetchesPerPage,
    full_s: Number(r.fullSeconds.toFixed(1)),
    seconds: Number(r.seconds.toFixed(1)),
  };
}
