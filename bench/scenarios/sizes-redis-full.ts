/**
 * Redis full mid-crawl (issue 48 item 4, `npm run bench:sizes`): the `redis-full` drill of bench/lib/drill.ts at
 * production size. A crawl of BENCH_FULL_PAGES (5000) pages over BENCH_FULL_HOSTS (20) hosts with 2 workers; once
 * BENCH_FULL_AFTER (1000) pages are done the bench's private Redis refuses every write (maxmemory, noeviction) for
 * BENCH_FULL_S (30) seconds. CI runs the same drill smaller (test/e2e/fault-drills.test.ts).
 */
import { drillScenario } from '../lib/drill-scenario.ts';

const s = drillScenario(
  'Redis full (maxmemory, noeviction) for 30 s mid-crawl: every page, duplicate messages, fetches per page',
  'FULL',
  { disruption: 'redis-full', pages: 5000, hosts: 20, workers: 2, after: 1000, forS: 30 },
  'Redis full (s)',
);
export const { description, targets, headline, run } = s;
