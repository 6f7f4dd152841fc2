/**
 * `node bench/run.ts [scenario...]`: runs the named benchmark scenarios (all of them when none is named),
 * each `bench/scenarios/<name>.ts`, writes `bench/results/<name>.json` and regenerates `bench/RESULTS.md`.
 *
 * Exit codes: 0 every scenario ran (missed targets are reported, not failures), 1 a scenario failed,
 * 2 unknown scenario name.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gitInfo, machineInfo } from './lib/machine.ts';
import type { BenchRedis } from './lib/redis.ts';
import { openBenchRedis } from './lib/redis.ts';
import {
  BENCH_DIR,
  formatNumber,
  formatTarget,
  type ResultFile,
  regenerateResultsMd,
  writeResult,
} from './lib/results.ts';
import { onCrawlerNode } from './lib/runtime.ts';
import { checkTargets, type ScenarioContext, type ScenarioModule } from './lib/scenario.ts';

onCrawlerNode();

const SCENARIOS_DIR = join(BENCH_DIR, 'scenarios');

function available(): string[] {
  return readdirSync(SCENARIOS_DIR)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.slice(0, -3))
    .sort();
}

let redis: BenchRedis | undefined;
let redisOpening: Promise<BenchRedis> | undefined;

async function closeRedis(): Promise<void> {
  const r = redis ?? (await redisOpening?.catch(() => undefined));
  redis = undefined;
  redisOpening = undefined;
  await r?.close();
}

function printSummary(r: ResultFile): void {
  const rows: [string, string][] = [];
  for (const [metric, label] of r.headline) rows.push([label, formatNumber(r.numbers[metric])]);
  const width = Math.max(...rows.map(([l]) => l.length), 10);
  const out = [
    '',
    `== ${r.scenario}: ${r.description}`,
    `   ${r.date} commit ${r.git.commit}${r.git.dirty ? ' (dirty)' : ''}, ${r.duration_s} s, ${r.machine.cpus} cpu, ${r.machine.mem_gib} GiB, node ${r.machine.node}${r.machine.redis ? `, ${r.machine.redis} (${r.machine.redis_mode})` : ''}`,
    ...rows.map(([l, v]) => `   ${l.padEnd(width)}  ${v.padStart(12)}`),
  ];
  if (r.targets.length) {
    out.push(`   targets: ${r.targets.filter((t) => t.met).length}/${r.targets.length} met`);
    for (const t of r.targets) out.push(`     ${formatTarget(t)}`);
  }
  for (const n of r.notes) out.push(`   note: ${n}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

async function runOne(name: string): Promise<ResultFile> {
  const mod = (await import(pathToFileURL(join(SCENARIOS_DIR, `${name}.ts`)).href)) as ScenarioModule;
  const started = Date.now();
  const inputs: ResultFile['inputs'] = {};
  const notes: string[] = [];
  const machine: ResultFile['machine'] = machineInfo();
  const ctx: ScenarioContext = {
    name,
    progress: (message) => {
      process.stderr.write(`[${name} ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);
    },
    redis: async () => {
      if (redis) return redis;
      redisOpening ??= openBenchRedis(ctx.progress);
      redis = await redisOpening;
      return redis;
    },
    input: (key, value) => {
      inputs[key] = value;
    },
    note: (text) => {
      notes.push(text);
    },
  };
  const numbers = await mod.run(ctx);
  if (redis) {
    machine.redis = redis.version;
    machine.redis_mode = redis.mode;
    machine.redis_address = redis.address;
  }
  return {
    scenario: name,
    description: mod.description,
    date: new Date(started).toISOString(),
    duration_s: Math.round((Date.now() - started) / 100) / 10,
    git: gitInfo(),
    machine,
    inputs,
    notes,
    numbers,
    headline: mod.headline ?? Object.keys(numbers).map((k) => [k, k]),
    targets: checkTargets(mod.targets ?? [], numbers),
  };
}

async function main(argv: string[]): Promise<number> {
  const names = available();
  const wanted = argv.length ? argv : names;
  const unknown = wanted.filter((n) => !names.includes(n));
  if (unknown.length) {
    process.stderr.write(`unknown scenario ${unknown.join(', ')}; available: ${names.join(', ')}\n`);
    return 2;
  }
  let failed = 0;
  try {
    for (const name of wanted) {
      try {
        const result = await runOne(name);
        const file = writeResult(result);
        printSummary(result);
        process.stdout.write(`   wrote ${file}\n`);
      } catch (error) {
        failed++;
        process.stderr.write(`scenario ${name} failed: ${(error as Error).stack ?? error}\n`);
      }
    }
  } finally {
    await closeRedis();
  }
  process.stdout.write(`wrote ${regenerateResultsMd()}\n`);
  return failed ? 1 : 0;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`${signal}: stopping the benchmark Redis (scenario keys in a shared Redis may remain)\n`);
    void closeRedis().finally(() => process.exit(130));
  });
}

process.exitCode = await main(process.argv.slice(2));
