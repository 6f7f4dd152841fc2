/**
 * A fault drill (bench/lib/drill.ts) as a bench scenario: its sizes from `BENCH_<env>_PAGES`, `_HOSTS`, `_WORKERS`,
 * `_AFTER`, `_S` and `_TIMEOUT_S`, its targets the promise of docs/design.md §1: every page completes, none fails, at
 * most 1 % duplicate page messages, no page fetched more than twice.
 */
import { type DrillOptions, drillNumbers, runDrill } from './drill.ts';
import { envInt } from './env.ts';
import type { Numbers, ScenarioContext, Target } from './scenario.ts';

export interface DrillScenario {
  description: string;
  targets: Target[];
  headline: [string, string][];
  run(ctx: ScenarioContext): Promise<Numbers>;
}

export function drillScenario(
  description: string,
  env: string,
  defaults: Omit<DrillOptions, 'timeoutS'>,
  disruptedLabel: string,
): DrillScenario {
  return {
    description,
    targets: [
      { metric: 'missing_pages', op: '<=', value: 0, label: 'pages missing' },
      { metric: 'failed', op: '<=', value: 0, label: 'pages failed' },
      { metric: 'duplicate_share', op: '<=', value: 0.01, label: 'duplicate messages' },
      { metric: 'max_fetches_per_page', op: '<=', value: 2, label: 'fetches of one page' },
    ],
    headline: [
      ['pages', 'pages'],
      ['failed', 'failed'],
      ['page_messages', 'page messages'],
      ['duplicate_share', 'duplicate share'],
      ['max_fetches_per_page', 'max fetches/page'],
      ['fetched_before_halt', 'fetched before halt'],
      ['halt_ms', 'halt after start (ms)'],
      ['disrupted_s', disruptedLabel],
      ['seconds', 'crawl (s)'],
    ],
    async run(ctx) {
      const o: DrillOptions = {
        disruption: defaults.disruption,
        pages: envInt(`BENCH_${env}_PAGES`, defaults.pages),
        hosts: envInt(`BENCH_${env}_HOSTS`, defaults.hosts),
        workers: envInt(`BENCH_${env}_WORKERS`, defaults.workers),
        after: envInt(`BENCH_${env}_AFTER`, defaults.after),
        forS: envInt(`BENCH_${env}_S`, defaults.forS),
        timeoutS: envInt(`BENCH_${env}_TIMEOUT_S`, 900),
      };
      for (const [k, v] of Object.entries(o)) ctx.input(k, v);
      return drillNumbers(await runDrill(ctx, o));
    },
  };
}
