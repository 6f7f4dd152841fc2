/** The contract between bench/run.ts and a scenario module (`bench/scenarios/<name>.ts`). */
import type { BenchRedis } from './redis.ts';

export type Numbers = Record<string, number | string>;

/** A target a number should meet, e.g. `{ metric: 'bytes_per_url', op: '<=', value: 200 }`. */
export interface Target {
  metric: string;
  op: '<' | '<=' | '>' | '>=';
  value: number;
  /** Short label for tables, e.g. `bytes/URL`. */
  label: string;
}

/** Handed to a scenario's `run`. */
export interface ScenarioContext {
  name: string;
  /** Prints one line of progress (stderr, prefixed with the scenario and elapsed time). */
  progress(message: string): void;
  /** The benchmark Redis (bench/lib/redis.ts), opened on first use and closed by the runner. */
  redis(): Promise<BenchRedis>;
  /** Records an input of the run (sizes, settings), written to the results file under `inputs`. */
  input(name: string, value: number | string | boolean): void;
  /** Records a note for the results file (what the numbers include, caveats). */
  note(text: string): void;
}

/** What a scenario module exports. */
export interface ScenarioModule {
  description: string;
  /** Targets checked against the returned numbers. */
  targets?: Target[];
  /** The numbers shown in the RESULTS.md row and the stdout summary, in order (`[metric, label]`). */
  headline?: [string, string][];
  run(ctx: ScenarioContext): Promise<Numbers>;
}

/** A target checked against a run's numbers. */
export interface TargetResult extends Target {
  actual: number | null;
  met: boolean;
}

export function checkTargets(targets: readonly Target[], numbers: Numbers): TargetResult[] {
  return targets.map((t) => {
    const v = numbers[t.metric];
    const actual = typeof v === 'number' && Number.isFinite(v) ? v : null;
    let met = false;
    if (actual !== null) {
      if (t.op === '<') met = actual < t.value;
      else if (t.op === '<=') met = actual <= t.value;
      else if (t.op === '>') met = actual > t.value;
      else met = actual >= t.value;
    }
    return { ...t, actual, met };
  });
}
