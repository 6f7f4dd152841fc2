/**
 * Sizes: compression bombs at once under a real memory limit (issue 48 item 8). One crawler worker process in a
 * memory cgroup of its own (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes` where the memory controller is
 * v1) with BENCH_BOMBS (60) fetch slots crawls BENCH_BOMBS bomb pages of the hostile site at once (each 20 MiB of NULs
 * gzipped to ~20 KB, cut at MAX_BODY_BYTES) through the real local cluster; the cgroup's limit is BENCH_BOMBS_LIMIT_MIB
 * (512). It counts the kernel's OOM kills in the cgroup, its peak memory, and how every page says its body was cut.
 * Shares its run with the poison tier's CI size (test/poison/body-bombs.test.ts, test/helpers/bomb-run.ts). Needs root.
 */
import { quietLocalMetrics } from '../../lib/config/index.ts';
import { runBombs } from '../../test/helpers/bomb-run.ts';
import { envInt } from '../lib/env.ts';
import type { Numbers, ScenarioContext, Target } from '../lib/scenario.ts';

export const description = 'Compression bombs at once in a crawler worker under a cgroup memory limit';

export const targets: Target[] = [
  { metric: 'oom_kills', op: '<=', value: 0, label: 'OOM kills' },
  { metric: 'pages_missing', op: '<=', value: 0, label: 'pages without a message' },
];

export const headline: [string, string][] = [
  ['bombs', 'bombs at once'],
  ['limit_mib', 'limit MiB'],
  ['oom_kills', 'OOM kills'],
  ['peak_mib', 'peak MiB'],
  ['pages', 'pages'],
  ['cut_max_body_bytes', 'cut at MAX_BODY_BYTES'],
  ['cut_memory_budget', 'cut for the budget'],
  ['seconds', 'seconds'],
];

export async function run(ctx: ScenarioContext): Promise<Numbers> {
  quietLocalMetrics();
  const bombs = envInt('BENCH_BOMBS', 60);
  const limitMiB = envInt('BENCH_BOMBS_LIMIT_MIB', 512);
  ctx.input('bombs', bombs);
  ctx.input('limit_mib', limitMiB);
  const run = await runBombs({ bombs, limitBytes: limitMiB * 2 ** 20, timeoutMs: 600_000, progress: ctx.progress });
  ctx.note(
    `cgroup v${run.cgroupVersion}; worker ${run.workerAlive ? 'alive at the end' : `ended: ${run.workerExit}`}; the budget is a quarter of the limit at 2 per decoded byte`,
  );
  const cut = (why: string) => run.pages.filter((p) => p.body_cut === why).length;
  const kept = run.pages.map((p) => p.body_cut_bytes ?? 0);
  return {
    bombs,
    limit_mib: limitMiB,
    oom_kills: run.oomKills,
    peak_mib: run.peakBytes === undefined ? 'n/a' : Math.round(run.peakBytes / 2 ** 20),
    pages: run.pages.length,
    pages_missing: bombs - run.pages.length,
    pages_success: run.pages.filter((p) => p.success).length,
    cut_max_body_bytes: cut('max_body_bytes'),
    cut_memory_budget: cut('memory_budget'),
    kept_mib_min: Math.round((Math.min(...kept) / 2 ** 20) * 10) / 10,
    kept_mib_total: Math.round(kept.reduce((a, b) => a + b, 0) / 2 ** 20),
    seconds: Math.round(run.elapsedMs / 100) / 10,
  };
}
